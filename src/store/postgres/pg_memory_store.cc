#include "store/postgres/pg_memory_store.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "memory/memory_bank.h"
#include "store/internal/memory_search.h"

namespace contextd::store {
namespace {

using memory::HistoryEntry;
using memory::MemoryItem;
using memory::Ranked;
using memory::Visibility;

constexpr const char* kColumns = kMemoryItemColumns;

// Items visible to ($1 tenant, $2 project), one scope tier if $4 is not NULL; retired items
// never. $3 holds flags, as in the SQLite store: 1 = pending items too, 2 = org items of every
// tenant.
constexpr char kVisible[] =
    "((m.tenant = $1 AND (m.scope <> 'project' OR m.project = $2)) OR "
    "(($3::integer & 2) = 2 AND m.scope = 'org')) AND "
    "(m.status = 'active' OR (($3::integer & 1) = 1 AND m.status = 'pending')) AND "
    "($4::text IS NULL OR m.scope = $4::text)";

std::vector<PgParam> VisibilityParams(const Visibility& v) {
  const int flags = (v.include_pending ? 1 : 0) | (v.org_across_tenants ? 2 : 0);
  return {v.tenant, v.project, flags,
          v.scope.has_value() ? PgParam(memory::ScopeName(*v.scope)) : PgParam::Null()};
}

std::vector<PgParam> ItemParams(const MemoryItem& m) {
  return {m.id,
          m.tenant,
          m.project,
          memory::ScopeName(m.scope),
          memory::StatusName(m.status),
          memory::OutcomeName(m.outcome),
          m.title,
          m.description,
          m.content,
          absl::StrJoin(m.tags, "\n"),
          m.source.branch_id,
          m.source.description,
          m.source.prompt,
          m.origin,
          m.created_at_ms,
          m.updated_at_ms,
          m.use_count,
          m.helpful_count,
          m.unhelpful_count,
          m.success_count,
          m.failure_count,
          m.merged_into};
}

absl::StatusOr<MemoryItem> ReadItem(const PgResult& r, int i) {
  return MemoryItemFromRow(PgRow(r, i));
}

absl::Status AppendHistory(PgConn& c, const HistoryEntry& e) {
  return c
      .Exec(
          "INSERT INTO memory_history (memory_id, action, actor, detail, at_ms) VALUES "
          "($1, $2, $3, $4, $5)",
          {e.memory_id, e.action, e.actor, e.detail, e.at_ms})
      .status();
}

// Adds `sign` (+1 or -1) to the document frequencies of `m`'s words in both indexes.
absl::Status CountTerms(PgConn& c, const MemoryItem& m, int sign) {
  std::map<std::string, std::pair<int64_t, int64_t>> df;
  for (const std::string& t : memory::IndexTerms(absl::StrCat(
           m.title, "\n", m.description, "\n", m.content, "\n", absl::StrJoin(m.tags, "\n")))) {
    df[t].first = sign;
  }
  for (const std::string& t :
       memory::IndexTerms(absl::StrCat(m.source.description, "\n", m.source.prompt))) {
    df[t].second = sign;
  }
  for (const auto& [term, counts] : df) {
    absl::Status st = c.Exec(
                           "INSERT INTO memory_terms (term, content_df, task_df) VALUES "
                           "($1, $2, $3) ON CONFLICT (term) DO UPDATE SET content_df = "
                           "memory_terms.content_df + $2, task_df = memory_terms.task_df + $3",
                           {term, counts.first, counts.second})
                          .status();
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgMemoryStore>> PgMemoryStore::Open(const PgOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(options));
  return Create(std::shared_ptr<PgDatabase>(std::move(db)));
}

std::unique_ptr<PgMemoryStore> PgMemoryStore::Create(std::shared_ptr<PgDatabase> db) {
  return std::unique_ptr<PgMemoryStore>(new PgMemoryStore(std::move(db)));
}

absl::Status PgMemoryStore::Insert(const MemoryItem& item, const HistoryEntry& entry) {
  return db_->Write([&](PgConn& c) -> absl::Status {
    auto r = c.Exec(absl::StrCat("INSERT INTO memories (", kColumns,
                                 ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,"
                                 "$16,$17,$18,$19,$20,$21,$22)"),
                    ItemParams(item));
    if (r.status().code() == absl::StatusCode::kAlreadyExists) {
      return absl::AlreadyExistsError(absl::StrCat("memory ", item.id, " already exists"));
    }
    if (!r.ok()) return r.status();
    absl::Status st = CountTerms(c, item, +1);
    if (!st.ok()) return st;
    return AppendHistory(c, entry);
  });
}

absl::Status PgMemoryStore::Update(const MemoryItem& item,
                                   const std::vector<HistoryEntry>& entries) {
  return db_->Write([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(
        PgResult old_rows,
        c.Exec(absl::StrCat("SELECT ", kColumns, " FROM memories WHERE id = $1 FOR UPDATE"),
               {item.id}));
    if (old_rows.rows() == 0) {
      return absl::NotFoundError(absl::StrCat("memory ", item.id, " not found"));
    }
    ASSIGN_OR_RETURN(MemoryItem old, ReadItem(old_rows, 0));
    if (old.title != item.title || old.description != item.description ||
        old.content != item.content || old.tags != item.tags) {
      absl::Status st = CountTerms(c, old, -1);
      if (!st.ok()) return st;
      MemoryItem recount = item;
      recount.source = old.source;  // Update keeps the source task
      st = CountTerms(c, recount, +1);
      if (!st.ok()) return st;
    }
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec(
            "UPDATE memories SET scope = $2, status = $3, outcome = $4, title = $5, "
            "description = $6, content = $7, tags = $8, updated_at_ms = $9, "
            "use_count = $10, helpful_count = $11, unhelpful_count = $12, "
            "success_count = $13, failure_count = $14, merged_into = $15 WHERE id = $1",
            {item.id, memory::ScopeName(item.scope), memory::StatusName(item.status),
             memory::OutcomeName(item.outcome), item.title, item.description, item.content,
             absl::StrJoin(item.tags, "\n"), item.updated_at_ms, item.use_count, item.helpful_count,
             item.unhelpful_count, item.success_count, item.failure_count, item.merged_into}));
    if (r.affected() == 0) {
      return absl::NotFoundError(absl::StrCat("memory ", item.id, " not found"));
    }
    for (const HistoryEntry& e : entries) {
      absl::Status st = AppendHistory(c, e);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  });
}

absl::Status PgMemoryStore::NoteUses(const std::vector<std::string>& ids,
                                     const std::vector<HistoryEntry>& entries) {
  return db_->Write([&](PgConn& c) -> absl::Status {
    for (const std::string& id : ids) {
      absl::Status st =
          c.Exec("UPDATE memories SET use_count = use_count + 1 WHERE id = $1", {id}).status();
      if (!st.ok()) return st;
    }
    for (const HistoryEntry& e : entries) {
      absl::Status st = AppendHistory(c, e);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<MemoryItem>> PgMemoryStore::QueryItems(
    std::string_view sql, const std::vector<PgParam>& params) {
  std::vector<MemoryItem> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(PgResult r, c.Exec(sql, params));
    for (int i = 0; i < r.rows(); ++i) {
      ASSIGN_OR_RETURN(MemoryItem m, ReadItem(r, i));
      out.push_back(std::move(m));
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::optional<MemoryItem>> PgMemoryStore::Get(std::string_view id) {
  ASSIGN_OR_RETURN(
      std::vector<MemoryItem> rows,
      QueryItems(absl::StrCat("SELECT ", kColumns, " FROM memories WHERE id = $1"), {id}));
  if (rows.empty()) return std::optional<MemoryItem>();
  return std::optional<MemoryItem>(std::move(rows.front()));
}

absl::StatusOr<std::vector<MemoryItem>> PgMemoryStore::GetMany(
    const std::vector<std::string>& ids) {
  std::vector<MemoryItem> out;
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(std::optional<MemoryItem> m, Get(id));
    if (m.has_value()) out.push_back(std::move(*m));
  }
  return out;
}

absl::StatusOr<std::vector<MemoryItem>> PgMemoryStore::List(const memory::ListFilter& f) {
  return QueryItems(
      absl::StrCat(
          "SELECT ", kColumns,
          " FROM memories WHERE id COLLATE \"C\" > $1 AND ($2::text IS NULL OR tenant = $2::text) "
          "AND ($3::text IS NULL OR project = $3::text) AND ($4::text IS NULL OR "
          "status = $4::text) ORDER BY id COLLATE \"C\" LIMIT $5"),
      {f.after_id, f.tenant ? PgParam(*f.tenant) : PgParam::Null(),
       f.project ? PgParam(*f.project) : PgParam::Null(),
       f.status ? PgParam(memory::StatusName(*f.status)) : PgParam::Null(),
       static_cast<int64_t>(std::clamp(f.limit, 1, 10000))});
}

absl::StatusOr<std::vector<HistoryEntry>> PgMemoryStore::History(std::string_view id) {
  std::vector<HistoryEntry> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT seq, memory_id, action, actor, detail, at_ms "
                                        "FROM memory_history WHERE memory_id = $1 ORDER BY seq",
                                        {id}));
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(HistoryEntry{r.Int(i, 0), r.Text(i, 1), r.Text(i, 2), r.Text(i, 3),
                                 r.Text(i, 4), r.Int(i, 5)});
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::vector<MemoryItem>> PgMemoryStore::FindBySourceTask(
    const Visibility& v, std::string_view description) {
  std::vector<PgParam> params = VisibilityParams(v);
  params.emplace_back(description);
  return QueryItems(absl::StrCat("SELECT ", kColumns, " FROM memories m WHERE ", kVisible,
                                 " AND m.source_description = $5 AND (m.scope <> 'org' OR "
                                 "m.tenant = $1) ORDER BY m.pos LIMIT 50"),
                    params);
}

absl::StatusOr<std::vector<Ranked>> PgMemoryStore::Search(bool tasks, const Visibility& v,
                                                          const std::vector<std::string>& terms,
                                                          int limit) {
  std::vector<Ranked> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    // Document frequency of each term; unknown terms match nothing and are dropped.
    // One round trip for all the terms (a text[] literal; every element quoted).
    std::string array = "{";
    for (const std::string& t : terms) {
      if (array.size() > 1) array.push_back(',');
      array.push_back('"');
      for (char ch : t) {
        if (ch == '"' || ch == '\\') array.push_back('\\');
        array.push_back(ch);
      }
      array.push_back('"');
    }
    array.push_back('}');
    ASSIGN_OR_RETURN(PgResult freq, c.Exec("SELECT term, content_df, task_df FROM memory_terms "
                                           "WHERE term = ANY($1::text[])",
                                           {array}));
    std::unordered_map<std::string, int64_t> frequency;
    for (int i = 0; i < freq.rows(); ++i) frequency[freq.Text(i, 0)] = freq.Int(i, tasks ? 2 : 1);
    std::vector<std::pair<int64_t, const std::string*>> known;
    for (const std::string& t : terms) {
      auto it = frequency.find(t);
      if (it != frequency.end() && it->second > 0) known.emplace_back(it->second, &t);
    }
    if (known.empty()) return absl::OkStatus();
    std::stable_sort(known.begin(), known.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> kept;
    int64_t postings = 0;
    for (const auto& [df, term] : known) {
      if (!kept.empty() && (postings + df > kPostingsBudget || kept.size() >= kMaxQueryTerms)) {
        break;
      }
      postings += df;
      // Terms are IndexTerms words (letters, digits, bytes >= 0x80): nothing to escape.
      kept.push_back(absl::StrCat("'", *term, "'"));
    }
    std::vector<PgParam> params = VisibilityParams(v);
    params.emplace_back(absl::StrJoin(kept, " | "));
    params.emplace_back(static_cast<int64_t>(limit));
    const char* column = tasks ? "m.task_search" : "m.content_search";
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec(absl::StrCat("SELECT m.id, ts_rank('{0.1, 0.25, 0.5, 1.0}', ", column,
                            ", q, 1) AS r FROM memories m, to_tsquery('simple', $5) q WHERE ",
                            column, " @@ q AND ", kVisible, " ORDER BY r DESC, m.pos LIMIT $6"),
               params));
    for (int i = 0; i < r.rows(); ++i) out.push_back(Ranked{r.Text(i, 0), r.Real(i, 1)});
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<std::vector<Ranked>> PgMemoryStore::SearchContent(
    const Visibility& v, const std::vector<std::string>& terms, int limit) {
  return Search(false, v, terms, limit);
}

absl::StatusOr<std::vector<Ranked>> PgMemoryStore::SearchTasks(
    const Visibility& v, const std::vector<std::string>& terms, int limit) {
  return Search(true, v, terms, limit);
}

absl::Status PgMemoryStore::PutVector(std::string_view id, std::string_view model,
                                      const std::vector<float>& vector) {
  if (vector.empty()) return absl::InvalidArgumentError("empty vector");
  std::string blob(vector.size() * sizeof(float), '\0');
  std::memcpy(blob.data(), vector.data(), blob.size());
  return db_->Write([&](PgConn& c) {
    return c
        .Exec(
            "INSERT INTO memory_vectors (memory_id, model, dim, vector) VALUES ($1, $2, $3, $4) "
            "ON CONFLICT (memory_id, model) DO UPDATE SET dim = excluded.dim, "
            "vector = excluded.vector",
            {id, model, static_cast<int64_t>(vector.size()), PgParam::Bytes(blob)})
        .status();
  });
}

absl::StatusOr<std::vector<memory::MemoryStore::StoredVector>> PgMemoryStore::AllVectors(
    std::string_view model) {
  std::vector<StoredVector> out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out.clear();
    ASSIGN_OR_RETURN(PgResult r,
                     c.Exec("SELECT v.memory_id, v.dim, v.vector FROM memory_vectors v JOIN "
                            "memories m ON m.id = v.memory_id WHERE v.model = $1 AND "
                            "m.status <> 'retired' ORDER BY m.pos",
                            {model}));
    for (int i = 0; i < r.rows(); ++i) {
      const int64_t dim = r.Int(i, 1);
      std::string blob = r.Bytes(i, 2);
      if (dim <= 0 || blob.size() != static_cast<size_t>(dim) * sizeof(float)) {
        return absl::InternalError(absl::StrCat("memory vector of ", r.Text(i, 0), " (",
                                                std::string(model), "): ", blob.size(),
                                                " bytes for ", dim, " dimensions"));
      }
      StoredVector sv;
      sv.id = r.Text(i, 0);
      sv.vector.resize(static_cast<size_t>(dim));
      std::memcpy(sv.vector.data(), blob.data(), blob.size());
      out.push_back(std::move(sv));
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
}

absl::StatusOr<int64_t> PgMemoryStore::Count() {
  int64_t n = 0;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT COUNT(*) FROM memories"));
    n = r.Int(0, 0);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return n;
}

}  // namespace contextd::store
