#include "store/sqlite/migrations.h"

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

// 0003_auto_scopes.sql: auto-scopes (issue 6, trail.auto_scope_upstreams). SQLite cannot alter
// a CHECK constraint, so trail_scopes (kind 'auto') and trail_events (kind 'auto_scope_opened')
// are rebuilt with their data, sequence numbers and rowids kept (trail_fts rows point at scope
// rowids). trail_scopes now names its rowid (pos INTEGER PRIMARY KEY) so that VACUUM cannot
// renumber it under trail_fts. The old trail_events goes before the old trail_scopes it
// references (this migration was written to run with foreign keys enforced; since 0006 they are
// checked before the migrations commit instead), and RENAME rewrites the new tables' REFERENCES
// clauses to the final names.
constexpr char k0003AutoScopes[] = R"sql(
CREATE TABLE trail_scopes_v3 (
  pos            INTEGER PRIMARY KEY,               -- the rowid: trail_fts.rowid
  id             TEXT NOT NULL UNIQUE,
  tenant         TEXT NOT NULL,
  project        TEXT NOT NULL,
  session_id     TEXT NOT NULL,
  kind           TEXT NOT NULL CHECK (kind IN ('session', 'branch', 'auto')),
  parent_id      TEXT REFERENCES trail_scopes_v3(id),  -- NULL: a session root
  root_id        TEXT NOT NULL,                        -- the session root (itself for a root)
  description    TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status IN ('open', 'folded')),
  summary        TEXT NOT NULL DEFAULT '',
  summary_tokens INTEGER NOT NULL DEFAULT 0,
  created_at_ms  INTEGER NOT NULL,
  folded_at_ms   INTEGER
);
INSERT INTO trail_scopes_v3 (pos, id, tenant, project, session_id, kind, parent_id, root_id,
                             description, status, summary, summary_tokens, created_at_ms,
                             folded_at_ms)
  SELECT rowid, id, tenant, project, session_id, kind, parent_id, root_id, description, status,
         summary, summary_tokens, created_at_ms, folded_at_ms
  FROM trail_scopes ORDER BY rowid;

CREATE TABLE trail_events_v3 (
  seq       INTEGER PRIMARY KEY,
  scope_id  TEXT NOT NULL REFERENCES trail_scopes_v3(id),
  kind      TEXT NOT NULL CHECK (kind IN ('tool_call', 'tool_result', 'branch_created',
                                          'branch_returned', 'warning', 'force_return',
                                          'auto_scope_opened')),
  label     TEXT NOT NULL,
  blob_hash TEXT NOT NULL REFERENCES trail_blobs(hash),
  tokens    INTEGER NOT NULL,
  is_error  INTEGER NOT NULL DEFAULT 0,
  at_ms     INTEGER NOT NULL
);
INSERT INTO trail_events_v3 (seq, scope_id, kind, label, blob_hash, tokens, is_error, at_ms)
  SELECT seq, scope_id, kind, label, blob_hash, tokens, is_error, at_ms FROM trail_events
  ORDER BY seq;

DROP TABLE trail_events;
DROP TABLE trail_scopes;
ALTER TABLE trail_scopes_v3 RENAME TO trail_scopes;
ALTER TABLE trail_events_v3 RENAME TO trail_events;

CREATE INDEX trail_scopes_by_session ON trail_scopes (tenant, project, session_id);
CREATE INDEX trail_scopes_by_parent ON trail_scopes (parent_id);
CREATE INDEX trail_scopes_by_root ON trail_scopes (root_id);
CREATE INDEX trail_scopes_open ON trail_scopes (kind) WHERE status = 'open';
CREATE INDEX trail_events_by_scope ON trail_events (scope_id, seq);
)sql";

// 0004_trail_write_path.sql: what a branch round trip writes, made cheaper.
// - trail_fts_pending: scopes whose trail_fts row is missing or stale. Indexing a scope in
//   trail_fts as part of each write cost more than the rest of a branch round trip together
//   (FTS5 writes a new segment per transaction and flushes at every savepoint); SqliteTrailStore
//   notes the scope here instead and indexes them in batches, and before every search, so
//   searches still see every write. Durable, so a crash loses no pending entry.
// - No query reads trail_scopes by session or by parent, but every new scope dirtied a page of
//   each of those two indexes at its session's place (a WAL frame per commit and session). The
//   one query by session, the session list, gets a partial index over session roots only.
constexpr char k0004TrailWritePath[] = R"sql(
CREATE TABLE trail_fts_pending (pos INTEGER PRIMARY KEY);  -- trail_scopes.pos
DROP INDEX trail_scopes_by_session;
DROP INDEX trail_scopes_by_parent;
CREATE INDEX trail_session_roots ON trail_scopes (pos) WHERE kind = 'session';
)sql";

// 0005_drop_branches_by_parent.sql: no query reads branches by parent (children are found in
// memory, and branches are never deleted or renumbered, so the foreign key never looks a child
// up), but every new branch dirtied a page of this index, a WAL frame per group commit.
constexpr char k0005DropBranchesByParent[] = R"sql(
DROP INDEX branches_by_parent;
)sql";

// 0006_check_constraints_without_in.sql: SQLite evaluates `x IN (a, b, c, ...)` (more than two
// values) by building a temporary b-tree of the values, and a CHECK constraint does so at every
// insert or update of its column: five times per durable branch pair (branches.status on insert
// and update, trail_scopes.kind, trail_events.kind twice), about 2 us each. The same constraints
// as OR chains, which compare in place. SQLite cannot alter a CHECK constraint, so the three
// tables are rebuilt with their rows, rowids and indexes (Database::Migrate runs migrations with
// foreign-key enforcement off and checks every foreign key before it commits).
constexpr char k0006CheckConstraintsWithoutIn[] = R"sql(
CREATE TABLE branches_v6 (
  id                    TEXT PRIMARY KEY,
  tenant                TEXT NOT NULL,
  project               TEXT NOT NULL,
  session_id            TEXT NOT NULL,
  parent_id             TEXT REFERENCES branches_v6(id),  -- NULL: child of the session root
  depth                 INTEGER NOT NULL CHECK (depth >= 1),
  description           TEXT NOT NULL,
  prompt                TEXT NOT NULL,
  status                TEXT NOT NULL CHECK (status = 'created' OR status = 'active' OR
                                             status = 'completed' OR status = 'timeout' OR
                                             status = 'budget_exhausted' OR status = 'failed'),
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
INSERT INTO branches_v6 (rowid, id, tenant, project, session_id, parent_id, depth, description,
                         prompt, status, budget_allocated, tokens_used, reserved_for_children,
                         deadline_ms, created_at_ms, finished_at_ms, summary, finish_reason,
                         memory_queued)
  SELECT rowid, id, tenant, project, session_id, parent_id, depth, description, prompt, status,
         budget_allocated, tokens_used, reserved_for_children, deadline_ms, created_at_ms,
         finished_at_ms, summary, finish_reason, memory_queued
  FROM branches ORDER BY rowid;

CREATE TABLE trail_scopes_v6 (
  pos            INTEGER PRIMARY KEY,               -- the rowid: trail_fts.rowid
  id             TEXT NOT NULL UNIQUE,
  tenant         TEXT NOT NULL,
  project        TEXT NOT NULL,
  session_id     TEXT NOT NULL,
  kind           TEXT NOT NULL CHECK (kind = 'session' OR kind = 'branch' OR kind = 'auto'),
  parent_id      TEXT REFERENCES trail_scopes_v6(id),  -- NULL: a session root
  root_id        TEXT NOT NULL,                        -- the session root (itself for a root)
  description    TEXT NOT NULL,
  status         TEXT NOT NULL CHECK (status = 'open' OR status = 'folded'),
  summary        TEXT NOT NULL DEFAULT '',
  summary_tokens INTEGER NOT NULL DEFAULT 0,
  created_at_ms  INTEGER NOT NULL,
  folded_at_ms   INTEGER
);
INSERT INTO trail_scopes_v6 (pos, id, tenant, project, session_id, kind, parent_id, root_id,
                             description, status, summary, summary_tokens, created_at_ms,
                             folded_at_ms)
  SELECT pos, id, tenant, project, session_id, kind, parent_id, root_id, description, status,
         summary, summary_tokens, created_at_ms, folded_at_ms
  FROM trail_scopes ORDER BY pos;

CREATE TABLE trail_events_v6 (
  seq       INTEGER PRIMARY KEY,
  scope_id  TEXT NOT NULL REFERENCES trail_scopes_v6(id),
  kind      TEXT NOT NULL CHECK (kind = 'tool_call' OR kind = 'tool_result' OR
                                 kind = 'branch_created' OR kind = 'branch_returned' OR
                                 kind = 'warning' OR kind = 'force_return' OR
                                 kind = 'auto_scope_opened'),
  label     TEXT NOT NULL,
  blob_hash TEXT NOT NULL REFERENCES trail_blobs(hash),
  tokens    INTEGER NOT NULL,
  is_error  INTEGER NOT NULL DEFAULT 0,
  at_ms     INTEGER NOT NULL
);
INSERT INTO trail_events_v6 (seq, scope_id, kind, label, blob_hash, tokens, is_error, at_ms)
  SELECT seq, scope_id, kind, label, blob_hash, tokens, is_error, at_ms FROM trail_events
  ORDER BY seq;

DROP TABLE trail_events;
DROP TABLE trail_scopes;
DROP TABLE branches;
ALTER TABLE branches_v6 RENAME TO branches;
ALTER TABLE trail_scopes_v6 RENAME TO trail_scopes;
ALTER TABLE trail_events_v6 RENAME TO trail_events;

CREATE INDEX branches_by_session ON branches (tenant, project, session_id);
CREATE INDEX branches_live ON branches (status) WHERE status IN ('created', 'active');
CREATE INDEX trail_scopes_by_root ON trail_scopes (root_id);
CREATE INDEX trail_scopes_open ON trail_scopes (kind) WHERE status = 'open';
CREATE INDEX trail_session_roots ON trail_scopes (pos) WHERE kind = 'session';
CREATE INDEX trail_events_by_scope ON trail_events (scope_id, seq);
)sql";

// 0007_search_index_file.sql: the trail's full-text index moves to a file of its own,
// `<database>-search`, written by a thread of its own (store/search_index.h, decision 0012):
// indexing a batch of scopes inside the engine's writes held its executor for 1.4 million
// instructions every few dozen round trips, about 12% of its work. The writes now append to
// trail_fts_log (a scope opened or folded; rowid order is the order to index in), which the
// index file follows by a watermark of its own. trail_search_identity names this database, so
// that an index file made for another one is rebuilt. The old index and its pending notes go:
// the new file is built from trail_scopes when first opened.
constexpr char k0007SearchIndexFile[] = R"sql(
CREATE TABLE trail_fts_log (seq INTEGER PRIMARY KEY, pos INTEGER NOT NULL);  -- trail_scopes.pos
DROP TABLE trail_fts_pending;
DROP TABLE trail_fts;
CREATE TABLE trail_search_identity (id TEXT NOT NULL);
INSERT INTO trail_search_identity (id) VALUES (lower(hex(randomblob(16))));
)sql";

// 0008_branch_depth_from_zero.sql: branch depths count from 0 (a child of the session root), as
// in the seed API, so that the stored depth is the one every reply shows. The CHECK constraint
// moves from depth >= 1 to depth >= 0, which SQLite can only do by rebuilding the table (as in
// 0006; foreign keys are checked before the migration commits).
constexpr char k0008BranchDepthFromZero[] = R"sql(
CREATE TABLE branches_v8 (
  id                    TEXT PRIMARY KEY,
  tenant                TEXT NOT NULL,
  project               TEXT NOT NULL,
  session_id            TEXT NOT NULL,
  parent_id             TEXT REFERENCES branches_v8(id),  -- NULL: child of the session root
  depth                 INTEGER NOT NULL CHECK (depth >= 0),  -- 0: child of the session root
  description           TEXT NOT NULL,
  prompt                TEXT NOT NULL,
  status                TEXT NOT NULL CHECK (status = 'created' OR status = 'active' OR
                                             status = 'completed' OR status = 'timeout' OR
                                             status = 'budget_exhausted' OR status = 'failed'),
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
INSERT INTO branches_v8 (rowid, id, tenant, project, session_id, parent_id, depth, description,
                         prompt, status, budget_allocated, tokens_used, reserved_for_children,
                         deadline_ms, created_at_ms, finished_at_ms, summary, finish_reason,
                         memory_queued)
  SELECT rowid, id, tenant, project, session_id, parent_id, depth - 1, description, prompt,
         status, budget_allocated, tokens_used, reserved_for_children, deadline_ms,
         created_at_ms, finished_at_ms, summary, finish_reason, memory_queued
  FROM branches ORDER BY rowid;
DROP TABLE branches;
ALTER TABLE branches_v8 RENAME TO branches;
CREATE INDEX branches_by_session ON branches (tenant, project, session_id);
CREATE INDEX branches_live ON branches (status) WHERE status IN ('created', 'active');
)sql";

// 0009_model_conversations.sql: the model gateway's durable state (model/conversation_store.h,
// written by SqliteConversationStore).
// - model_threads: one row per conversation thread; `frontier` is the hashes of the messages last
//   forwarded, each as a varint length and its bytes, in one BLOB (replaced whole by every save).
// - model_rewrites: the rewrite decisions, first value of a (kind, key) kept. `seq` names the
//   rowid, so that VACUUM cannot renumber it: Load returns them in the order first saved. `kind`
//   is model::RewriteKind; `key` and `value` are BLOBs, kept byte for byte.
// - model_usage: one row per forwarded request. One index serves both totals (per tenant, and
//   per tenant and branch, a prefix of it): a second index on (tenant) alone would cost a page
//   write per row and answer nothing this one cannot. branch_id is not a foreign key: usage is a
//   log, written whether or not the branch's row exists ('' = the session root).
// CHECK constraints compare without IN (...), as 0006 explains.
constexpr char k0009ModelConversations[] = R"sql(
CREATE TABLE model_threads (
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  frontier     BLOB NOT NULL,
  requests     INTEGER NOT NULL CHECK (requests >= 0),
  created_ms   INTEGER NOT NULL,
  last_ms      INTEGER NOT NULL,
  PRIMARY KEY (tenant, conversation, thread)
);

CREATE TABLE model_rewrites (
  seq          INTEGER PRIMARY KEY,
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  kind         INTEGER NOT NULL CHECK (kind >= 1 AND kind <= 3),
  key          BLOB NOT NULL,
  value        BLOB NOT NULL,
  UNIQUE (tenant, conversation, thread, kind, key)
);

CREATE TABLE model_usage (
  seq                         INTEGER PRIMARY KEY,
  tenant                      TEXT NOT NULL,
  conversation                TEXT NOT NULL,
  thread                      TEXT NOT NULL,
  request_id                  TEXT NOT NULL,
  at_ms                       INTEGER NOT NULL,
  api                         TEXT NOT NULL,
  model                       TEXT NOT NULL,
  branch_id                   TEXT NOT NULL,
  status                      INTEGER NOT NULL,
  input_tokens                INTEGER NOT NULL,
  cache_read_input_tokens     INTEGER NOT NULL,
  cache_creation_input_tokens INTEGER NOT NULL,
  output_tokens               INTEGER NOT NULL,
  tokens_before               INTEGER NOT NULL,
  tokens_after                INTEGER NOT NULL,
  duration_ms                 INTEGER NOT NULL
);
CREATE INDEX model_usage_by_branch ON model_usage (tenant, branch_id);
)sql";

// 0010_memory.sql: the ReasoningBank (memory/memory_store.h, written by SqliteMemoryStore).
// - memories: one row per item; `pos` names the rowid the two FTS5 indexes point at. Tags are
//   newline-separated. Nothing is deleted: retiring and merging change `status`.
// - memory_history: every change to an item, in order (append-only).
// - memory_fts / memory_task_fts: external-content FTS5 over the item's texts and over its source
//   task (description and prompt), kept in step by triggers that fire only when those columns
//   change (counters change on every use).
// - memory_terms: the document frequency of every word (memory::IndexTerms) in each index, kept by
//   the store in the same transaction as the item, so that a query can keep its rarest terms with
//   one b-tree lookup per term (fts5vocab counts a term's documents by reading its whole doclist).
// - memory_vectors: optional embeddings, per item and embedding model (float32, little-endian).
// CHECK constraints compare without IN (...), as 0006 explains.
constexpr char k0010Memory[] = R"sql(
CREATE TABLE memories (
  pos                INTEGER PRIMARY KEY,
  id                 TEXT NOT NULL UNIQUE,
  tenant             TEXT NOT NULL,
  project            TEXT NOT NULL,
  scope              TEXT NOT NULL CHECK (scope = 'project' OR scope = 'team' OR scope = 'org'),
  status             TEXT NOT NULL CHECK (status = 'pending' OR status = 'active' OR
                                          status = 'retired'),
  outcome            TEXT NOT NULL CHECK (outcome = 'success' OR outcome = 'failure'),
  title              TEXT NOT NULL,
  description        TEXT NOT NULL,
  content            TEXT NOT NULL,
  tags               TEXT NOT NULL,
  source_branch_id   TEXT NOT NULL,
  source_description TEXT NOT NULL,
  source_prompt      TEXT NOT NULL,
  origin             TEXT NOT NULL,
  created_at_ms      INTEGER NOT NULL,
  updated_at_ms      INTEGER NOT NULL,
  use_count          INTEGER NOT NULL DEFAULT 0,
  helpful_count      INTEGER NOT NULL DEFAULT 0,
  unhelpful_count    INTEGER NOT NULL DEFAULT 0,
  success_count      INTEGER NOT NULL DEFAULT 0,
  failure_count      INTEGER NOT NULL DEFAULT 0,
  merged_into        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX memories_by_task ON memories (tenant, source_description);

CREATE TABLE memory_history (
  seq       INTEGER PRIMARY KEY,
  memory_id TEXT NOT NULL,
  action    TEXT NOT NULL,
  actor     TEXT NOT NULL,
  detail    TEXT NOT NULL,
  at_ms     INTEGER NOT NULL
);
CREATE INDEX memory_history_by_memory ON memory_history (memory_id, seq);

CREATE VIRTUAL TABLE memory_fts USING fts5(title, description, content, tags,
  content = 'memories', content_rowid = 'pos', tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE memory_task_fts USING fts5(source_description, source_prompt,
  content = 'memories', content_rowid = 'pos', tokenize = 'unicode61 remove_diacritics 2');
CREATE TABLE memory_terms (
  term       TEXT PRIMARY KEY,
  content_df INTEGER NOT NULL DEFAULT 0,
  task_df    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memory_fts (rowid, title, description, content, tags)
    VALUES (new.pos, new.title, new.description, new.content, new.tags);
  INSERT INTO memory_task_fts (rowid, source_description, source_prompt)
    VALUES (new.pos, new.source_description, new.source_prompt);
END;
CREATE TRIGGER memories_au_text AFTER UPDATE OF title, description, content, tags ON memories
BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, title, description, content, tags)
    VALUES ('delete', old.pos, old.title, old.description, old.content, old.tags);
  INSERT INTO memory_fts (rowid, title, description, content, tags)
    VALUES (new.pos, new.title, new.description, new.content, new.tags);
END;
CREATE TRIGGER memories_au_task AFTER UPDATE OF source_description, source_prompt ON memories
BEGIN
  INSERT INTO memory_task_fts (memory_task_fts, rowid, source_description, source_prompt)
    VALUES ('delete', old.pos, old.source_description, old.source_prompt);
  INSERT INTO memory_task_fts (rowid, source_description, source_prompt)
    VALUES (new.pos, new.source_description, new.source_prompt);
END;

CREATE TABLE memory_vectors (
  memory_id TEXT NOT NULL,
  model     TEXT NOT NULL,
  dim       INTEGER NOT NULL CHECK (dim > 0),
  vector    BLOB NOT NULL,
  PRIMARY KEY (memory_id, model)
);
)sql";

// 0011: model_rewrites takes kind 4 (model::RewriteKind::kAutoFold, issue 20). SQLite cannot
// change a CHECK in place: the table is rebuilt with its rows, `seq` kept (Load's order).
constexpr char k0011AutoFoldRewrites[] = R"sql(
CREATE TABLE model_rewrites_0011 (
  seq          INTEGER PRIMARY KEY,
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  kind         INTEGER NOT NULL CHECK (kind >= 1 AND kind <= 4),
  key          BLOB NOT NULL,
  value        BLOB NOT NULL,
  UNIQUE (tenant, conversation, thread, kind, key)
);
INSERT INTO model_rewrites_0011 (seq, tenant, conversation, thread, kind, key, value)
  SELECT seq, tenant, conversation, thread, kind, key, value FROM model_rewrites ORDER BY seq;
DROP TABLE model_rewrites;
ALTER TABLE model_rewrites_0011 RENAME TO model_rewrites;
)sql";

// 0012: model_usage takes the request's project (issue 21: usage per tenant and project, decision
// 0022). Rows written before it were all in the default project. No new index: `contextd usage`
// is a rare command (a scan, or the tenant prefix of model_usage_by_branch with --tenant), and an
// index would cost a page write on every request (0009's reasoning).
constexpr char k0012UsageProject[] = R"sql(
ALTER TABLE model_usage ADD COLUMN project TEXT NOT NULL DEFAULT 'default';
)sql";

// 0013: the durable record of each MCP session (decision 0025): what initialize negotiated, the
// project once fixed, last seen and how it ended, so that instances sharing a store can continue
// a session another one initialized. ended_ms is NULL while the session is open.
constexpr char k0013McpSessions[] = R"sql(
CREATE TABLE mcp_sessions (
  id                  TEXT PRIMARY KEY,
  tenant              TEXT NOT NULL,
  project             TEXT NOT NULL DEFAULT '',
  project_label       TEXT NOT NULL DEFAULT '',
  project_header      TEXT NOT NULL DEFAULT '',
  protocol_version    TEXT NOT NULL,
  client_capabilities TEXT NOT NULL DEFAULT '{}',
  client_info         TEXT NOT NULL DEFAULT '{}',
  created_ms          INTEGER NOT NULL,
  last_seen_ms        INTEGER NOT NULL,
  ended_ms            INTEGER,
  end_reason          TEXT NOT NULL DEFAULT ''
);
)sql";

// 0014: the transactional outbox of events (decision 0027): a row per event, written in the
// branch write (or memory event) it reports and deleted once NATS has it. AUTOINCREMENT: a seq is
// never reused after the table emptied (the relay reads rows above its cursor). No index but the
// key: the relay reads by seq, and every extra index would be a page written per event.
constexpr char k0014EventOutbox[] = R"sql(
CREATE TABLE event_outbox (
  seq            INTEGER PRIMARY KEY AUTOINCREMENT,
  id             TEXT NOT NULL,
  type           TEXT NOT NULL,
  subject        TEXT NOT NULL,
  payload        TEXT NOT NULL,
  created_ms     INTEGER NOT NULL,
  owner          TEXT NOT NULL,
  lease_until_ms INTEGER NOT NULL
);
)sql";

// 0015: one trail root per session (decision 0028). session_root = 1 marks the root scope that
// TrailStore::OpenSessionRoot finds for its (tenant, project, session_id); the unique partial
// index makes opening it race-free (an insert-or-get). Stores written before held a root per
// session per process run: the oldest of them (lowest pos) becomes the session's root, the others
// stay as they are (0: listed, viewable and unfoldable by their ids, never written to again).
// Session scopes opened with OpenScope (a root per process, the stdio session) stay 0 as well.
constexpr char k0015OneTrailPerSession[] = R"sql(
ALTER TABLE trail_scopes ADD COLUMN session_root INTEGER NOT NULL DEFAULT 0;
UPDATE trail_scopes SET session_root = 1 WHERE pos IN (
  SELECT MIN(pos) FROM trail_scopes WHERE kind = 'session' GROUP BY tenant, project, session_id);
CREATE UNIQUE INDEX trail_root_by_session ON trail_scopes (tenant, project, session_id)
  WHERE session_root = 1;
)sql";

// 0016: retention (decision 0031, retention.* in docs/configuration.md).
// - model_usage_daily: model_usage rolled up per (tenant, project, UTC day) by the sweep, in the
//   transaction that deletes the detail rows, so that `contextd usage` keeps its history.
// - retention_blob_candidates: blobs whose events the sweep deleted, to be deleted once no event
//   references them (durable, so that a sweep interrupted between the two loses no candidate).
//   No index on trail_events.blob_hash: it would cost a page write on every append; the sweep
//   scans the events once per run instead.
constexpr char k0016Retention[] = R"sql(
CREATE TABLE model_usage_daily (
  tenant                      TEXT NOT NULL,
  project                     TEXT NOT NULL,
  day                         INTEGER NOT NULL,  -- days since 1970-01-01 (UTC)
  requests                    INTEGER NOT NULL,
  input_tokens                INTEGER NOT NULL,
  cache_read_input_tokens     INTEGER NOT NULL,
  cache_creation_input_tokens INTEGER NOT NULL,
  output_tokens               INTEGER NOT NULL,
  tokens_before               INTEGER NOT NULL,
  tokens_after                INTEGER NOT NULL,
  duration_ms                 INTEGER NOT NULL,
  last_at_ms                  INTEGER NOT NULL,
  PRIMARY KEY (tenant, project, day)
) WITHOUT ROWID;
CREATE TABLE retention_blob_candidates (hash TEXT PRIMARY KEY) WITHOUT ROWID;
)sql";

// 0017: what each request's fold step did (issue 31: `contextd status` and the viewer show folds
// per conversation). model_usage.folds_skipped is a JSON object of skip reason -> count, '' when
// none (the common case costs no bytes; reasons are an open set of names). The daily rollup
// keeps the folds made and the skips counted, without their reasons. No index for the
// per-conversation summary: it scans the tenant's detail rows (bounded by retention), as
// `contextd usage` does, rather than costing every request a second index entry.
constexpr char k0017UsageFolds[] = R"sql(
ALTER TABLE model_usage ADD COLUMN folds_new INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_usage ADD COLUMN folds_skipped TEXT NOT NULL DEFAULT '';
ALTER TABLE model_usage_daily ADD COLUMN folds_new INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_usage_daily ADD COLUMN folds_skipped INTEGER NOT NULL DEFAULT 0;
)sql";

// 0018: the isolated branch view (issue 33): model_rewrites takes kind 5 (model::RewriteKind::
// kView; rebuilt as 0011 was, `seq` kept) and model_usage keeps each request's view and the
// tokens it spared (detail rows only: the daily rollup does not carry them).
constexpr char k0018BranchViews[] = R"sql(
CREATE TABLE model_rewrites_0018 (
  seq          INTEGER PRIMARY KEY,
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  kind         INTEGER NOT NULL CHECK (kind >= 1 AND kind <= 5),
  key          BLOB NOT NULL,
  value        BLOB NOT NULL,
  UNIQUE (tenant, conversation, thread, kind, key)
);
INSERT INTO model_rewrites_0018 (seq, tenant, conversation, thread, kind, key, value)
  SELECT seq, tenant, conversation, thread, kind, key, value FROM model_rewrites ORDER BY seq;
DROP TABLE model_rewrites;
ALTER TABLE model_rewrites_0018 RENAME TO model_rewrites;
ALTER TABLE model_usage ADD COLUMN branch_view TEXT NOT NULL DEFAULT '';
ALTER TABLE model_usage ADD COLUMN view_tokens_spared INTEGER NOT NULL DEFAULT 0;
)sql";

// 0019: auto-fold under thinking (issue 34, decision 0036): model_rewrites takes kind 6
// (model::RewriteKind::kDropThinking; rebuilt as 0011 was, `seq` kept).
constexpr char k0019DropThinking[] = R"sql(
CREATE TABLE model_rewrites_0019 (
  seq          INTEGER PRIMARY KEY,
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  kind         INTEGER NOT NULL CHECK (kind >= 1 AND kind <= 6),
  key          BLOB NOT NULL,
  value        BLOB NOT NULL,
  UNIQUE (tenant, conversation, thread, kind, key)
);
INSERT INTO model_rewrites_0019 (seq, tenant, conversation, thread, kind, key, value)
  SELECT seq, tenant, conversation, thread, kind, key, value FROM model_rewrites ORDER BY seq;
DROP TABLE model_rewrites;
ALTER TABLE model_rewrites_0019 RENAME TO model_rewrites;
)sql";

// 0020: lessons at the start of a task (issue 35, decision 0038): model_rewrites takes kind 7
// (model::RewriteKind::kLessons; rebuilt as 0011 was, `seq` kept).
constexpr char k0020Lessons[] = R"sql(
CREATE TABLE model_rewrites_0020 (
  seq          INTEGER PRIMARY KEY,
  tenant       TEXT NOT NULL,
  conversation TEXT NOT NULL,
  thread       TEXT NOT NULL,
  kind         INTEGER NOT NULL CHECK (kind >= 1 AND kind <= 7),
  key          BLOB NOT NULL,
  value        BLOB NOT NULL,
  UNIQUE (tenant, conversation, thread, kind, key)
);
INSERT INTO model_rewrites_0020 (seq, tenant, conversation, thread, kind, key, value)
  SELECT seq, tenant, conversation, thread, kind, key, value FROM model_rewrites ORDER BY seq;
DROP TABLE model_rewrites;
ALTER TABLE model_rewrites_0020 RENAME TO model_rewrites;
)sql";

// 0021: memory search over stems (issue 35, decision 0037). The bank ranks by BM25 over English
// Snowball stems (memory/terms.h) against the statistics of each item's own project:
// - memory_stems: the stemmed texts of each item (memory::StemsOf: title, description and
//   content, tags, source task, prompt), written by the store in C++ in the item's transaction;
//   memory_stem_fts indexes them (external content, tokenizer `ascii`: stems are lowercase words
//   joined by spaces; detail=none: the bank scores from the stems, FTS5 only finds the matches).
// - memory_terms now counts stems; memory_project_terms the same per (tenant, project), and
//   memory_corpus each project's item count and summed lengths (in stems).
// - memories_visible: what a search checks of each match (visibility, id), ~100 bytes a row,
//   so the check does not read the 2-4 KB rows of memories.
// The old word indexes go. Existing rows are stemmed by SqliteMemoryStore::Open, which rebuilds
// stems and counts whenever memories and memory_stems differ in row count (idempotent; after this
// migration, or a transfer, which copies items but not these derived tables).
constexpr char k0021MemoryStems[] = R"sql(
DROP TRIGGER memories_ai;
DROP TRIGGER memories_au_text;
DROP TRIGGER memories_au_task;
DROP TABLE memory_fts;
DROP TABLE memory_task_fts;
DELETE FROM memory_terms;
CREATE TABLE memory_stems (
  pos    INTEGER PRIMARY KEY,
  title  TEXT NOT NULL,
  body   TEXT NOT NULL,
  tags   TEXT NOT NULL,
  task   TEXT NOT NULL,
  prompt TEXT NOT NULL
);
CREATE VIRTUAL TABLE memory_stem_fts USING fts5(title, body, tags, task, prompt,
  content = 'memory_stems', content_rowid = 'pos', tokenize = 'ascii', detail = none);
CREATE TRIGGER memory_stems_ai AFTER INSERT ON memory_stems BEGIN
  INSERT INTO memory_stem_fts (rowid, title, body, tags, task, prompt)
    VALUES (new.pos, new.title, new.body, new.tags, new.task, new.prompt);
END;
CREATE TRIGGER memory_stems_au AFTER UPDATE ON memory_stems BEGIN
  INSERT INTO memory_stem_fts (memory_stem_fts, rowid, title, body, tags, task, prompt)
    VALUES ('delete', old.pos, old.title, old.body, old.tags, old.task, old.prompt);
  INSERT INTO memory_stem_fts (rowid, title, body, tags, task, prompt)
    VALUES (new.pos, new.title, new.body, new.tags, new.task, new.prompt);
END;
CREATE TABLE memory_project_terms (
  term       TEXT NOT NULL,
  tenant     TEXT NOT NULL,
  project    TEXT NOT NULL,
  content_df INTEGER NOT NULL DEFAULT 0,
  task_df    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (term, tenant, project)
) WITHOUT ROWID;
CREATE TABLE memory_corpus (
  tenant         TEXT NOT NULL,
  project        TEXT NOT NULL,
  items          INTEGER NOT NULL DEFAULT 0,
  content_length INTEGER NOT NULL DEFAULT 0,
  task_length    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant, project)
) WITHOUT ROWID;
CREATE INDEX memories_visible ON memories (pos, tenant, project, scope, status, id);
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kAll = {
      {1, "0001_init.sql", k0001Init},
      {2, "0002_trail.sql", k0002Trail},
      {3, "0003_auto_scopes.sql", k0003AutoScopes},
      {4, "0004_trail_write_path.sql", k0004TrailWritePath},
      {5, "0005_drop_branches_by_parent.sql", k0005DropBranchesByParent},
      {6, "0006_check_constraints_without_in.sql", k0006CheckConstraintsWithoutIn},
      {7, "0007_search_index_file.sql", k0007SearchIndexFile},
      {8, "0008_branch_depth_from_zero.sql", k0008BranchDepthFromZero},
      {9, "0009_model_conversations.sql", k0009ModelConversations},
      {10, "0010_memory.sql", k0010Memory},
      {11, "0011_auto_fold_rewrites.sql", k0011AutoFoldRewrites},
      {12, "0012_usage_project.sql", k0012UsageProject},
      {13, "0013_mcp_sessions.sql", k0013McpSessions},
      {14, "0014_event_outbox.sql", k0014EventOutbox},
      {15, "0015_one_trail_per_session.sql", k0015OneTrailPerSession},
      {16, "0016_retention.sql", k0016Retention},
      {17, "0017_usage_folds.sql", k0017UsageFolds},
      {18, "0018_branch_views.sql", k0018BranchViews},
      {19, "0019_drop_thinking.sql", k0019DropThinking},
      {20, "0020_lessons.sql", k0020Lessons},
      {21, "0021_memory_stems.sql", k0021MemoryStems},
  };
  return kAll;
}

}  // namespace contextd::store
