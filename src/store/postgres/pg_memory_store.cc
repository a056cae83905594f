#include "store/postgres/pg_memory_store.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "memory/memory_bank.h"
#include "store/internal/memory_search.h"

namespace contextd::store {
namespace {

using memory::HistoryEntry;
using memory::MemoryItem;
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

// A text[] literal of `terms`, every element quoted.
std::string TextArray(const std::vector<std::string>& terms) {
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
  return array;
}

// (tenant, project) -> term -> its counts there.
using ProjectTerms = std::map<std::pair<std::string, std::string>,
                              std::map<std::string, memory::TermFrequency, std::less<>>>;

// A bigint[] literal of `values`.
std::string IntArray(const std::vector<int64_t>& values) {
  return absl::StrCat("{", absl::StrJoin(values, ","), "}");
}

// Adds `df` (term -> deltas, in term order so that concurrent writers lock rows alike) to the
// global counts and to those of (tenant, project): two statements, whatever the number of terms.
absl::Status AddTermCounts(PgConn& c, const std::map<std::string, memory::TermFrequency>& df,
                           const std::string& tenant, const std::string& project) {
  std::vector<std::string> terms;
  std::vector<int64_t> content, task;
  for (const auto& [term, f] : df) {
    terms.push_back(term);
    content.push_back(f.content);
    task.push_back(f.task);
  }
  const std::string t = TextArray(terms), cd = IntArray(content), td = IntArray(task);
  RETURN_IF_ERROR(c.Exec("INSERT INTO memory_terms (term, content_df, task_df) SELECT * FROM "
                         "unnest($1::text[], $2::bigint[], $3::bigint[]) ON CONFLICT (term) DO "
                         "UPDATE SET content_df = memory_terms.content_df + excluded.content_df, "
                         "task_df = memory_terms.task_df + excluded.task_df",
                         {t, cd, td})
                      .status());
  return c
      .Exec(
          "INSERT INTO memory_project_terms (term, tenant, project, content_df, task_df) SELECT "
          "u.term, $4, $5, u.c, u.t FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS "
          "u(term, c, t) ON CONFLICT (term, tenant, project) DO UPDATE SET content_df = "
          "memory_project_terms.content_df + excluded.content_df, task_df = "
          "memory_project_terms.task_df + excluded.task_df",
          {t, cd, td, tenant, project})
      .status();
}

// Adds (items, content_length, task_length) to the counts of (tenant, project).
absl::Status AddCorpus(PgConn& c, const std::string& tenant, const std::string& project,
                       int64_t items, int64_t content_length, int64_t task_length) {
  return c
      .Exec(
          "INSERT INTO memory_corpus (tenant, project, items, content_length, task_length) "
          "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant, project) DO UPDATE SET items = "
          "memory_corpus.items + $3, content_length = memory_corpus.content_length + $4, "
          "task_length = memory_corpus.task_length + $5",
          {tenant, project, items, content_length, task_length})
      .status();
}

// Adds `sign` (+1 or -1) to the global and per-project document frequencies of `m`'s stems and
// to its project's item count and lengths.
absl::Status CountTerms(PgConn& c, const MemoryItem& m, const memory::ItemStems& stems, int sign) {
  TermCounts counts = CountStems(stems);
  for (auto& [term, f] : counts.df) {
    f.content *= sign;
    f.task *= sign;
  }
  if (!counts.df.empty()) RETURN_IF_ERROR(AddTermCounts(c, counts.df, m.tenant, m.project));
  return AddCorpus(c, m.tenant, m.project, sign, counts.content_length * sign,
                   counts.task_length * sign);
}

// Writes (or replaces) the stems row of the stored item `m.id`.
absl::Status PutStems(PgConn& c, const MemoryItem& m, const memory::ItemStems& stems) {
  return c
      .Exec(
          "INSERT INTO memory_stems (pos, title, body, tags, task, prompt) SELECT pos, $2, $3, "
          "$4, $5, $6 FROM memories WHERE id = $1 ON CONFLICT (pos) DO UPDATE SET title = "
          "excluded.title, body = excluded.body, tags = excluded.tags, task = excluded.task, "
          "prompt = excluded.prompt",
          {m.id, stems.title, stems.body, stems.tags, stems.task, stems.prompt})
      .status();
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgMemoryStore>> PgMemoryStore::Open(const PgOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgDatabase> db, PgDatabase::Open(options));
  return Create(std::shared_ptr<PgDatabase>(std::move(db)));
}

absl::StatusOr<std::unique_ptr<PgMemoryStore>> PgMemoryStore::Create(
    std::shared_ptr<PgDatabase> db) {
  std::unique_ptr<PgMemoryStore> store(new PgMemoryStore(std::move(db)));
  RETURN_IF_ERROR(store->RebuildStemsIfNeeded());
  return store;
}

absl::Status PgMemoryStore::RebuildStemsIfNeeded() {
  auto differ = [](PgConn& c) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(PgResult r, c.Exec("SELECT (SELECT COUNT(*) FROM memories), "
                                        "(SELECT COUNT(*) FROM memory_stems)"));
    return r.Int(0, 0) != r.Int(0, 1);
  };
  bool needed = false;
  RETURN_IF_ERROR(db_->Read([&](PgConn& c) -> absl::Status {
    ASSIGN_OR_RETURN(needed, differ(c));
    return absl::OkStatus();
  }));
  if (!needed) return absl::OkStatus();
  return db_->Write([&](PgConn& c) -> absl::Status {
    // Another instance may be at it: the lock waits for it, then the counts say whether to go on.
    RETURN_IF_ERROR(c.Exec("LOCK TABLE memory_stems IN EXCLUSIVE MODE").status());
    ASSIGN_OR_RETURN(bool still, differ(c));
    if (!still) return absl::OkStatus();
    RETURN_IF_ERROR(c.Exec("DELETE FROM memory_stems").status());
    RETURN_IF_ERROR(c.Exec("DELETE FROM memory_terms").status());
    RETURN_IF_ERROR(c.Exec("DELETE FROM memory_project_terms").status());
    RETURN_IF_ERROR(c.Exec("DELETE FROM memory_corpus").status());
    // Stems written 1,000 rows a statement; counts added up here and written per project.
    std::map<std::pair<std::string, std::string>, TermCounts> projects;
    int64_t after = -1;
    for (;;) {
      ASSIGN_OR_RETURN(PgResult page,
                       c.Exec(absl::StrCat("SELECT ", kColumns,
                                           ", pos FROM memories WHERE pos > $1 ORDER BY pos "
                                           "LIMIT 1000"),
                              {after}));
      if (page.rows() == 0) break;
      std::vector<int64_t> pos;
      std::vector<std::string> fields[5];
      for (int i = 0; i < page.rows(); ++i) {
        after = page.Int(i, 22);  // pos, after the 22 columns of kMemoryItemColumns
        ASSIGN_OR_RETURN(MemoryItem item, ReadItem(page, i));
        const memory::ItemStems stems = memory::StemsOf(item);
        pos.push_back(after);
        fields[0].push_back(stems.title);
        fields[1].push_back(stems.body);
        fields[2].push_back(stems.tags);
        fields[3].push_back(stems.task);
        fields[4].push_back(stems.prompt);
        TermCounts one = CountStems(stems);
        TermCounts& sum = projects[{item.tenant, item.project}];
        for (const auto& [term, f] : one.df) {
          sum.df[term].content += f.content;
          sum.df[term].task += f.task;
        }
        sum.content_length += one.content_length;
        sum.task_length += one.task_length;
        sum.items += one.items;
      }
      RETURN_IF_ERROR(c.Exec("INSERT INTO memory_stems (pos, title, body, tags, task, prompt) "
                             "SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], "
                             "$4::text[], $5::text[], $6::text[])",
                             {IntArray(pos), TextArray(fields[0]), TextArray(fields[1]),
                              TextArray(fields[2]), TextArray(fields[3]), TextArray(fields[4])})
                          .status());
    }
    for (const auto& [key, sum] : projects) {
      RETURN_IF_ERROR(AddTermCounts(c, sum.df, key.first, key.second));
      RETURN_IF_ERROR(
          AddCorpus(c, key.first, key.second, sum.items, sum.content_length, sum.task_length));
    }
    return absl::OkStatus();
  });
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
    const memory::ItemStems stems = memory::StemsOf(item);
    RETURN_IF_ERROR(PutStems(c, item, stems));
    RETURN_IF_ERROR(CountTerms(c, item, stems, +1));
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
      RETURN_IF_ERROR(CountTerms(c, old, memory::StemsOf(old), -1));
      MemoryItem recount = item;
      recount.source = old.source;  // Update keeps the source task
      const memory::ItemStems stems = memory::StemsOf(recount);
      RETURN_IF_ERROR(PutStems(c, recount, stems));
      RETURN_IF_ERROR(CountTerms(c, recount, stems, +1));
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
  if (ids.empty()) return std::vector<MemoryItem>();
  // One round trip; the order given is restored here.
  ASSIGN_OR_RETURN(
      std::vector<MemoryItem> rows,
      QueryItems(absl::StrCat("SELECT ", kColumns, " FROM memories WHERE id = ANY($1::text[])"),
                 {TextArray(ids)}));
  std::map<std::string, MemoryItem*> by_id;
  for (MemoryItem& m : rows) by_id[m.id] = &m;
  std::vector<MemoryItem> out;
  out.reserve(rows.size());
  for (const std::string& id : ids) {
    auto it = by_id.find(id);
    if (it != by_id.end() && it->second != nullptr) {
      out.push_back(std::move(*it->second));
      it->second = nullptr;  // an id asked twice is returned once, as before
    }
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

absl::StatusOr<memory::Matches> PgMemoryStore::FindMatches(const Visibility& v,
                                                           const std::vector<std::string>& terms,
                                                           int limit) {
  memory::Matches out;
  absl::Status st = db_->Read([&](PgConn& c) -> absl::Status {
    out = memory::Matches();
    // Three round trips: every project's counts of the terms (the global counts are their sums;
    // memory_terms holds the same sums), every project's size, the match.
    ASSIGN_OR_RETURN(PgResult freq, c.Exec("SELECT tenant, project, term, content_df, task_df FROM "
                                           "memory_project_terms WHERE term = ANY($1::text[])",
                                           {TextArray(terms)}));
    ProjectTerms by_project;
    for (int i = 0; i < freq.rows(); ++i) {
      const memory::TermFrequency f{freq.Int(i, 3), freq.Int(i, 4)};
      by_project[{freq.Text(i, 0), freq.Text(i, 1)}][freq.Text(i, 2)] = f;
      memory::TermFrequency& sum = out.global.terms[freq.Text(i, 2)];
      sum.content += f.content;
      sum.task += f.task;
    }
    std::vector<std::string> known;
    for (const std::string& t : terms) {
      auto it = out.global.terms.find(t);
      if (it == out.global.terms.end()) continue;
      if (it->second.content + it->second.task > 0) {
        known.push_back(t);
      } else {
        out.global.terms.erase(it);
      }
    }
    out.kept = KeepRarest(out.global, known);
    if (out.kept.empty()) return absl::OkStatus();
    ASSIGN_OR_RETURN(PgResult corpus,
                     c.Exec("SELECT tenant, project, items, content_length, task_length FROM "
                            "memory_corpus"));
    for (int i = 0; i < corpus.rows(); ++i) {
      out.global.items += corpus.Int(i, 2);
      out.global.content_length += corpus.Int(i, 3);
      out.global.task_length += corpus.Int(i, 4);
    }
    std::vector<std::string> quoted;
    // Stems are letters, digits and bytes >= 0x80: nothing to escape.
    for (const std::string& t : out.kept) quoted.push_back(absl::StrCat("'", t, "'"));
    std::vector<PgParam> params = VisibilityParams(v);
    params.emplace_back(absl::StrJoin(quoted, " | "));
    params.emplace_back(static_cast<int64_t>(limit));
    ASSIGN_OR_RETURN(
        PgResult r,
        c.Exec(absl::StrCat("SELECT m.id, m.tenant, m.project, m.scope, s.title, s.body, s.tags, "
                            "s.task, s.prompt FROM memory_stems s JOIN memories m ON m.pos = "
                            "s.pos, to_tsquery('simple', $5) q WHERE s.search @@ q AND ",
                            kVisible, " LIMIT $6"),
               params));
    for (int i = 0; i < r.rows(); ++i) {
      memory::Match m;
      m.id = r.Text(i, 0);
      m.tenant = r.Text(i, 1);
      m.project = r.Text(i, 2);
      auto scope = memory::ParseScope(r.Text(i, 3));  // the schema's CHECK keeps it known
      m.scope = scope.ok() ? *scope : memory::Scope::kProject;
      m.stems = {r.Text(i, 4), r.Text(i, 5), r.Text(i, 6), r.Text(i, 7), r.Text(i, 8)};
      out.projects[{m.tenant, m.project}];
      out.items.push_back(std::move(m));
    }
    for (int i = 0; i < corpus.rows(); ++i) {
      auto it = out.projects.find({corpus.Text(i, 0), corpus.Text(i, 1)});
      if (it == out.projects.end()) continue;
      it->second.items = corpus.Int(i, 2);
      it->second.content_length = corpus.Int(i, 3);
      it->second.task_length = corpus.Int(i, 4);
      it->second.terms = std::move(by_project[it->first]);
    }
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return out;
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
