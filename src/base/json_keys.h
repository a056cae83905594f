// One reading of every JSON document: refuses an object that names a member twice, the shape
// that lets a reader which keeps the first of two members (contextd's span parser) and one which
// keeps the last (Python, Go, JavaScript, nlohmann) read two different documents from one body
// (decision 0029). Names are compared after JSON unescaping. Used inside a parser's own walk
// (JsonKeyTracker) or as a separate linear scan (FindDuplicateJsonKey).
// Thread-safety: JsonKeyTracker is a plain value (one per parse); the functions are pure.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace contextd::base {

// Where a document names a member twice: the path of the object holding the two members (object
// keys and array indices, outermost first; empty for the top level) and the name.
struct DuplicateJsonKey {
  std::vector<std::string> path;
  std::string key;
  // False when the name is no valid Unicode (invalid UTF-8, a lone surrogate escape): such a
  // name reads differently in every decoder, so it is refused as if it were a duplicate.
  bool valid_name = true;

  // `messages.2.content.0: duplicate key "content"` (top level: `top level: duplicate key "x"`).
  std::string Describe() const;
};

// What JsonKeyTracker::Add found.
enum class JsonKeyVerdict : uint8_t { kNew, kDuplicate, kInvalidName };

// The member names of the objects a parser has open, innermost last. The parser calls Open at
// `{`, Add with each member name token, Close at `}`. Allocation-free in the common case (no
// escapes, fewer than 17 members: a linear comparison); larger objects use a hash set.
class JsonKeyTracker {
 public:
  JsonKeyTracker();
  ~JsonKeyTracker();
  JsonKeyTracker(const JsonKeyTracker&) = delete;
  JsonKeyTracker& operator=(const JsonKeyTracker&) = delete;

  // An object starts.
  void Open();
  // `token`: a member name of the innermost open object as a valid JSON string token, quotes
  // included. kDuplicate if that object already has a member of the same (unescaped) name.
  JsonKeyVerdict Add(std::string_view token);
  // The innermost open object ends.
  void Close();

 private:
  struct Frame {
    uint32_t first_key = 0;
    uint32_t first_decoded = 0;
    std::unique_ptr<std::unordered_set<std::string_view>> set;  // past kLinearKeys members
  };
  std::vector<std::string_view> keys_;  // unescaped names of the open objects' members
  std::deque<std::string> decoded_;     // owns the names that differ from their token
  std::vector<Frame> frames_;
};

// The unescaped name of a valid JSON string token (quotes included), or nullopt when it is no
// valid Unicode (invalid UTF-8 bytes, a lone surrogate escape).
std::optional<std::string> UnescapeJsonKey(std::string_view token);

// The first object (in document order of its second member) of `json` that names a member twice,
// or nullopt. `json` should be valid JSON (validate it first): on invalid input the answer is
// unspecified but the scan is safe and linear. Nesting is unbounded (no recursion).
std::optional<DuplicateJsonKey> FindDuplicateJsonKey(std::string_view json);

}  // namespace contextd::base
