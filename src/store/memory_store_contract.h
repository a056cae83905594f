// Test-only: the fixture of the MemoryStore contract (memory_store_contract.cc): a MemoryBank
// over a backend's real store. Each backend's test binary instantiates it:
// INSTANTIATE_TEST_SUITE_P(X, MemoryBankTest, ...).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "base/clock.h"
#include "memory/memory_bank.h"
#include "memory/memory_store.h"
#include "store/testing/store_backend.h"

namespace contextd::store::testing {

class MemoryBankTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    std::string skip = backend_->SkipReason();
    if (!skip.empty()) GTEST_SKIP() << skip;
    auto store = backend_->OpenMemoryStore();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    MakeBank({});
  }

  void MakeBank(memory::BankOptions options) {
    memory::MemoryBank::Parts parts;
    parts.store = store_.get();
    parts.clock = &clock_;
    // A stand-in for the server's scrubber: one recognisable secret shape.
    parts.sanitize = [](std::string_view text) {
      return absl::StrReplaceAll(absl::string_view(text.data(), text.size()),
                                 {{"sk-SECRET", "[REDACTED:key]"}});
    };
    parts.count_tokens = [](std::string_view text) {
      return static_cast<int64_t>(text.size() / 4 + 1);
    };
    parts.events = [this](const memory::MemoryEvent& e) { events_.push_back(e.type); };
    bank_ = std::make_unique<memory::MemoryBank>(std::move(parts), options);
  }

  memory::MemoryItem Record(const memory::Caller& caller, const std::string& title,
                            const std::string& content,
                            memory::Scope scope = memory::Scope::kProject,
                            memory::Outcome outcome = memory::Outcome::kSuccess,
                            const std::string& task = "") {
    memory::RecordRequest r;
    r.title = title;
    r.description = "When " + title + ".";
    r.content = content;
    r.scope = scope;
    r.outcome = outcome;
    r.source.description = task;
    auto item = bank_->Record(caller, r);
    EXPECT_TRUE(item.ok()) << item.status();
    return item.ok() ? *item : memory::MemoryItem{};
  }

  std::unique_ptr<StoreBackend> backend_;
  base::FakeClock clock_;
  std::unique_ptr<memory::MemoryStore> store_;
  std::unique_ptr<memory::MemoryBank> bank_;
  std::vector<std::string> events_;
  memory::Caller alice_{"acme", "web", "ses_1"};
};

}  // namespace contextd::store::testing
