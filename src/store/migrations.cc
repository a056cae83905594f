#include "store/migrations.h"

namespace contextd::store {
namespace {

// 0001_init.sql: branches of the folding engine and what was charged to them.
constexpr char k0001Init[] = R"sql(
CREATE TABLE branches (
  id                    TEXT PRIMARY KEY,
  tenant                TEXT NOT NULL,
  project               TEXT NOT NULL,
  session_id            TEXT NOT NULL,
  parent_id             TEXT REFERENCES branches(id),  -- NULL: child of the session root
  depth                 INTEGER NOT NULL CHECK (depth >= 1),
  description           TEXT NOT NULL,
  prompt                TEXT NOT NULL,
  status                TEXT NOT NULL CHECK (status IN
                          ('created', 'active', 'completed', 'timeout', 'budget_exhausted',
                           'failed')),
  budget_allocated      INTEGER NOT NULL CHECK (budget_allocated >= 0),
  tokens_used           INTEGER NOT NULL DEFAULT 0,
  reserved_for_children INTEGER NOT NULL DEFAULT 0,
  deadline_ms           INTEGER NOT NULL,
  created_at_ms         INTEGER NOT NULL,
  finished_at_ms        INTEGER,
  summary               TEXT NOT NULL DEFAULT '',
  finish_reason         TEXT NOT NULL DEFAULT '',
  memory_queued         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX branches_by_session ON branches (tenant, project, session_id);
CREATE INDEX branches_live ON branches (status) WHERE status IN ('created', 'active');
CREATE INDEX branches_by_parent ON branches (parent_id);

CREATE TABLE branch_injections (
  branch_id TEXT NOT NULL REFERENCES branches(id),
  ord       INTEGER NOT NULL,
  kind      TEXT NOT NULL,
  ref       TEXT NOT NULL,
  text      TEXT NOT NULL,
  tokens    INTEGER NOT NULL,
  PRIMARY KEY (branch_id, ord)
);

CREATE TABLE branch_charges (
  seq       INTEGER PRIMARY KEY,
  branch_id TEXT NOT NULL REFERENCES branches(id),
  at_ms     INTEGER NOT NULL,
  kind      TEXT NOT NULL,
  label     TEXT NOT NULL,
  excerpt   TEXT NOT NULL,
  tokens    INTEGER NOT NULL
);
CREATE INDEX branch_charges_by_branch ON branch_charges (branch_id, seq);
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kAll = {
      {1, "0001_init.sql", k0001Init},
  };
  return kAll;
}

}  // namespace contextd::store
