#include "store/sqlite/sqlite_memory_store.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "memory/memory_bank.h"

namespace contextd::store {
namespace {

using memory::HistoryEntry;
using memory::MemoryItem;
using memory::Visibility;

constexpr const char* kColumns = kMemoryItemColumns;
constexpr int64_t kMmapBytes = int64_t{1024} << 20;

// Items visible to (?1 tenant, ?2 project), one scope tier if ?4 is not NULL; retired items
// never. ?3 holds flags (VisibilityFlags): 1 = pending items too, 2 = org items of every tenant.
constexpr char kVisible[] =
    "((m.tenant = ?1 AND (m.scope <> 'project' OR m.project = ?2)) OR "
    "((?3 & 2) = 2 AND m.scope = 'org')) AND "
    "(m.status = 'active' OR ((?3 & 1) = 1 AND m.status = 'pending')) AND "
    "(?4 IS NULL OR m.scope = ?4)";

int64_t VisibilityFlags(const Visibility& v) {
  return (v.include_pending ? 1 : 0) | (v.org_across_tenants ? 2 : 0);
}

void BindVisibility(Statement& st, const Visibility& v) {
  st.Bind(1, v.tenant);
  st.Bind(2, v.project);
  st.Bind(3, VisibilityFlags(v));
  if (v.scope.has_value()) {
    st.Bind(4, std::string_view(memory::ScopeName(*v.scope)));
  } else {
    st.BindNull(4);
  }
}

// Binds the item's columns in kColumns order, from parameter 1.
void BindItem(Statement& st, const MemoryItem& m) {
  st.Bind(1, m.id);
  st.Bind(2, m.tenant);
  st.Bind(3, m.project);
  st.Bind(4, std::string_view(memory::ScopeName(m.scope)));
  st.Bind(5, std::string_view(memory::StatusName(m.status)));
  st.Bind(6, std::string_view(memory::OutcomeName(m.outcome)));
  st.Bind(7, m.title);
  st.Bind(8, m.description);
  st.Bind(9, m.content);
  st.Bind(10, absl::StrJoin(m.tags, "\n"));
  st.Bind(11, m.source.branch_id);
  st.Bind(12, m.source.description);
  st.Bind(13, m.source.prompt);
  st.Bind(14, m.origin);
  st.Bind(15, m.created_at_ms);
  st.Bind(16, m.updated_at_ms);
  st.Bind(17, m.use_count);
  st.Bind(18, m.helpful_count);
  st.Bind(19, m.unhelpful_count);
  st.Bind(20, m.success_count);
  st.Bind(21, m.failure_count);
  st.Bind(22, m.merged_into);
}

// Reads a row of kColumns.
absl::StatusOr<MemoryItem> ReadItem(const Statement& st) {
  return MemoryItemFromRow(SqliteRow(st));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteMemoryStore>> SqliteMemoryStore::Open(
    const std::string& path, const DatabaseOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, options));
  std::unique_ptr<SqliteMemoryStore> store(
      new SqliteMemoryStore(std::shared_ptr<Database>(std::move(db))));
  // Searches read ~1,000 index entries and rows at random: mapped, they cost no read() each
  // (bench/memory/README.md, issue 35). 1 GiB covers a 100k bank (420 MiB) twice over: with
  // 256 MiB the pages past it cost a pread each, a third of a search's time. The pages are the
  // kernel's page cache, shared, not the process's own memory. The connection is the store's own.
  {
    std::lock_guard<std::mutex> lock(store->db_->mutex());
    RETURN_IF_ERROR(store->db_->Exec(absl::StrCat("PRAGMA mmap_size = ", kMmapBytes)));
  }
  RETURN_IF_ERROR(store->PrepareAll());
  RETURN_IF_ERROR(store->RebuildStemsIfNeeded());
  return store;
}

absl::Status SqliteMemoryStore::PrepareAll() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(insert_, db_->Prepare(absl::StrCat(
                                "INSERT INTO memories (", kColumns,
                                ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")));
  ASSIGN_OR_RETURN(
      update_,
      db_->Prepare("UPDATE memories SET scope = ?4, status = ?5, outcome = ?6, title = ?7, "
                   "description = ?8, content = ?9, tags = ?10, updated_at_ms = ?16, "
                   "use_count = ?17, helpful_count = ?18, unhelpful_count = ?19, "
                   "success_count = ?20, failure_count = ?21, merged_into = ?22 WHERE id = ?1"));
  ASSIGN_OR_RETURN(note_use_,
                   db_->Prepare("UPDATE memories SET use_count = use_count + 1 WHERE id = ?"));
  ASSIGN_OR_RETURN(insert_history_,
                   db_->Prepare("INSERT INTO memory_history (memory_id, action, actor, detail, "
                                "at_ms) VALUES (?, ?, ?, ?, ?)"));
  ASSIGN_OR_RETURN(get_,
                   db_->Prepare(absl::StrCat("SELECT ", kColumns, " FROM memories WHERE id = ?")));
  ASSIGN_OR_RETURN(history_, db_->Prepare("SELECT seq, memory_id, action, actor, detail, at_ms "
                                          "FROM memory_history WHERE memory_id = ? ORDER BY seq"));
  ASSIGN_OR_RETURN(
      by_task_, db_->Prepare(absl::StrCat("SELECT ", kColumns, " FROM memories m WHERE ", kVisible,
                                          " AND m.source_description = ?5 AND "
                                          "(m.scope <> 'org' OR m.tenant = ?1) LIMIT 50")));
  ASSIGN_OR_RETURN(add_term_,
                   db_->Prepare("INSERT INTO memory_terms (term, content_df, task_df) VALUES "
                                "(?1, ?2, ?3) ON CONFLICT (term) DO UPDATE SET content_df = "
                                "content_df + ?2, task_df = task_df + ?3"));
  ASSIGN_OR_RETURN(add_project_term_,
                   db_->Prepare("INSERT INTO memory_project_terms (term, tenant, project, "
                                "content_df, task_df) VALUES (?1, ?4, ?5, ?2, ?3) ON CONFLICT "
                                "(term, tenant, project) DO UPDATE SET content_df = content_df + "
                                "?2, task_df = task_df + ?3"));
  ASSIGN_OR_RETURN(add_corpus_,
                   db_->Prepare("INSERT INTO memory_corpus (tenant, project, items, "
                                "content_length, task_length) VALUES (?1, ?2, ?3, ?4, ?5) ON "
                                "CONFLICT (tenant, project) DO UPDATE SET items = items + ?3, "
                                "content_length = content_length + ?4, task_length = "
                                "task_length + ?5"));
  ASSIGN_OR_RETURN(put_stems_,
                   db_->Prepare("INSERT INTO memory_stems (pos, title, body, tags, task, prompt) "
                                "SELECT pos, ?2, ?3, ?4, ?5, ?6 FROM memories WHERE id = ?1 "
                                "ON CONFLICT (pos) DO UPDATE SET title = excluded.title, body = "
                                "excluded.body, tags = excluded.tags, task = excluded.task, "
                                "prompt = excluded.prompt"));
  ASSIGN_OR_RETURN(get_term_,
                   db_->Prepare("SELECT content_df, task_df FROM memory_terms WHERE term = ?"));
  // One term's rows of every project: adjacent in the primary key, one descent for all.
  ASSIGN_OR_RETURN(get_project_term_,
                   db_->Prepare("SELECT tenant, project, content_df, task_df FROM "
                                "memory_project_terms WHERE term = ?1"));
  ASSIGN_OR_RETURN(get_corpus_, db_->Prepare("SELECT items, content_length, task_length FROM "
                                             "memory_corpus WHERE tenant = ?1 AND project = ?2"));
  ASSIGN_OR_RETURN(all_corpus_, db_->Prepare("SELECT SUM(items), SUM(content_length), "
                                             "SUM(task_length) FROM memory_corpus"));
  // Every visible item holding a kept term; the bank scores them (memory/ranking.h). CROSS JOIN
  // keeps the match first: left to itself the planner walks the tenant's rows by
  // memories_by_task and probes the index for each (0.5 s instead of 0.5 ms at 100k). The
  // visibility check reads the covering index memories_visible, not the rows (migration 21).
  ASSIGN_OR_RETURN(
      find_matches_,
      db_->Prepare(absl::StrCat(
          "SELECT m.id, m.tenant, m.project, m.scope, s.title, s.body, s.tags, s.task, s.prompt "
          "FROM memory_stem_fts f CROSS JOIN memories m INDEXED BY memories_visible ON m.pos = "
          "f.rowid CROSS JOIN "
          "memory_stems s ON s.pos = f.rowid WHERE memory_stem_fts MATCH ?5 AND ",
          kVisible, " LIMIT ?6")));
  ASSIGN_OR_RETURN(put_vector_,
                   db_->Prepare("INSERT INTO memory_vectors (memory_id, model, dim, vector) "
                                "VALUES (?, ?, ?, ?) ON CONFLICT (memory_id, model) DO UPDATE "
                                "SET dim = excluded.dim, vector = excluded.vector"));
  ASSIGN_OR_RETURN(all_vectors_,
                   db_->Prepare("SELECT v.memory_id, v.dim, v.vector FROM memory_vectors v JOIN "
                                "memories m ON m.id = v.memory_id WHERE v.model = ? AND "
                                "m.status <> 'retired' ORDER BY m.pos"));
  ASSIGN_OR_RETURN(count_, db_->Prepare("SELECT COUNT(*) FROM memories"));
  return absl::OkStatus();
}

absl::Status SqliteMemoryStore::RebuildStemsIfNeeded() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(Statement counts, db_->Prepare("SELECT (SELECT COUNT(*) FROM memories), "
                                                  "(SELECT COUNT(*) FROM memory_stems)"));
  ASSIGN_OR_RETURN(bool row, counts.Step());
  // Items are never deleted and their stems are written with them: equal counts, all stemmed.
  if (!row || counts.Int(0) == counts.Int(1)) return absl::OkStatus();
  counts.Reset();
  RETURN_IF_ERROR(db_->BeginWrite());
  absl::Status body = [&]() -> absl::Status {
    RETURN_IF_ERROR(
        db_->Exec("DELETE FROM memory_stems; INSERT INTO memory_stem_fts (memory_stem_fts) VALUES "
                  "('delete-all'); DELETE FROM memory_terms; DELETE FROM memory_project_terms; "
                  "DELETE FROM memory_corpus;"));
    ASSIGN_OR_RETURN(Statement all, db_->Prepare(absl::StrCat("SELECT ", kColumns,
                                                              " FROM memories ORDER BY pos")));
    for (;;) {
      ASSIGN_OR_RETURN(bool more, all.Step());
      if (!more) break;
      ASSIGN_OR_RETURN(MemoryItem item, ReadItem(all));
      const memory::ItemStems stems = memory::StemsOf(item);
      RETURN_IF_ERROR(PutStemsLocked(item, stems));
      RETURN_IF_ERROR(CountTermsLocked(item, stems, +1));
    }
    return absl::OkStatus();
  }();
  return db_->EndWrite(body);
}

absl::Status SqliteMemoryStore::AppendHistoryLocked(const HistoryEntry& e) {
  ResetOnExit reset(insert_history_);
  insert_history_.Bind(1, e.memory_id);
  insert_history_.Bind(2, e.action);
  insert_history_.Bind(3, e.actor);
  insert_history_.Bind(4, e.detail);
  insert_history_.Bind(5, e.at_ms);
  return insert_history_.Run();
}

absl::Status SqliteMemoryStore::CountTermsLocked(const MemoryItem& m,
                                                 const memory::ItemStems& stems, int sign) {
  const TermCounts counts = CountStems(stems);
  for (const auto& [term, df] : counts.df) {
    for (Statement* st : {&add_term_, &add_project_term_}) {
      ResetOnExit reset(*st);
      st->Bind(1, term);
      st->Bind(2, df.content * sign);
      st->Bind(3, df.task * sign);
      if (st == &add_project_term_) {
        st->Bind(4, m.tenant);
        st->Bind(5, m.project);
      }
      RETURN_IF_ERROR(st->Run());
    }
  }
  ResetOnExit reset(add_corpus_);
  add_corpus_.Bind(1, m.tenant);
  add_corpus_.Bind(2, m.project);
  add_corpus_.Bind(3, static_cast<int64_t>(sign));
  add_corpus_.Bind(4, counts.content_length * sign);
  add_corpus_.Bind(5, counts.task_length * sign);
  return add_corpus_.Run();
}

absl::Status SqliteMemoryStore::PutStemsLocked(const MemoryItem& m,
                                               const memory::ItemStems& stems) {
  ResetOnExit reset(put_stems_);
  put_stems_.Bind(1, m.id);
  put_stems_.Bind(2, stems.title);
  put_stems_.Bind(3, stems.body);
  put_stems_.Bind(4, stems.tags);
  put_stems_.Bind(5, stems.task);
  put_stems_.Bind(6, stems.prompt);
  return put_stems_.Run();
}

absl::Status SqliteMemoryStore::Insert(const MemoryItem& item, const HistoryEntry& entry) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  absl::Status body = [&]() -> absl::Status {
    ResetOnExit reset(insert_);
    BindItem(insert_, item);
    absl::Status st = insert_.Run();
    if (!st.ok()) {
      // The only UNIQUE column is the id.
      if (absl::StrContains(st.message(), "UNIQUE")) {
        return absl::AlreadyExistsError(absl::StrCat("memory ", item.id, " already exists"));
      }
      return st;
    }
    const memory::ItemStems stems = memory::StemsOf(item);
    RETURN_IF_ERROR(PutStemsLocked(item, stems));
    RETURN_IF_ERROR(CountTermsLocked(item, stems, +1));
    return AppendHistoryLocked(entry);
  }();
  return db_->EndWrite(body);
}

absl::Status SqliteMemoryStore::Update(const MemoryItem& item,
                                       const std::vector<HistoryEntry>& entries) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  absl::Status body = [&]() -> absl::Status {
    // Texts rarely change (feedback and retirement keep them): recount only when they do.
    std::optional<MemoryItem> old;
    {
      ResetOnExit reset(get_);
      get_.Bind(1, item.id);
      ASSIGN_OR_RETURN(bool row, get_.Step());
      if (row) {
        ASSIGN_OR_RETURN(MemoryItem stored, ReadItem(get_));
        old = std::move(stored);
      }
    }
    ResetOnExit reset(update_);
    BindItem(update_, item);
    RETURN_IF_ERROR(update_.Run());
    if (db_->Changes() == 0)
      return absl::NotFoundError(absl::StrCat("memory ", item.id, " not found"));
    if (old.has_value() && (old->title != item.title || old->description != item.description ||
                            old->content != item.content || old->tags != item.tags)) {
      RETURN_IF_ERROR(CountTermsLocked(*old, memory::StemsOf(*old), -1));
      MemoryItem recount = item;
      recount.source = old->source;  // Update keeps the source task
      const memory::ItemStems stems = memory::StemsOf(recount);
      RETURN_IF_ERROR(PutStemsLocked(recount, stems));
      RETURN_IF_ERROR(CountTermsLocked(recount, stems, +1));
      // The source task's stems were counted out and in again: net zero.
    }
    for (const HistoryEntry& e : entries) RETURN_IF_ERROR(AppendHistoryLocked(e));
    return absl::OkStatus();
  }();
  return db_->EndWrite(body);
}

absl::Status SqliteMemoryStore::NoteUses(const std::vector<std::string>& ids,
                                         const std::vector<HistoryEntry>& entries) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  absl::Status body = [&]() -> absl::Status {
    for (const std::string& id : ids) {
      ResetOnExit reset(note_use_);
      note_use_.Bind(1, id);
      RETURN_IF_ERROR(note_use_.Run());
    }
    for (const HistoryEntry& e : entries) RETURN_IF_ERROR(AppendHistoryLocked(e));
    return absl::OkStatus();
  }();
  return db_->EndWrite(body);
}

absl::StatusOr<std::optional<MemoryItem>> SqliteMemoryStore::Get(std::string_view id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(get_);
  get_.Bind(1, id);
  ASSIGN_OR_RETURN(bool row, get_.Step());
  if (!row) return std::optional<MemoryItem>();
  ASSIGN_OR_RETURN(MemoryItem item, ReadItem(get_));
  return std::optional<MemoryItem>(std::move(item));
}

absl::StatusOr<std::vector<MemoryItem>> SqliteMemoryStore::GetMany(
    const std::vector<std::string>& ids) {
  std::vector<MemoryItem> out;
  out.reserve(ids.size());
  std::lock_guard<std::mutex> lock(db_->mutex());
  for (const std::string& id : ids) {
    ResetOnExit reset(get_);
    get_.Bind(1, id);
    ASSIGN_OR_RETURN(bool row, get_.Step());
    if (!row) continue;
    ASSIGN_OR_RETURN(MemoryItem item, ReadItem(get_));
    out.push_back(std::move(item));
  }
  return out;
}

absl::StatusOr<std::vector<MemoryItem>> SqliteMemoryStore::List(const memory::ListFilter& f) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare(absl::StrCat("SELECT ", kColumns,
                                " FROM memories WHERE id > ?1 AND "
                                "(?2 IS NULL OR tenant = ?2) AND (?3 IS NULL OR project = ?3) AND "
                                "(?4 IS NULL OR status = ?4) ORDER BY id LIMIT ?5")));
  st.Bind(1, f.after_id);
  f.tenant ? st.Bind(2, *f.tenant) : st.BindNull(2);
  f.project ? st.Bind(3, *f.project) : st.BindNull(3);
  f.status ? st.Bind(4, std::string_view(memory::StatusName(*f.status))) : st.BindNull(4);
  st.Bind(5, static_cast<int64_t>(std::clamp(f.limit, 1, 10000)));
  std::vector<MemoryItem> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(MemoryItem item, ReadItem(st));
    out.push_back(std::move(item));
  }
  return out;
}

absl::StatusOr<std::vector<HistoryEntry>> SqliteMemoryStore::History(std::string_view id) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(history_);
  history_.Bind(1, id);
  std::vector<HistoryEntry> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, history_.Step());
    if (!row) break;
    out.push_back(HistoryEntry{history_.Int(0), history_.Text(1), history_.Text(2),
                               history_.Text(3), history_.Text(4), history_.Int(5)});
  }
  return out;
}

absl::StatusOr<std::vector<MemoryItem>> SqliteMemoryStore::FindBySourceTask(
    const Visibility& v, std::string_view description) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(by_task_);
  BindVisibility(by_task_, v);
  by_task_.Bind(5, description);
  std::vector<MemoryItem> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, by_task_.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(MemoryItem item, ReadItem(by_task_));
    out.push_back(std::move(item));
  }
  return out;
}

absl::Status SqliteMemoryStore::ProjectStatsLocked(const std::vector<std::string>& known,
                                                   memory::Matches& out) {
  for (const memory::Match& m : out.items) out.projects[{m.tenant, m.project}];
  for (auto& [key, stats] : out.projects) {
    ResetOnExit reset(get_corpus_);
    get_corpus_.Bind(1, key.first);
    get_corpus_.Bind(2, key.second);
    ASSIGN_OR_RETURN(bool row, get_corpus_.Step());
    if (row) stats = {get_corpus_.Int(0), get_corpus_.Int(1), get_corpus_.Int(2), {}};
  }
  for (const std::string& t : known) {
    ResetOnExit reset(get_project_term_);
    get_project_term_.Bind(1, t);
    for (;;) {
      ASSIGN_OR_RETURN(bool row, get_project_term_.Step());
      if (!row) break;
      auto it = out.projects.find({get_project_term_.Text(0), get_project_term_.Text(1)});
      if (it != out.projects.end()) {
        it->second.terms[t] = {get_project_term_.Int(2), get_project_term_.Int(3)};
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<memory::Matches> SqliteMemoryStore::FindMatches(
    const Visibility& v, const std::vector<std::string>& terms, int limit) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  // Up to 2 x 64 statistics lookups and the match: one snapshot, one read lock.
  ASSIGN_OR_RETURN(bool began, db_->BeginRead());
  absl::StatusOr<memory::Matches> out = FindMatchesLocked(v, terms, limit);
  db_->EndRead(began);
  return out;
}

absl::StatusOr<memory::Matches> SqliteMemoryStore::FindMatchesLocked(
    const Visibility& v, const std::vector<std::string>& terms, int limit) {
  memory::Matches out;
  std::vector<std::string> known;
  for (const std::string& t : terms) {
    ResetOnExit reset(get_term_);
    get_term_.Bind(1, t);
    ASSIGN_OR_RETURN(bool row, get_term_.Step());
    if (!row || get_term_.Int(0) + get_term_.Int(1) <= 0) continue;
    out.global.terms[t] = {get_term_.Int(0), get_term_.Int(1)};
    known.push_back(t);
  }
  out.kept = KeepRarest(out.global, known);
  if (out.kept.empty()) return out;
  {
    ResetOnExit reset(all_corpus_);
    ASSIGN_OR_RETURN(bool row, all_corpus_.Step());
    if (row) {
      out.global.items = all_corpus_.Int(0);
      out.global.content_length = all_corpus_.Int(1);
      out.global.task_length = all_corpus_.Int(2);
    }
  }
  std::vector<std::string> quoted;
  for (const std::string& t : out.kept) quoted.push_back(absl::StrCat("\"", t, "\""));
  ResetOnExit reset(find_matches_);
  BindVisibility(find_matches_, v);
  find_matches_.Bind(5, absl::StrJoin(quoted, " OR "));
  find_matches_.Bind(6, static_cast<int64_t>(limit));
  for (;;) {
    ASSIGN_OR_RETURN(bool row, find_matches_.Step());
    if (!row) break;
    memory::Match m;
    m.id = find_matches_.Text(0);
    m.tenant = find_matches_.Text(1);
    m.project = find_matches_.Text(2);
    auto scope = memory::ParseScope(find_matches_.Text(3));  // the schema's CHECK keeps it known
    m.scope = scope.ok() ? *scope : memory::Scope::kProject;
    m.stems = {find_matches_.Text(4), find_matches_.Text(5), find_matches_.Text(6),
               find_matches_.Text(7), find_matches_.Text(8)};
    out.items.push_back(std::move(m));
  }
  RETURN_IF_ERROR(ProjectStatsLocked(known, out));
  return out;
}

absl::Status SqliteMemoryStore::PutVector(std::string_view id, std::string_view model,
                                          const std::vector<float>& vector) {
  if (vector.empty()) return absl::InvalidArgumentError("empty vector");
  std::string blob(vector.size() * sizeof(float), '\0');
  std::memcpy(blob.data(), vector.data(), blob.size());
  std::lock_guard<std::mutex> lock(db_->mutex());
  RETURN_IF_ERROR(db_->BeginWrite());
  absl::Status body = [&]() -> absl::Status {
    ResetOnExit reset(put_vector_);
    put_vector_.Bind(1, id);
    put_vector_.Bind(2, model);
    put_vector_.Bind(3, static_cast<int64_t>(vector.size()));
    put_vector_.BindBlob(4, blob);
    return put_vector_.Run();
  }();
  return db_->EndWrite(body);
}

absl::StatusOr<std::vector<memory::MemoryStore::StoredVector>> SqliteMemoryStore::AllVectors(
    std::string_view model) {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(all_vectors_);
  all_vectors_.Bind(1, model);
  std::vector<StoredVector> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, all_vectors_.Step());
    if (!row) break;
    const int64_t dim = all_vectors_.Int(1);
    std::string blob = all_vectors_.Blob(2);
    if (dim <= 0 || blob.size() != static_cast<size_t>(dim) * sizeof(float)) {
      return absl::InternalError(absl::StrCat("memory vector of ", all_vectors_.Text(0), " (",
                                              std::string(model), "): ", blob.size(), " bytes for ",
                                              dim, " dimensions"));
    }
    StoredVector sv;
    sv.id = all_vectors_.Text(0);
    sv.vector.resize(static_cast<size_t>(dim));
    std::memcpy(sv.vector.data(), blob.data(), blob.size());
    out.push_back(std::move(sv));
  }
  return out;
}

absl::StatusOr<int64_t> SqliteMemoryStore::Count() {
  std::lock_guard<std::mutex> lock(db_->mutex());
  ResetOnExit reset(count_);
  ASSIGN_OR_RETURN(bool row, count_.Step());
  return row ? count_.Int(0) : 0;
}

}  // namespace contextd::store
