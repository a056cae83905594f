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

// 0002_trail.sql: the foldable trail. Scopes (a session root, one per branch) form a tree per
// session; events are its leaves; payloads are content-addressed blobs stored once; trail_fts
// indexes scope descriptions and summaries (rowid = trail_scopes.rowid).
constexpr char k0002Trail[] = R"sql(
CREATE TABLE trail_blobs (
  hash    TEXT PRIMARY KEY,  -- lowercase hex SHA-256 of content
  size    INTEGER NOT NULL,
  content TEXT NOT NULL
);

CREATE TABLE trail_scopes (
  id             TEXT PRIMARY KEY,
  tenant         TEXT NOT NULL,
  project        TEXT NOT NULL,
  session_id     TEXT NOT NULL,
  kind           TEXT NOT NULL CHECK (kind IN ('session', 'branch')),
  parent_id      TEXT REFERENCES trail_scopes(id),  -- NULL: a session root
  root_id        TEXT NOT NULL,                     -- the session root (itself for a root)
  description    TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('open', 'folded')),
  summary        TEXT NOT NULL DEFAULT '',
  summary_tokens INTEGER NOT NULL DEFAULT 0,
  created_at_ms  INTEGER NOT NULL,
  folded_at_ms   INTEGER
);
CREATE INDEX trail_scopes_by_session ON trail_scopes (tenant, project, session_id);
CREATE INDEX trail_scopes_by_parent ON trail_scopes (parent_id);
CREATE INDEX trail_scopes_by_root ON trail_scopes (root_id);

CREATE TABLE trail_events (
  seq       INTEGER PRIMARY KEY,
  scope_id  TEXT NOT NULL REFERENCES trail_scopes(id),
  kind      TEXT NOT NULL CHECK (kind IN ('tool_call', 'tool_result', 'branch_created',
                                          'branch_returned', 'warning', 'force_return')),
  label     TEXT NOT NULL,
  blob_hash TEXT NOT NULL REFERENCES trail_blobs(hash),
  tokens    INTEGER NOT NULL,
  is_error  INTEGER NOT NULL DEFAULT 0,
  at_ms     INTEGER NOT NULL
);
CREATE INDEX trail_events_by_scope ON trail_events (scope_id, seq);

CREATE VIRTUAL TABLE trail_fts USING fts5(description, summary, tokenize = 'unicode61');
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kAll = {
      {1, "0001_init.sql", k0001Init},
      {2, "0002_trail.sql", k0002Trail},
  };
  return kAll;
}

}  // namespace contextd::store
