// What `contextd connect <client>` shares between clients: reading and atomically writing a
// configuration file, the record of replaced values (<data dir>/connect/<client>.json), and the
// connect and undo passes over an editable document (JSON for Claude Code, TOML for Codex), so
// that saving and restoring previous values is written once. Single-threaded CLI helpers.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace contextd::cli::internal {

using OJson = nlohmann::ordered_json;

// One configuration file as read.
struct TextFile {
  std::string path;  // as named to the user
  std::string real;  // where to write: the symlink's target when `path` is one
  std::string text;  // empty when the file does not exist
  bool existed = false;
  mode_t mode = 0644;  // the file's mode, or the mode a new file gets
};

// Reads `path` (following a symlink); a missing file is empty text with existed = false and mode
// `new_mode`. Returns FailedPrecondition when it cannot be read or is not a regular file.
absl::StatusOr<TextFile> ReadTextFile(const std::string& path, mode_t new_mode);

// Writes `text` to f.real through a temp file in the same directory, fsync and rename, keeping an
// existing file's mode (a new one gets f.mode). Creates missing parent directories. Returns
// FailedPrecondition when any step fails (the temp file is removed).
absl::Status WriteTextFile(const TextFile& f, std::string_view text);

// A configuration file connect edits, as a set of values addressed by (parent, key): for JSON
// doc[parent][key]; for TOML the top-level key `key` (parent "") or the table [parent.key].
class ConfigDocument {
 public:
  virtual ~ConfigDocument() = default;
  // The value at (parent, key), when there is one.
  virtual std::optional<OJson> Get(const std::string& parent, const std::string& key) const = 0;
  // Whether `parent` exists (connect records whether it created it).
  virtual bool HasParent(const std::string& parent) const = 0;
  // InvalidArgument (naming the file, saying nothing was changed) when (parent, key) exists in a
  // form Set cannot replace.
  virtual absl::Status CheckEditable(const std::string& parent, const std::string& key) const = 0;
  virtual void Set(const std::string& parent, const std::string& key, const OJson& value) = 0;
  // Removes (parent, key); `parent_created`: connect created the parent, remove it when empty.
  virtual void Erase(const std::string& parent, const std::string& key, bool parent_created) = 0;
  // The text to write. InvalidArgument when the edited document would not parse.
  virtual absl::StatusOr<std::string> Serialize() const = 0;
  // Nothing left in it (a file connect created is then removed again by undo).
  virtual bool Empty() const = 0;
  // Whether two values are the same for this format.
  virtual bool Same(const OJson& a, const OJson& b) const = 0;
  // `value` on one line, for the report.
  virtual std::string Show(const OJson& value) const = 0;
  // "parent.key" (or "key" for a top-level key), for the report.
  static std::string Name(const std::string& parent, const std::string& key);
};

// A JSON object file, edited as an nlohmann ordered_json (key order kept; written with 2-space
// indentation). A missing or blank file is an empty object.
class JsonDocument : public ConfigDocument {
 public:
  // Returns InvalidArgument naming the file when it is not valid JSON or not an object.
  static absl::StatusOr<std::unique_ptr<JsonDocument>> Parse(const TextFile& f);

  const OJson& doc() const { return doc_; }

  std::optional<OJson> Get(const std::string& parent, const std::string& key) const override;
  bool HasParent(const std::string& parent) const override;
  absl::Status CheckEditable(const std::string& parent, const std::string& key) const override;
  void Set(const std::string& parent, const std::string& key, const OJson& value) override;
  void Erase(const std::string& parent, const std::string& key, bool parent_created) override;
  absl::StatusOr<std::string> Serialize() const override;
  bool Empty() const override { return doc_.empty(); }
  bool Same(const OJson& a, const OJson& b) const override;
  std::string Show(const OJson& value) const override;

 private:
  std::string path_;
  OJson doc_ = OJson::object();
};

// Opens the document of one file (a missing file is an empty document).
using DocumentParser =
    std::function<absl::StatusOr<std::unique_ptr<ConfigDocument>>(const TextFile& file)>;

// One value connect sets.
struct ConfigEdit {
  std::string file;
  std::string parent;
  std::string key;
  OJson value;
  mode_t new_mode = 0644;  // the mode of the file when connect creates it
  // Not empty: connect owns only the header line `<line>: <value>` of the string at (parent,
  // key), a block of `Name: value` lines (internal/header_lines.h); `value` is the line's value
  // (a string) and every other line is kept byte for byte. Undo restores that line's previous
  // value or removes it, and removes the key when nothing but blanks is left.
  std::string line = "";
};

// Who is being connected, for the record's name and the report.
struct ConnectTarget {
  std::string client;  // "claude-code", "codex": the record is <data dir>/connect/<client>.json
  std::string display_name;  // "Claude Code", "Codex"
  std::string where;         // "project /p", "user scope", ...: in the report's first line
  std::string data_dir;      // empty: the default data dir
  std::string undo_command;  // the full `contextd connect ... --undo` that undoes this connect
  bool dry_run = false;
  DocumentParser parse;
};

// Applies `edits` (reading every file and the record before writing anything), reports each
// change on `out` ("connected <display name> to contextd at <url> (<where>):" and one line per
// value), saves each replaced value in the record (the first previous value is kept across
// connects), then writes the record and the changed files. With dry_run, reports and writes
// nothing. Returns the first error of reading, parsing, checking or writing.
absl::Status ApplyConnect(const ConnectTarget& target, const std::string& url,
                          const std::vector<ConfigEdit>& edits, std::ostream& out);

// Restores what the recorded connects replaced in `files` (values changed since are left as they
// are and reported), removes a file connect created when nothing else is left in it, and drops
// the record of those files. Reports "nothing to undo" when there is no record for them.
absl::Status ApplyUndo(const ConnectTarget& target, const std::vector<std::string>& files,
                       std::ostream& out);

// Strips trailing slashes; InvalidArgument unless `url` starts with http:// or https://.
absl::StatusOr<std::string> NormalizeContextdUrl(const std::string& url);

}  // namespace contextd::cli::internal
