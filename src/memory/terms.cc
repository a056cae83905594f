#include "memory/terms.h"

#include <libstemmer.h>

#include <cctype>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace contextd::memory {
namespace {

// Common English words that say nothing about a task.
const std::set<std::string_view>& StopWords() {
  static const auto* words = new std::set<std::string_view>{
      "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
      "but", "by", "can", "could", "did", "do", "does", "each", "for", "from", "had", "has", "have",
      "how", "if", "in", "into", "is", "it", "its", "just", "may", "more", "most", "must", "no",
      "not", "of", "on", "one", "only", "or", "other", "our", "out", "should", "so", "some", "such",
      "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those",
      "to", "up", "use", "was", "we", "were", "what", "when", "where", "which", "while", "who",
      "why", "will", "with", "would", "you", "your",
      // Pieces of URLs: rare in a bank of lessons, so "rarest first" would keep them over the
      // words that name the task.
      "com", "html", "http", "https", "org", "www"};
  return *words;
}

struct StemmerDeleter {
  void operator()(sb_stemmer* s) const { sb_stemmer_delete(s); }
};

// sb_stemmer keeps per-call state: one per thread.
sb_stemmer* ThreadStemmer() {
  thread_local std::unique_ptr<sb_stemmer, StemmerDeleter> stemmer(
      sb_stemmer_new("english", "UTF_8"));
  return stemmer.get();
}

// Calls `emit(word)` with each word of `text` (lowercase ASCII letters and digits; a non-ASCII
// byte stays in its word), 2-40 bytes, in order, repeats included, until it returns false.
template <typename Emit>
void ForEachWord(std::string_view text, Emit emit) {
  std::string word;
  auto flush = [&]() -> bool {
    bool go_on = true;
    if (word.size() >= 2 && word.size() <= 40) go_on = emit(word);
    word.clear();
    return go_on;
  };
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || u >= 0x80) {
      word.push_back(static_cast<char>(std::tolower(u)));
    } else if (!flush()) {
      return;
    }
  }
  flush();
}

// Distinct stems of `text`, optionally without stop words, until `emit` returns false.
template <typename Emit>
void ForEachDistinctStem(std::string_view text, bool skip_stop_words, Emit emit) {
  std::set<std::string> seen;
  ForEachWord(text, [&](const std::string& word) {
    if (skip_stop_words && StopWords().count(word) != 0) return true;
    std::string stem = Stem(word);
    if (!seen.insert(stem).second) return true;
    return emit(std::move(stem));
  });
}

}  // namespace

std::string Stem(std::string_view word) {
  sb_stemmer* stemmer = ThreadStemmer();
  if (stemmer == nullptr) return std::string(word);
  const sb_symbol* out = sb_stemmer_stem(stemmer, reinterpret_cast<const sb_symbol*>(word.data()),
                                         static_cast<int>(word.size()));
  const int length = sb_stemmer_length(stemmer);
  // Out of memory (null) or a word stemmed to nothing: the word stands for itself.
  if (out == nullptr || length <= 0) return std::string(word);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(length));
}

std::vector<std::string> QueryTerms(std::string_view text) {
  std::vector<std::string> out;
  ForEachDistinctStem(text, /*skip_stop_words=*/true, [&out](std::string stem) {
    out.push_back(std::move(stem));
    return out.size() < 64;
  });
  return out;
}

std::vector<std::string> IndexTerms(std::string_view text) {
  std::vector<std::string> out;
  ForEachDistinctStem(text, /*skip_stop_words=*/false, [&out](std::string stem) {
    out.push_back(std::move(stem));
    return true;
  });
  return out;
}

std::string StemText(std::string_view text) {
  std::string out;
  ForEachWord(text, [&out](const std::string& word) {
    if (!out.empty()) out.push_back(' ');
    out += Stem(word);
    return true;
  });
  return out;
}

double WordOverlap(std::string_view a, std::string_view b) {
  std::vector<std::string> wa = QueryTerms(a), wb = QueryTerms(b);
  std::set<std::string> sa(wa.begin(), wa.end()), sb(wb.begin(), wb.end());
  if (sa.empty() && sb.empty()) return 0;
  size_t common = 0;
  for (const std::string& w : sa) common += sb.count(w);
  return static_cast<double>(common) / static_cast<double>(sa.size() + sb.size() - common);
}

ItemStems StemsOf(const MemoryItem& item) {
  ItemStems s;
  s.title = StemText(item.title);
  s.body = StemText(absl::StrCat(item.description, "\n", item.content));
  s.tags = StemText(absl::StrJoin(item.tags, "\n"));
  s.task = StemText(item.source.description);
  s.prompt = StemText(item.source.prompt);
  return s;
}

std::vector<std::string_view> SplitStems(std::string_view stems) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < stems.size()) {
    size_t end = stems.find(' ', start);
    if (end == std::string_view::npos) end = stems.size();
    if (end > start) out.push_back(stems.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace contextd::memory
