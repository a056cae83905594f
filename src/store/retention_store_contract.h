// Test-only: the fixture of the RetentionStore contract tests (retention_store_contract.cc): a
// backend's stores loaded at fake-clock times, then swept. A backend's test binary instantiates
// them: INSTANTIATE_TEST_SUITE_P(Sqlite, RetentionStoreContractTest, ...).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "base/clock.h"
#include "store/retention.h"
#include "store/testing/store_backend.h"

namespace contextd::store::testing {

class RetentionStoreContractTest : public ::testing::TestWithParam<BackendFactory> {
 protected:
  void SetUp() override;

  std::unique_ptr<StoreBackend> backend_;
  std::unique_ptr<trail::TrailStore> trail_;
  std::unique_ptr<model::ConversationStore> conversations_;
  std::unique_ptr<RetentionStore> retention_;
  base::FakeClock clock_;
};

}  // namespace contextd::store::testing
