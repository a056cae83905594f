// The BranchManager test fixture and request builders shared by branch_manager_test.cc (the
// operations) and branch_endings_test.cc (force-returns, deadlines, recovery): a manual executor
// on a fake clock, the in-memory store, word counter and SECRET123 scrubber of fakes.h.
// Test-only; not thread-safe (the executor runs on the test's thread).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/executor.h"
#include "folding/branch_manager.h"
#include "folding/events.h"
#include "folding/testing/fakes.h"

namespace contextd::folding::testing {

inline std::string Words(int n, std::string_view word = "w") {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += word;
  }
  return s;
}

inline CreateRequest Req(std::string prompt = "do the thing",
                         std::optional<int64_t> budget = std::nullopt,
                         std::optional<std::string> parent = std::nullopt) {
  CreateRequest r;
  r.description = "explore";
  r.prompt = std::move(prompt);
  r.budget = budget;
  r.parent_branch_id = std::move(parent);
  return r;
}

inline ChargeRecord Rec(int tokens_as_words, std::string label = "fs__read_file",
                        std::string kind = "tool_result") {
  ChargeRecord r;
  r.kind = std::move(kind);
  r.label = std::move(label);
  r.text = Words(tokens_as_words);
  return r;
}

class BranchManagerTest : public ::testing::Test {
 protected:
  BranchManagerTest() : exec_(clock_) {
    bus_.Subscribe([this](const BranchEvent& e) { events_.push_back(e); });
  }

  void MakeManager(FoldingConfig config = {}) {
    mgr_.reset();
    mgr_ = std::make_unique<BranchManager>(config, exec_, store_, counter_, scrubber_, &bus_);
  }
  void SetUp() override { MakeManager(); }

  // Runs `f` on the manual executor (as the engine would) and returns its result.
  template <typename F>
  auto Run(F f) -> decltype(f()) {
    std::optional<decltype(f())> out;
    exec_.Post([&] { out.emplace(f()); });
    exec_.RunUntilIdle();
    return std::move(*out);
  }
  absl::StatusOr<CreateResult> Create(const CreateRequest& r, const SessionKey* s = nullptr) {
    return Run([&] { return mgr_->Create(s ? *s : s1_, r); });
  }
  absl::StatusOr<ReturnResult> Return(std::optional<std::string> id, std::string msg,
                                      const SessionKey* s = nullptr) {
    ReturnRequest r;
    r.branch_id = std::move(id);
    r.message = std::move(msg);
    return Run([&] { return mgr_->Return(s ? *s : s1_, r); });
  }
  absl::StatusOr<ChargeOutcome> Charge(std::string id, const ChargeRecord& rec,
                                       const SessionKey* s = nullptr) {
    return Run([&] { return mgr_->Charge(s ? *s : s1_, id, rec); });
  }
  Branch Stored(const std::string& id) {
    auto b = store_.Get(id);
    EXPECT_TRUE(b.ok() && b->has_value()) << id;
    return b.ok() && b->has_value() ? **b : Branch{};
  }
  std::vector<BranchEventType> EventTypes() {
    std::vector<BranchEventType> out;
    for (auto& e : events_) {
      if (e.type != BranchEventType::kCharged) out.push_back(e.type);
    }
    return out;
  }

  base::FakeClock clock_;
  base::ManualExecutor exec_;
  InMemoryBranchStore store_;
  WordTokenCounter counter_;
  FakeScrubber scrubber_;
  EventBus bus_;
  std::vector<BranchEvent> events_;
  std::unique_ptr<BranchManager> mgr_;
  SessionKey s1_{"local", "default", "s1"};
  SessionKey s2_{"local", "default", "s2"};
};

}  // namespace contextd::folding::testing
