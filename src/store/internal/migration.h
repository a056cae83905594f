// A numbered schema migration embedded in the binary, as both backends keep them
// (sqlite/migrations.h, postgres/pg_migrations.h): applied in order, recorded with their version.
// Never edit a released one: add the next number. Immutable data.
#pragma once

namespace contextd::store {

struct Migration {
  int version;       // 1, 2, ... without gaps
  const char* name;  // "0001_init.sql"
  const char* sql;   // the statements
};

}  // namespace contextd::store
