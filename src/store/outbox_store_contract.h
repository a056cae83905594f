// Test-only: the fixture of the OutboxStore contract tests (outbox_store_contract.cc). A backend's
// test binary instantiates them: INSTANTIATE_TEST_SUITE_P(Sqlite, OutboxStoreContractTest, ...).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "folding/branch_store.h"
#include "folding/outbox_store.h"
#include "store/testing/store_backend.h"

namespace contextd::store::testing {

class OutboxStoreContractTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override;
  std::vector<folding::OutboxRow> List(folding::OutboxStore& store, int64_t after = 0,
                                       int limit = 100);

  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<folding::BranchStore> branches_;  // writes rows as outbox_'s owner
  std::unique_ptr<folding::OutboxStore> outbox_;
};

}  // namespace contextd::store::testing
