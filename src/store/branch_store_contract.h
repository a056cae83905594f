// Test-only: the fixture of the BranchStore contract tests (branch_store_contract.cc). A backend's
// test binary instantiates them: INSTANTIATE_TEST_SUITE_P(Sqlite, BranchStoreContractTest, ...).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "folding/branch_store.h"
#include "store/testing/store_backend.h"

namespace contextd::store::testing {

class BranchStoreContractTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override;
  folding::Branch MustGet(const std::string& id);

  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<folding::BranchStore> store_;
  folding::SessionKey s1_{"local", "default", "s1"};
  folding::SessionKey s2_{"local", "default", "s2"};
};

}  // namespace contextd::store::testing
