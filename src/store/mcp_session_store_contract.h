// Test-only: the fixture of the McpSessionStore contract tests (mcp_session_store_contract.cc). A
// backend's test binary instantiates them: INSTANTIATE_TEST_SUITE_P(Sqlite,
// McpSessionStoreContractTest, ...).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "store/mcp_session_store.h"
#include "store/testing/store_backend.h"

namespace contextd::store::testing {

class McpSessionStoreContractTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override;

  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<McpSessionStore> store_;
};

}  // namespace contextd::store::testing
