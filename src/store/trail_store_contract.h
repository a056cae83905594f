// Test-only: the TrailStore contract (trail_store_contract.cc): helpers, and the fixture a
// backend's test binary instantiates: INSTANTIATE_TEST_SUITE_P(X, TrailStoreContractTest, ...).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "store/testing/store_backend.h"
#include "trail/trail.h"
#include "trail/trail_store.h"

namespace contextd::store::testing {

using trail::EventKind;
using trail::NewEvent;
using trail::Scope;
using trail::ScopeKind;
using trail::ScopeStatus;
using trail::SessionRef;

inline SessionRef Session(const std::string& id, const std::string& tenant = "local") {
  SessionRef s;
  s.tenant = tenant;
  s.session_id = id;
  return s;
}

inline Scope MakeScope(const std::string& id, const std::string& parent, const std::string& desc,
                       const SessionRef& session) {
  Scope s;
  s.id = id;
  s.parent_id = parent;
  s.kind = parent.empty() ? ScopeKind::kSession : ScopeKind::kBranch;
  s.description = desc;
  s.session = session;
  s.created_at_ms = 1000;
  return s;
}

inline int64_t Words(std::string_view text) {
  int64_t n = 0;
  bool in = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\n';
    if (!space && !in) ++n;
    in = !space;
  }
  return n;
}

inline trail::TrailOptions AutoOn() {
  trail::TrailOptions o;
  o.auto_scope_upstreams = true;
  o.count_tokens = Words;
  return o;
}

class TrailStoreContractTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    std::string skip = backend_->SkipReason();
    if (!skip.empty()) GTEST_SKIP() << skip;
    auto s = backend_->OpenTrailStore();
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<trail::TrailStore> store_;
  base::FakeClock clock_;
};

}  // namespace contextd::store::testing
