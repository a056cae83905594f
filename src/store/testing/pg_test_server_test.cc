#include "store/testing/pg_test_server.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace contextd::store::testing {
namespace {

// The harness itself: a server that answers on the socket and on TCP, fresh databases, and a
// directory that goes with the server.
TEST(PgTestServerTest, StartsAnswersAndCleansUp) {
  auto own = PgTestServer::Start();
  if (!own.ok()) {
    const char* req = std::getenv("CONTEXTD_REQUIRE_POSTGRES");
    ASSERT_FALSE(req != nullptr && std::string(req) == "1") << own.status();
    GTEST_SKIP() << "PostgreSQL tests skipped: " << own.status().message();
  }
  std::string dir = (*own)->dir();
  auto db = (*own)->CreateDatabase();
  ASSERT_TRUE(db.ok()) << db.status();
  for (const std::string& conninfo : {(*own)->Conninfo(*db), (*own)->Url(*db)}) {
    PGconn* conn = PQconnectdb(conninfo.c_str());
    ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
    PGresult* r = PQexec(conn, "SELECT current_database(), current_user");
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK);
    EXPECT_EQ(std::string(PQgetvalue(r, 0, 0)), *db);
    EXPECT_EQ(std::string(PQgetvalue(r, 0, 1)), "postgres");
    PQclear(r);
    PQfinish(conn);
  }
  own->reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace contextd::store::testing
