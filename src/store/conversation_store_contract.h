// Test-only: the ConversationStore contract (conversation_store_contract.cc): helpers, the
// implementations it runs against (a test parameter) and its fixture. Each backend's test binary
// instantiates it: INSTANTIATE_TEST_SUITE_P(X, ConversationStoreContractTest, ...).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/conversation_store.h"
#include "store/test_util.h"

namespace contextd::store {

using model::ConversationKey;
using model::ConversationState;
using model::ConversationStore;
using model::ConversationUpdate;
using model::Rewrite;
using model::RewriteKind;
using model::UsageRecord;

// A 16-byte hash with bytes a SQLite TEXT column would mangle or cut: NUL, high bytes.
inline std::string Hash(int n) {
  std::string h(16, '\0');
  for (int i = 0; i < 16; ++i) h[i] = static_cast<char>((n * 31 + i * 97) & 0xff);
  h[3] = '\0';
  h[9] = static_cast<char>(0xff);
  return h;
}

inline ConversationUpdate Update(std::vector<std::string> frontier, std::vector<Rewrite> rewrites,
                                 int64_t at_ms) {
  ConversationUpdate u;
  u.frontier = std::move(frontier);
  u.new_rewrites = std::move(rewrites);
  u.at_ms = at_ms;
  return u;
}

inline UsageRecord Usage(std::string tenant, std::string branch, int64_t at_ms, int64_t base) {
  UsageRecord r;
  r.key = ConversationKey{std::move(tenant), "sess", "th"};
  r.request_id = absl::StrCat("mreq_", base);
  r.at_ms = at_ms;
  r.api = "anthropic";
  r.model = "claude-x";
  r.branch_id = std::move(branch);
  r.status = 200;
  r.input_tokens = base;
  r.cache_read_input_tokens = base + 1;
  r.cache_creation_input_tokens = base + 2;
  r.output_tokens = base + 3;
  r.tokens_before = base + 4;
  r.tokens_after = base + 5;
  r.duration_ms = base + 6;
  return r;
}

// The contract of model::ConversationStore, run against the SQLite store and the in-memory fake
// alike, so that the fake the model room tests with keeps the real store's semantics.
struct Impl {
  std::string name;
  std::function<std::unique_ptr<ConversationStore>(const TempDir&)> make;
};

class ConversationStoreContractTest : public ::testing::TestWithParam<Impl> {
 protected:
  void SetUp() override {
    store_ = GetParam().make(tmp_);
    ASSERT_NE(store_, nullptr);
  }
  ConversationState MustLoad(const ConversationKey& key) {
    auto s = store_->Load(key);
    EXPECT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s.ok() && s->has_value()) << key.thread;
    return s.ok() && s->has_value() ? **s : ConversationState{};
  }
  void MustSave(const ConversationKey& key, const ConversationUpdate& u) {
    absl::Status st = store_->Save(key, u);
    ASSERT_TRUE(st.ok()) << st;
  }

  TempDir tmp_;
  std::unique_ptr<ConversationStore> store_;
  ConversationKey k1_{"local", "sess-1", "aaaa"};
};

}  // namespace contextd::store
