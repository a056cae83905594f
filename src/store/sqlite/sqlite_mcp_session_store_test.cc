// The McpSessionStore contract on SQLite.
#include "store/mcp_session_store_contract.h"
#include "store/testing/sqlite_backend.h"

namespace contextd::store::testing {

INSTANTIATE_TEST_SUITE_P(Sqlite, McpSessionStoreContractTest, ::testing::Values(SqliteFactory()),
                         BackendName);

}  // namespace contextd::store::testing
