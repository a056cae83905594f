// WhatIfIndex: BM25 rankings over a bank's database file that the store does not offer, for the
// benchmarks' what-if comparisons: the store's query with another postings budget and term cap
// (SqliteMemoryStore::SearchLocked, re-stated here), and porter-stemmed copies of its two FTS5
// indexes (built in an attached in-memory database; the bank's file is only read). Its own
// connection; single-threaded. The SQL mirrors store/sqlite/sqlite_memory_store.cc: keep them in
// step.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "memory/memory_bank.h"
#include "memory/memory_store.h"
#include "store/sqlite/database.h"

namespace contextd::bench {

inline constexpr int64_t kNoBudget = std::numeric_limits<int64_t>::max() / 2;

enum class Field { kContent, kTasks };
enum class Stemming { kNone, kPorter };
// How a term's document frequency is found: the store's way (its memory_terms table; fts5vocab
// for the porter-stemmed copies, which counts the term's whole doclist), a count of its matches
// that stops past the budget, or not at all (every term kept, in query order, up to max_terms;
// unknown terms simply match nothing).
enum class DfSource { kVocab, kCappedMatch, kNone };

// One what-if query: the store's is {kNone, kVocab, kPostingsBudget, kMaxQueryTerms}.
struct SearchSpec {
  Field field = Field::kContent;
  Stemming stemming = Stemming::kNone;
  DfSource df = DfSource::kVocab;
  int64_t budget = 0;
  size_t max_terms = 0;
  int limit = 50;
};

// What one query kept of its terms, and where its time went.
struct TermStats {
  size_t known = 0;  // terms the index has
  size_t kept = 0;   // terms the query used
  int64_t postings_known = 0;
  int64_t postings_kept = 0;
  double df_ms = 0;     // finding document frequencies
  double match_ms = 0;  // the MATCH query
  std::vector<std::string> kept_terms;
};

class WhatIfIndex {
 public:
  // Opens `path` with a connection of its own; `cache_kib` > 0 sets its page cache to that many
  // KiB (SQLite's default is 2,000 KiB, which the store's connection keeps).
  static absl::StatusOr<std::unique_ptr<WhatIfIndex>> Open(const std::string& path,
                                                           int64_t cache_kib = 0) {
    store::DatabaseOptions options;
    options.background_checkpoint_ms = 0;
    ASSIGN_OR_RETURN(std::unique_ptr<store::Database> db, store::Database::Open(path, options));
    if (cache_kib > 0) {
      std::lock_guard<std::mutex> lock(db->mutex());
      RETURN_IF_ERROR(db->Exec(absl::StrCat("PRAGMA cache_size=-", cache_kib)));
    }
    std::unique_ptr<WhatIfIndex> out(new WhatIfIndex(std::move(db)));
    RETURN_IF_ERROR(out->Prepare(Stemming::kNone));
    return out;
  }

  // Builds the porter-stemmed copies from the bank's current rows (call again after writes).
  absl::Status BuildStemmed() {
    std::lock_guard<std::mutex> lock(db_->mutex());
    if (stemmed_built_) RETURN_IF_ERROR(db_->Exec("DETACH DATABASE w"));
    RETURN_IF_ERROR(db_->Exec(
        "ATTACH DATABASE ':memory:' AS w;"
        "CREATE VIRTUAL TABLE w.memory_fts USING fts5(title, description, content, tags, "
        "  tokenize = 'porter unicode61 remove_diacritics 2');"
        "CREATE VIRTUAL TABLE w.memory_task_fts USING fts5(source_description, source_prompt, "
        "  tokenize = 'porter unicode61 remove_diacritics 2');"
        "CREATE VIRTUAL TABLE w.memory_fts_vocab USING fts5vocab(memory_fts, 'row');"
        "CREATE VIRTUAL TABLE w.memory_task_fts_vocab USING fts5vocab(memory_task_fts, 'row');"
        "INSERT INTO w.memory_fts (rowid, title, description, content, tags) "
        "  SELECT pos, title, description, content, tags FROM main.memories;"
        "INSERT INTO w.memory_task_fts (rowid, source_description, source_prompt) "
        "  SELECT pos, source_description, source_prompt FROM main.memories;"));
    stemmed_built_ = true;
    return PrepareLocked(Stemming::kPorter);
  }

  // The store's ranking of `field` for `terms` under `v`, keeping the rarest known terms whose
  // document frequencies add up to `budget` (at least one) and at most `max_terms`. With
  // kPorter, each term is stemmed by the index's tokenizer; the budget is then not applied
  // (the vocabulary holds stems, not the query's words).
  absl::StatusOr<std::vector<memory::Ranked>> Search(const SearchSpec& spec,
                                                     const memory::Visibility& v,
                                                     const std::vector<std::string>& terms,
                                                     TermStats* stats = nullptr) {
    using SteadyClock = std::chrono::steady_clock;
    auto ms_since = [](SteadyClock::time_point t0) {
      return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
    };
    std::lock_guard<std::mutex> lock(db_->mutex());
    Statements& s = spec.stemming == Stemming::kNone ? plain_ : porter_;
    const bool content = spec.field == Field::kContent;
    store::Statement& vocab = spec.df != DfSource::kCappedMatch
                                  ? (content ? s.content_vocab : s.task_vocab)
                                  : (content ? s.content_count : s.task_count);
    store::Statement& query = content ? s.content : s.tasks;
    TermStats local;
    auto t0 = SteadyClock::now();
    std::vector<std::pair<int64_t, const std::string*>> known;
    if (spec.stemming == Stemming::kNone && spec.df != DfSource::kNone) {
      for (const std::string& t : terms) {
        store::ResetOnExit reset(vocab);
        if (spec.df == DfSource::kVocab) {
          vocab.Bind(1, t);
        } else {
          vocab.Bind(1, absl::StrCat("\"", t, "\""));
          vocab.Bind(2, std::min<int64_t>(spec.budget, kNoBudget) + 1);
        }
        ASSIGN_OR_RETURN(bool row, vocab.Step());
        if (row && vocab.Int(0) > 0) known.emplace_back(vocab.Int(0), &t);
      }
      std::stable_sort(known.begin(), known.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    } else {
      for (const std::string& t : terms) known.emplace_back(0, &t);
    }
    local.df_ms = ms_since(t0);
    std::vector<std::string> kept;
    for (const auto& [df, term] : known) {
      local.postings_known += df;
      if (!kept.empty() &&
          (local.postings_kept + df > spec.budget || kept.size() >= spec.max_terms)) {
        continue;
      }
      local.postings_kept += df;
      kept.push_back(absl::StrCat("\"", *term, "\""));
      local.kept_terms.push_back(absl::StrCat(*term, "(", df, ")"));
    }
    local.known = known.size();
    local.kept = kept.size();
    std::vector<memory::Ranked> out;
    if (kept.empty()) {
      if (stats != nullptr) *stats = local;
      return out;
    }
    t0 = SteadyClock::now();
    store::ResetOnExit reset(query);
    query.Bind(1, v.tenant);
    query.Bind(2, v.project);
    query.Bind(3, static_cast<int64_t>(v.include_pending ? 1 : 0));
    if (v.scope.has_value()) {
      query.Bind(4, std::string_view(memory::ScopeName(*v.scope)));
    } else {
      query.BindNull(4);
    }
    query.Bind(5, absl::StrJoin(kept, " OR "));
    query.Bind(6, static_cast<int64_t>(spec.limit));
    for (;;) {
      ASSIGN_OR_RETURN(bool row, query.Step());
      if (!row) break;
      out.push_back(memory::Ranked{query.Text(0), query.Real(1)});
    }
    local.match_ms = ms_since(t0);
    if (stats != nullptr) *stats = local;
    return out;
  }

 private:
  struct Statements {
    store::Statement content_vocab, task_vocab, content_count, task_count, content, tasks;
  };

  explicit WhatIfIndex(std::unique_ptr<store::Database> db) : db_(std::move(db)) {}

  absl::Status Prepare(Stemming stemming) {
    std::lock_guard<std::mutex> lock(db_->mutex());
    return PrepareLocked(stemming);
  }

  absl::Status PrepareLocked(Stemming stemming) {
    const std::string schema = stemming == Stemming::kNone ? "main" : "w";
    constexpr char kVisible[] =
        "(m.scope = 'org' OR (m.tenant = ?1 AND (m.scope = 'team' OR m.project = ?2))) AND "
        "(m.status = 'active' OR (?3 AND m.status = 'pending')) AND (?4 IS NULL OR m.scope = ?4)";
    Statements& s = stemming == Stemming::kNone ? plain_ : porter_;
    // Unstemmed: the store's own table of document frequencies (memory_terms); the stemmed copies
    // have only fts5vocab (their words are stems).
    ASSIGN_OR_RETURN(
        s.content_vocab,
        db_->Prepare(
            stemming == Stemming::kNone
                ? std::string("SELECT content_df FROM main.memory_terms WHERE term = ?")
                : absl::StrCat("SELECT doc FROM ", schema, ".memory_fts_vocab WHERE term = ?")));
    ASSIGN_OR_RETURN(
        s.task_vocab,
        db_->Prepare(stemming == Stemming::kNone
                         ? std::string("SELECT task_df FROM main.memory_terms WHERE term = ?")
                         : absl::StrCat("SELECT doc FROM ", schema,
                                        ".memory_task_fts_vocab WHERE term = ?")));
    ASSIGN_OR_RETURN(s.content_count,
                     db_->Prepare(absl::StrCat("SELECT COUNT(*) FROM (SELECT 1 FROM ", schema,
                                               ".memory_fts AS f WHERE f.memory_fts MATCH ? "
                                               "LIMIT ?)")));
    ASSIGN_OR_RETURN(s.task_count,
                     db_->Prepare(absl::StrCat("SELECT COUNT(*) FROM (SELECT 1 FROM ", schema,
                                               ".memory_task_fts AS f WHERE f.memory_task_fts "
                                               "MATCH ? LIMIT ?)")));
    ASSIGN_OR_RETURN(s.content,
                     db_->Prepare(absl::StrCat(
                         "SELECT m.id, bm25(f.memory_fts, 2.0, 1.0, 1.0, 0.5) AS r FROM ", schema,
                         ".memory_fts AS f JOIN main.memories m ON m.pos = f.rowid WHERE "
                         "f.memory_fts MATCH ?5 AND ",
                         kVisible, " ORDER BY r LIMIT ?6")));
    ASSIGN_OR_RETURN(s.tasks,
                     db_->Prepare(absl::StrCat(
                         "SELECT m.id, bm25(f.memory_task_fts, 2.0, 1.0) AS r FROM ", schema,
                         ".memory_task_fts AS f JOIN main.memories m ON m.pos = f.rowid WHERE "
                         "f.memory_task_fts MATCH ?5 AND ",
                         kVisible, " ORDER BY r LIMIT ?6")));
    return absl::OkStatus();
  }

  std::unique_ptr<store::Database> db_;
  Statements plain_, porter_;
  bool stemmed_built_ = false;
};

// The bank's reciprocal-rank fusion (MemoryBank::Rank without an embedder): sum of 1/(k + rank)
// over the lists, best first, ties by id.
inline std::vector<std::string> Fuse(const std::vector<std::vector<memory::Ranked>>& lists,
                                     int k = 60) {
  // The bank's weights: the item-text ranking 1, the source-task ranking BankOptions::task_weight.
  const double task_weight = memory::BankOptions{}.task_weight;
  std::vector<std::pair<std::string, double>> fused;
  for (size_t l = 0; l < lists.size(); ++l) {
    const auto& list = lists[l];
    const double weight = l == 1 ? task_weight : 1.0;
    for (size_t r = 0; r < list.size(); ++r) {
      auto it = std::find_if(fused.begin(), fused.end(),
                             [&](const auto& f) { return f.first == list[r].id; });
      double add = weight / static_cast<double>(k + static_cast<int>(r) + 1);
      if (it == fused.end()) {
        fused.emplace_back(list[r].id, add);
      } else {
        it->second += add;
      }
    }
  }
  std::sort(fused.begin(), fused.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> ids;
  for (const auto& f : fused) ids.push_back(f.first);
  return ids;
}

}  // namespace contextd::bench
