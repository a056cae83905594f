#include "store/postgres/pg_migrations.h"

namespace contextd::store {
namespace {

// 0001_init.sql: the schema of SQLite migrations 1 to 11 as one PostgreSQL schema (the SQLite
// history is not replayed: decision 0023). Differences from SQLite, on purpose:
// - `pos`/`seq` are identity columns: creation order and the trail's global event order.
// - trail_blobs.content and the model gateway's frontier/keys/values are bytea (bytes kept as
//   they are; PostgreSQL text refuses NUL).
// - trail_scopes.search is a generated tsvector over description and summary, punctuation first
//   turned into spaces so that words split as FTS5's unicode61 splits them ("src/lex.c" is src,
//   lex, c; PostgreSQL's parser alone would keep it as one file token), 'simple' dictionary
//   (lowercase, no stemming), with a GIN index: the index is part of the write's transaction,
//   so there is no separate index file or log.
// - branches.deadline_owner/deadline_lease_ms: the deadline claim (BranchStore::ClaimDeadline) of
//   instances sharing the database; branches_due serves the sweep for overdue live branches.
constexpr char k0001Init[] = R"sql(
CREATE TABLE branches (
  pos                   BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  id                    TEXT PRIMARY KEY,
  tenant                TEXT NOT NULL,
  project               TEXT NOT NULL,
  session_id            TEXT NOT NULL,
  parent_id             TEXT REFERENCES branches(id),
  depth                 INTEGER NOT NULL CHECK (depth >= 0),
  description           TEXT NOT NULL,
  prompt                TEXT NOT NULL,
  status                TEXT NOT NULL CHECK (status IN ('created', 'active', 'completed',
                                                        'timeout', 'budget_exhausted', 'failed')),
  budget_allocated      BIGINT NOT NULL CHECK (budget_allocated >= 0),
  tokens_used           BIGINT NOT NULL DEFAULT 0,
  reserved_for_children BIGINT NOT NULL DEFAULT 0,
  deadline_ms           BIGINT NOT NULL,
  deadline_owner        TEXT NOT NULL DEFAULT '',
  deadline_lease_ms     BIGINT NOT NULL DEFAULT 0,
  created_at_ms         BIGINT NOT NULL,
  finished_at_ms        BIGINT,
  summary               TEXT NOT NULL DEFAULT '',
  finish_reason         TEXT NOT NULL DEFAULT '',
  memory_queued         BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX branches_by_session ON branches (tenant, project, session_id, pos);
CREATE INDEX branches_live ON branches (pos) WHERE status IN ('created', 'active');
CREATE INDEX branches_due ON branches (deadline_ms) WHERE status IN ('created', 'active');

CREATE TABLE branch_injections (
  branch_id TEXT NOT NULL REFERENCES branches(id),
  ord       INTEGER NOT NULL,
  kind      TEXT NOT NULL,
  ref       TEXT NOT NULL,
  text      TEXT NOT NULL,
  tokens    BIGINT NOT NULL,
  PRIMARY KEY (branch_id, ord)
);

CREATE TABLE branch_charges (
  seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  branch_id TEXT NOT NULL REFERENCES branches(id),
  at_ms     BIGINT NOT NULL,
  kind      TEXT NOT NULL,
  label     TEXT NOT NULL,
  excerpt   TEXT NOT NULL,
  tokens    BIGINT NOT NULL
);
CREATE INDEX branch_charges_by_branch ON branch_charges (branch_id, seq);

CREATE TABLE trail_blobs (
  hash    TEXT PRIMARY KEY,  -- lowercase hex SHA-256 of content
  size    BIGINT NOT NULL,
  content BYTEA NOT NULL
);

CREATE TABLE trail_scopes (
  pos            BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  id             TEXT PRIMARY KEY,
  tenant         TEXT NOT NULL,
  project        TEXT NOT NULL,
  session_id     TEXT NOT NULL,
  kind           TEXT NOT NULL CHECK (kind IN ('session', 'branch', 'auto')),
  parent_id      TEXT REFERENCES trail_scopes(id),
  root_id        TEXT NOT NULL,
  description    TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('open', 'folded')),
  summary        TEXT NOT NULL DEFAULT '',
  summary_tokens BIGINT NOT NULL DEFAULT 0,
  created_at_ms  BIGINT NOT NULL,
  folded_at_ms   BIGINT,
  search         TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', regexp_replace(
                   description || ' ' || summary, '[[:punct:][:space:]]+', ' ', 'g'))) STORED
);
CREATE INDEX trail_scopes_by_root ON trail_scopes (root_id, pos);
CREATE INDEX trail_scopes_open ON trail_scopes (kind, pos) WHERE status = 'open';
CREATE INDEX trail_session_roots ON trail_scopes (tenant, pos) WHERE kind = 'session';
CREATE INDEX trail_scopes_search ON trail_scopes USING GIN (search);

CREATE TABLE trail_events (
  seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  scope_id  TEXT NOT NULL REFERENCES trail_scopes(id),
  kind      TEXT NOT NULL CHECK (kind IN ('tool_call', 'tool_result', 'branch_created',
                                          'branch_returned', 'warning', 'force_return',
                                          'auto_scope_opened')),
  label     TEXT NOT NULL,
  blob_hash TEXT NOT NULL REFERENCES trail_blobs(hash),
  tokens    BIGINT NOT NULL,
  is_error  BOOLEAN NOT NULL DEFAULT false,
  at_ms     BIGINT NOT NULL
);
CREATE INDEX trail_events_by_scope ON trail_events (scope_id, seq);
CREATE INDEX trail_events_by_blob ON trail_events (blob_hash, kind);

CREATE TABLE model_threads (
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  frontier     BYTEA NOT NULL,
  requests     BIGINT NOT NULL CHECK (requests >= 0),
  created_ms   BIGINT NOT NULL,
  last_ms      BIGINT NOT NULL,
  PRIMARY KEY (tenant, conversation, thread)
);

CREATE TABLE model_rewrites (
  seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  kind         INTEGER NOT NULL CHECK (kind >= 1 AND kind <= 4),
  key          BYTEA NOT NULL,
  value        BYTEA NOT NULL,
  UNIQUE (tenant, conversation, thread, kind, key)
);

CREATE TABLE model_usage (
  seq                         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant                      TEXT NOT NULL,
  conversation                TEXT NOT NULL,
  thread                      TEXT NOT NULL,
  request_id                  TEXT NOT NULL,
  at_ms                       BIGINT NOT NULL,
  api                         TEXT NOT NULL,
  model                       TEXT NOT NULL,
  branch_id                   TEXT NOT NULL,
  status                      INTEGER NOT NULL,
  input_tokens                BIGINT NOT NULL,
  cache_read_input_tokens     BIGINT NOT NULL,
  cache_creation_input_tokens BIGINT NOT NULL,
  output_tokens               BIGINT NOT NULL,
  tokens_before               BIGINT NOT NULL,
  tokens_after                BIGINT NOT NULL,
  duration_ms                 BIGINT NOT NULL,
  project                     TEXT NOT NULL DEFAULT 'default'
);
CREATE INDEX model_usage_by_branch ON model_usage (tenant, branch_id);

CREATE TABLE memories (
  pos                BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  id                 TEXT PRIMARY KEY,
  tenant             TEXT NOT NULL,
  project            TEXT NOT NULL,
  scope              TEXT NOT NULL CHECK (scope IN ('project', 'team', 'org')),
  status             TEXT NOT NULL CHECK (status IN ('pending', 'active', 'retired')),
  outcome            TEXT NOT NULL CHECK (outcome IN ('success', 'failure')),
  title              TEXT NOT NULL,
  description        TEXT NOT NULL,
  content            TEXT NOT NULL,
  tags               TEXT NOT NULL,
  source_branch_id   TEXT NOT NULL,
  source_description TEXT NOT NULL,
  source_prompt      TEXT NOT NULL,
  origin             TEXT NOT NULL,
  created_at_ms      BIGINT NOT NULL,
  updated_at_ms      BIGINT NOT NULL,
  use_count          BIGINT NOT NULL DEFAULT 0,
  helpful_count      BIGINT NOT NULL DEFAULT 0,
  unhelpful_count    BIGINT NOT NULL DEFAULT 0,
  success_count      BIGINT NOT NULL DEFAULT 0,
  failure_count      BIGINT NOT NULL DEFAULT 0,
  merged_into        TEXT NOT NULL DEFAULT '',
  -- Weights as FTS5's bm25 columns: title A, description and content B, tags C; task: the
  -- source description A, its prompt B. Punctuation splits words as memory::IndexTerms does.
  content_search     TSVECTOR GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', regexp_replace(title, '[[:punct:][:space:]]+', ' ', 'g')),
              'A') ||
    setweight(to_tsvector('simple', regexp_replace(description || ' ' || content,
                                                   '[[:punct:][:space:]]+', ' ', 'g')), 'B') ||
    setweight(to_tsvector('simple', regexp_replace(tags, '[[:punct:][:space:]]+', ' ', 'g')), 'C')
  ) STORED,
  task_search        TSVECTOR GENERATED ALWAYS AS (
    setweight(to_tsvector('simple', regexp_replace(source_description, '[[:punct:][:space:]]+',
                                                   ' ', 'g')), 'A') ||
    setweight(to_tsvector('simple', regexp_replace(source_prompt, '[[:punct:][:space:]]+', ' ',
                                                   'g')), 'B')
  ) STORED
);
CREATE INDEX memories_by_task ON memories (tenant, source_description);
CREATE INDEX memories_content_search ON memories USING GIN (content_search);
CREATE INDEX memories_task_search ON memories USING GIN (task_search);

CREATE TABLE memory_history (
  seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  memory_id TEXT NOT NULL,
  action    TEXT NOT NULL,
  actor     TEXT NOT NULL,
  detail    TEXT NOT NULL,
  at_ms     BIGINT NOT NULL
);
CREATE INDEX memory_history_by_memory ON memory_history (memory_id, seq);

CREATE TABLE memory_terms (
  term       TEXT PRIMARY KEY,
  content_df BIGINT NOT NULL DEFAULT 0,
  task_df    BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE memory_vectors (
  memory_id TEXT NOT NULL,
  model     TEXT NOT NULL,
  dim       INTEGER NOT NULL CHECK (dim > 0),
  vector    BYTEA NOT NULL,
  PRIMARY KEY (memory_id, model)
);
)sql";

// 0002: sessions shared between instances (decision 0025).
// - mcp_sessions: the durable record of each MCP session (SQLite's migration 13); ended_ms is NULL
//   while open. Every read and write is by id (the primary key): no other index.
// - branches.version: bumped by every update of the row; an update names the version it read
//   (BranchUpdate::expected_version), so two instances holding one session cannot overwrite
//   each other's budget accounting, and a session's count + sum of versions tells an instance
//   cheaply whether its cached branches are stale (BranchStore::SessionStamp).
constexpr char k0002SharedSessions[] = R"sql(
CREATE TABLE mcp_sessions (
  id                  TEXT PRIMARY KEY,
  tenant              TEXT NOT NULL,
  project             TEXT NOT NULL DEFAULT '',
  project_label       TEXT NOT NULL DEFAULT '',
  project_header      TEXT NOT NULL DEFAULT '',
  protocol_version    TEXT NOT NULL,
  client_capabilities TEXT NOT NULL DEFAULT '{}',
  client_info         TEXT NOT NULL DEFAULT '{}',
  created_ms          BIGINT NOT NULL,
  last_seen_ms        BIGINT NOT NULL,
  ended_ms            BIGINT,
  end_reason          TEXT NOT NULL DEFAULT ''
);
ALTER TABLE branches ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
)sql";

// 3: the transactional outbox of events (decision 0027; SQLite's 0014). `owner` is the instance
// that publishes a row; another takes it over once `lease_until_ms` passed (the owner renews it
// while alive).
constexpr char k0003EventOutbox[] = R"sql(
CREATE TABLE event_outbox (
  seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id             TEXT NOT NULL,
  type           TEXT NOT NULL,
  subject        TEXT NOT NULL,
  payload        TEXT NOT NULL,
  created_ms     BIGINT NOT NULL,
  owner          TEXT NOT NULL,
  lease_until_ms BIGINT NOT NULL
);
CREATE INDEX event_outbox_by_owner ON event_outbox (owner, seq);
CREATE INDEX event_outbox_by_lease ON event_outbox (lease_until_ms);
)sql";

// 4: one trail root per session across instances (decision 0028; SQLite's 0015). session_root
// marks the root TrailStore::OpenSessionRoot finds for its (tenant, project, session_id); the
// unique partial index makes two instances opening it at once agree (INSERT ... ON CONFLICT DO
// NOTHING, then read). Of the roots a session already has (one per instance that served it), the
// oldest (lowest pos) becomes the session's; the others stay, listed and readable, unwritten.
constexpr char k0004OneTrailPerSession[] = R"sql(
ALTER TABLE trail_scopes ADD COLUMN session_root BOOLEAN NOT NULL DEFAULT false;
UPDATE trail_scopes SET session_root = true WHERE pos IN (
  SELECT MIN(pos) FROM trail_scopes WHERE kind = 'session' GROUP BY tenant, project, session_id);
CREATE UNIQUE INDEX trail_root_by_session ON trail_scopes (tenant, project, session_id)
  WHERE session_root;
)sql";

// 5: retention (decision 0031; SQLite's 0016).
// model_usage_daily as in SQLite. trail_scopes_by_parent: deleting a scope checks its
// self-reference (parent_id), which without an index is a scan of trail_scopes per row.
constexpr char k0005Retention[] = R"sql(
CREATE TABLE model_usage_daily (
  tenant                      TEXT NOT NULL,
  project                     TEXT NOT NULL,
  day                         BIGINT NOT NULL,
  requests                    BIGINT NOT NULL,
  input_tokens                BIGINT NOT NULL,
  cache_read_input_tokens     BIGINT NOT NULL,
  cache_creation_input_tokens BIGINT NOT NULL,
  output_tokens               BIGINT NOT NULL,
  tokens_before               BIGINT NOT NULL,
  tokens_after                BIGINT NOT NULL,
  duration_ms                 BIGINT NOT NULL,
  last_at_ms                  BIGINT NOT NULL,
  PRIMARY KEY (tenant, project, day)
);
CREATE INDEX trail_scopes_by_parent ON trail_scopes (parent_id);
)sql";

// 6: the folds of each request (SQLite's 17): folds_skipped a JSON object of reason -> count as
// text, '' when none; the daily rollup keeps folds made and skips counted.
constexpr char k0006UsageFolds[] = R"sql(
ALTER TABLE model_usage ADD COLUMN folds_new BIGINT NOT NULL DEFAULT 0;
ALTER TABLE model_usage ADD COLUMN folds_skipped TEXT NOT NULL DEFAULT '';
ALTER TABLE model_usage_daily ADD COLUMN folds_new BIGINT NOT NULL DEFAULT 0;
ALTER TABLE model_usage_daily ADD COLUMN folds_skipped BIGINT NOT NULL DEFAULT 0;
)sql";

// 7: the isolated branch view (issue 33; SQLite's 18): model_rewrites takes kind 5
// (model::RewriteKind::kView), model_usage keeps each request's view and the tokens it spared.
constexpr char k0007BranchViews[] = R"sql(
ALTER TABLE model_rewrites DROP CONSTRAINT model_rewrites_kind_check;
ALTER TABLE model_rewrites ADD CONSTRAINT model_rewrites_kind_check
  CHECK (kind >= 1 AND kind <= 5);
ALTER TABLE model_usage ADD COLUMN branch_view TEXT NOT NULL DEFAULT '';
ALTER TABLE model_usage ADD COLUMN view_tokens_spared BIGINT NOT NULL DEFAULT 0;
)sql";

// 8: auto-fold under thinking (issue 34; SQLite's 19): model_rewrites takes kind 6
// (model::RewriteKind::kDropThinking).
constexpr char k0008DropThinking[] = R"sql(
ALTER TABLE model_rewrites DROP CONSTRAINT model_rewrites_kind_check;
ALTER TABLE model_rewrites ADD CONSTRAINT model_rewrites_kind_check
  CHECK (kind >= 1 AND kind <= 6);
)sql";

// 9: lessons at the start of a task (issue 35; SQLite's 20): model_rewrites takes kind 7
// (model::RewriteKind::kLessons).
constexpr char k0009Lessons[] = R"sql(
ALTER TABLE model_rewrites DROP CONSTRAINT model_rewrites_kind_check;
ALTER TABLE model_rewrites ADD CONSTRAINT model_rewrites_kind_check
  CHECK (kind >= 1 AND kind <= 7);
)sql";

// 10: memory search over stems (issue 35, decision 0037; SQLite's 21). memory_stems holds each
// item's stemmed texts (memory::StemsOf, written by the store in the item's transaction) and a
// GIN-indexed tsvector over them ('simple': the stems are already lowercase words); memory_terms
// now counts stems, memory_project_terms per (tenant, project), memory_corpus each project's item
// count and lengths. The word tsvectors go. Existing rows are stemmed by PgMemoryStore::Create,
// which rebuilds stems and counts whenever memories and memory_stems differ in row count
// (idempotent, under a table lock so that two instances starting at once do it once).
constexpr char k0010MemoryStems[] = R"sql(
ALTER TABLE memories DROP COLUMN content_search;
ALTER TABLE memories DROP COLUMN task_search;
DELETE FROM memory_terms;
CREATE TABLE memory_stems (
  pos    BIGINT PRIMARY KEY,
  title  TEXT NOT NULL,
  body   TEXT NOT NULL,
  tags   TEXT NOT NULL,
  task   TEXT NOT NULL,
  prompt TEXT NOT NULL,
  search TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple',
    title || ' ' || body || ' ' || tags || ' ' || task || ' ' || prompt)) STORED
);
CREATE INDEX memory_stems_search ON memory_stems USING GIN (search);
CREATE TABLE memory_project_terms (
  term       TEXT NOT NULL,
  tenant     TEXT NOT NULL,
  project    TEXT NOT NULL,
  content_df BIGINT NOT NULL DEFAULT 0,
  task_df    BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (term, tenant, project)
);
CREATE TABLE memory_corpus (
  tenant         TEXT NOT NULL,
  project        TEXT NOT NULL,
  items          BIGINT NOT NULL DEFAULT 0,
  content_length BIGINT NOT NULL DEFAULT 0,
  task_length    BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant, project)
);
)sql";

}  // namespace

const std::vector<Migration>& PgMigrations() {
  static const std::vector<Migration> kAll = {
      {1, "0001_init.sql", k0001Init},
      {2, "0002_shared_sessions.sql", k0002SharedSessions},
      {3, "0003_event_outbox.sql", k0003EventOutbox},
      {4, "0004_one_trail_per_session.sql", k0004OneTrailPerSession},
      {5, "0005_retention.sql", k0005Retention},
      {6, "0006_usage_folds.sql", k0006UsageFolds},
      {7, "0007_branch_views.sql", k0007BranchViews},
      {8, "0008_drop_thinking.sql", k0008DropThinking},
      {9, "0009_lessons.sql", k0009Lessons},
      {10, "0010_memory_stems.sql", k0010MemoryStems},
  };
  return kAll;
}

}  // namespace contextd::store
