// SqliteBranchStore runs the BranchStore contract (branch_store_contract.cc), and with
// SqliteOutboxStore the OutboxStore contract (outbox_store_contract.cc); what is only
// SQLite's (durability against kill -9, group commit) is in folding_durability_test.cc.
#include "store/branch_store_contract.h"
#include "store/outbox_store_contract.h"
#include "store/testing/sqlite_backend.h"

namespace contextd::store::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, BranchStoreContractTest, ::testing::Values(SqliteFactory()),
                         BackendName);
INSTANTIATE_TEST_SUITE_P(Sqlite, OutboxStoreContractTest, ::testing::Values(SqliteFactory()),
                         BackendName);

}  // namespace
}  // namespace contextd::store::testing
