// A TOML file edited as text, for `contextd connect codex`: top-level keys and whole tables
// ([a.b] with its sub-tables) are replaced, inserted or removed where they stand, so every other
// byte of the user's file (comments, order, formatting) stays as it was. toml++ only validates:
// the file before an edit and the result before it is written. Values are the entries' text
// ("key = value\n", or "[a.b]\n...\n" for a table). Not thread-safe; a CLI helper.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/internal/connect_edit.h"

namespace contextd::cli::internal {

// A TOML basic string: "..." with quotes, backslashes and control characters escaped.
std::string TomlString(const std::string& s);

class TomlDocument : public ConfigDocument {
 public:
  // Returns InvalidArgument naming the file (and toml++'s message) when it is not valid TOML.
  static absl::StatusOr<std::unique_ptr<TomlDocument>> Parse(const TextFile& f);

  const std::string& text() const { return text_; }
  // A string value at `path` (e.g. {"mcp_servers", "contextd", "url"}), by toml++.
  std::optional<std::string> GetString(const std::vector<std::string>& path) const;

  // parent "": the top-level `key = ...` entry; otherwise the table [parent.key].
  std::optional<OJson> Get(const std::string& parent, const std::string& key) const override;
  bool HasParent(const std::string& parent) const override;
  // InvalidArgument when the key exists only in a form that is not a top-level entry or a
  // [parent.key] header (an inline table, dotted keys, an array of tables).
  absl::Status CheckEditable(const std::string& parent, const std::string& key) const override;
  // Replaces the entry or table where it is; a new top-level key goes after the last top-level
  // entry (TOML wants it before the first table), a new table at the end after a blank line.
  void Set(const std::string& parent, const std::string& key, const OJson& value) override;
  void Erase(const std::string& parent, const std::string& key, bool parent_created) override;
  // The edited text, when toml++ parses it; InvalidArgument naming the file otherwise.
  absl::StatusOr<std::string> Serialize() const override;
  bool Empty() const override;
  bool Same(const OJson& a, const OJson& b) const override { return a == b; }
  // "value" for a top-level entry, "{k = v, ...}" for a table.
  std::string Show(const OJson& value) const override;

  // One entry or table header of the text, as found by the scanner.
  struct Item {
    bool header = false;           // [table] or [[array]] header line
    bool array = false;            // [[array]]
    std::vector<std::string> key;  // the (dotted) key or table name, unquoted
    size_t begin = 0;              // start of its first line
    size_t end = 0;                // after the newline of its last line
  };

 private:
  // [begin, end) of the top-level entry `key` or of table `path` with its sub-tables.
  std::optional<std::pair<size_t, size_t>> Find(const std::string& parent,
                                                const std::string& key) const;
  std::vector<Item> Scan() const;

  std::string path_;
  std::string text_;
};

}  // namespace contextd::cli::internal
