#include "cli/internal/connect_edit.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "cli/internal/header_lines.h"
#include "server/config.h"

namespace contextd::cli::internal {
namespace {

namespace fs = std::filesystem;

std::string ErrnoText() { return std::strerror(errno); }

std::string Compact(const OJson& v) { return base::DumpJson(v); }

// The record of previous values: <data_dir>/connect/<client>.json, shaped
//   {"version": 1, "files": {"<path>": {"created": bool, "keys": [
//     {"parent": "env", "key": "ANTHROPIC_BASE_URL", "parent_created": bool,
//      "previous": <value, absent when there was none>, "written": <value>}]}}}
// "previous" is what was there before the first connect that changed the key; later connects
// keep it and only update "written". For TOML files the values are the entries' text.
struct Record {
  std::string path;
  TextFile file;
  OJson doc = OJson{{"version", 1}, {"files", OJson::object()}};
};

absl::StatusOr<Record> LoadRecord(const std::string& data_dir, const std::string& client) {
  server::ServerConfig config;
  config.data_dir = data_dir;
  Record r;
  r.path = base::StrCat(server::ResolveDataDir(config), "/connect/", client, ".json");
  ASSIGN_OR_RETURN(r.file, ReadTextFile(r.path, 0600));
  ASSIGN_OR_RETURN(std::unique_ptr<JsonDocument> doc, JsonDocument::Parse(r.file));
  if (!doc->doc().empty()) {
    if (!doc->doc().contains("files") || !doc->doc()["files"].is_object()) {
      return absl::InvalidArgumentError(base::StrCat(r.path, " is not a contextd connect record"));
    }
    r.doc = doc->doc();
  }
  return r;
}

absl::Status SaveRecord(const Record& r) {
  return WriteTextFile(r.file, base::DumpJson(r.doc, 2) + "\n");
}

OJson* FindKeyRecord(OJson& file_record, const ConfigEdit& e) {
  if (!file_record.contains("keys") || !file_record["keys"].is_array()) return nullptr;
  for (OJson& k : file_record["keys"]) {
    if (k.value("parent", "") == e.parent && k.value("key", "") == e.key &&
        k.value("line", "") == e.line) {
      return &k;
    }
  }
  return nullptr;
}

// The string at (parent, key) as a block of header lines ("" when absent, nullopt when it is
// not a string).
std::optional<std::string> BlockAt(const ConfigDocument& doc, const std::string& parent,
                                   const std::string& key) {
  std::optional<OJson> v = doc.Get(parent, key);
  if (!v) return std::string();
  if (!v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

// The value an edit compares and records: the whole value, or its header line's value.
std::optional<OJson> CurrentOf(const ConfigDocument& doc, const ConfigEdit& e) {
  if (e.line.empty()) return doc.Get(e.parent, e.key);
  std::optional<std::string> line =
      HeaderLineValue(BlockAt(doc, e.parent, e.key).value_or(""), e.line);
  if (!line) return std::nullopt;
  return OJson(*line);
}

// Sets what `e` owns: the whole value, or its header line within the block.
void SetOwned(ConfigDocument& doc, const ConfigEdit& e, const OJson& value) {
  if (e.line.empty()) return doc.Set(e.parent, e.key, value);
  doc.Set(e.parent, e.key,
          OJson(SetHeaderLine(BlockAt(doc, e.parent, e.key).value_or(""), e.line,
                              value.get<std::string>())));
}

// Removes what `e` owns; a block left blank goes with its key.
void EraseOwned(ConfigDocument& doc, const ConfigEdit& e, bool parent_created) {
  if (e.line.empty()) return doc.Erase(e.parent, e.key, parent_created);
  std::string block = RemoveHeaderLine(BlockAt(doc, e.parent, e.key).value_or(""), e.line);
  if (block.find_first_not_of(" \t\r\n") == std::string::npos) {
    doc.Erase(e.parent, e.key, parent_created);
  } else {
    doc.Set(e.parent, e.key, OJson(block));
  }
}

// "env.KEY" or, for a header line, "env.KEY line Name".
std::string EditName(const ConfigEdit& e) {
  std::string name = ConfigDocument::Name(e.parent, e.key);
  return e.line.empty() ? name : base::StrCat(name, " line ", e.line);
}

// A header-line edit needs a string (or nothing) at (parent, key).
absl::Status CheckLineEditable(const ConfigDocument& doc, const ConfigEdit& e,
                               const std::string& file) {
  if (e.line.empty() || BlockAt(doc, e.parent, e.key).has_value()) return absl::OkStatus();
  return absl::InvalidArgumentError(base::StrCat(file, ": ", ConfigDocument::Name(e.parent, e.key),
                                                 " is not a string; nothing was changed"));
}

// A file with its document as read and as edited.
struct OpenFile {
  TextFile file;
  std::unique_ptr<ConfigDocument> doc;
  bool dirty = false;
};

// Undoes the recorded keys of one file in its document, one report line each; f.dirty when
// something changed.
void UndoFile(const OJson& file_record, const std::string& path, OpenFile& f,
              std::vector<std::string>& lines) {
  ConfigDocument& doc = *f.doc;
  // A parent connect created goes when its last key does, whichever key's record says so.
  std::set<std::string> created_parents;
  for (const OJson& k : file_record.value("keys", OJson::array())) {
    if (k.value("parent_created", false)) created_parents.insert(k.value("parent", ""));
  }
  for (const OJson& k : file_record.value("keys", OJson::array())) {
    ConfigEdit e{path, k.value("parent", ""), k.value("key", ""), OJson(),
                 0644, k.value("line", "")};
    std::string name = EditName(e);
    std::optional<OJson> now = CurrentOf(doc, e);
    if (!now || !doc.Same(*now, k.value("written", OJson()))) {
      lines.push_back(
          base::StrCat("  ", path, ": ", name, " changed since connect; left as it is"));
      continue;
    }
    f.dirty = true;
    if (k.contains("previous")) {
      SetOwned(doc, e, k["previous"]);
      lines.push_back(
          base::StrCat("  ", path, ": ~ ", name, " = ", doc.Show(k["previous"]), " (restored)"));
    } else {
      EraseOwned(doc, e, created_parents.count(e.parent) > 0);
      lines.push_back(base::StrCat("  ", path, ": - ", name));
    }
  }
}

}  // namespace

std::string ConfigDocument::Name(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : base::StrCat(parent, ".", key);
}

absl::StatusOr<TextFile> ReadTextFile(const std::string& path, mode_t new_mode) {
  TextFile f;
  f.path = path;
  f.real = path;
  f.mode = new_mode;
  std::error_code ec;
  if (fs::is_symlink(path, ec)) {
    fs::path target = fs::weakly_canonical(path, ec);
    if (ec) return absl::FailedPreconditionError(base::StrCat(path, ": ", ec.message()));
    f.real = target.string();
  }
  struct stat st {};
  if (::stat(f.real.c_str(), &st) != 0) {
    if (errno == ENOENT) return f;
    return absl::FailedPreconditionError(base::StrCat("cannot read ", path, ": ", ErrnoText()));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(base::StrCat(path, " is not a regular file"));
  }
  f.existed = true;
  f.mode = st.st_mode & 07777;
  std::ifstream in(f.real, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(base::StrCat("cannot read ", path));
  std::stringstream buf;
  buf << in.rdbuf();
  f.text = buf.str();
  return f;
}

absl::Status WriteTextFile(const TextFile& f, std::string_view text) {
  fs::path real(f.real);
  std::error_code ec;
  if (real.has_parent_path()) fs::create_directories(real.parent_path(), ec);
  if (ec)
    return absl::FailedPreconditionError(
        base::StrCat("cannot create ", real.parent_path().string(), ": ", ec.message()));
  std::string tmp = (real.parent_path() / ("." + real.filename().string() + ".contextd-" +
                                           std::to_string(::getpid()) + ".tmp"))
                        .string();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, f.mode);
  if (fd < 0)
    return absl::FailedPreconditionError(base::StrCat("cannot write ", tmp, ": ", ErrnoText()));
  bool ok = true;
  size_t off = 0;
  while (ok && off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      ok = false;
    else
      off += static_cast<size_t>(n);
  }
  // open() applied the umask; an existing file keeps exactly its mode.
  if (ok && f.existed) ok = ::fchmod(fd, f.mode) == 0;
  if (ok) ok = ::fsync(fd) == 0;
  std::string why = ok ? "" : ErrnoText();
  if (::close(fd) != 0 && ok) {
    ok = false;
    why = ErrnoText();
  }
  if (ok && ::rename(tmp.c_str(), f.real.c_str()) != 0) {
    ok = false;
    why = ErrnoText();
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return absl::FailedPreconditionError(base::StrCat("cannot write ", f.path, ": ", why));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<JsonDocument>> JsonDocument::Parse(const TextFile& f) {
  auto d = std::make_unique<JsonDocument>();
  d->path_ = f.path;
  if (f.text.find_first_not_of(" \t\r\n") == std::string::npos) return d;
  try {
    d->doc_ = OJson::parse(f.text);
  } catch (const OJson::exception& e) {
    return absl::InvalidArgumentError(
        base::StrCat(f.path, " is not valid JSON (", e.what(), "); nothing was changed"));
  }
  if (!d->doc_.is_object()) {
    return absl::InvalidArgumentError(
        base::StrCat(f.path, " is not a JSON object; nothing was changed"));
  }
  return d;
}

std::optional<OJson> JsonDocument::Get(const std::string& parent, const std::string& key) const {
  if (!doc_.contains(parent) || !doc_[parent].is_object() || !doc_[parent].contains(key)) {
    return std::nullopt;
  }
  return doc_[parent][key];
}

bool JsonDocument::HasParent(const std::string& parent) const { return doc_.contains(parent); }

absl::Status JsonDocument::CheckEditable(const std::string& parent, const std::string&) const {
  if (doc_.contains(parent) && !doc_[parent].is_object()) {
    return absl::InvalidArgumentError(
        base::StrCat(path_, ": \"", parent, "\" is not a JSON object; nothing was changed"));
  }
  return absl::OkStatus();
}

void JsonDocument::Set(const std::string& parent, const std::string& key, const OJson& value) {
  if (!doc_.contains(parent)) doc_[parent] = OJson::object();
  doc_[parent][key] = value;
}

void JsonDocument::Erase(const std::string& parent, const std::string& key, bool parent_created) {
  if (!doc_.contains(parent) || !doc_[parent].is_object()) return;
  doc_[parent].erase(key);
  if (parent_created && doc_[parent].empty()) doc_.erase(parent);
}

absl::StatusOr<std::string> JsonDocument::Serialize() const {
  return base::DumpJson(doc_, 2) + "\n";
}

// Same JSON value, ignoring the order of object keys.
bool JsonDocument::Same(const OJson& a, const OJson& b) const {
  return nlohmann::json::parse(base::DumpJson(a)) == nlohmann::json::parse(base::DumpJson(b));
}

std::string JsonDocument::Show(const OJson& value) const { return Compact(value); }

absl::StatusOr<std::string> NormalizeContextdUrl(const std::string& url) {
  std::string u = url;
  while (u.size() > 1 && u.back() == '/') u.pop_back();
  if (u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError(
        base::StrCat("--url must start with http:// or https://, got '", url, "'"));
  }
  return u;
}

absl::Status ApplyConnect(const ConnectTarget& target, const std::string& url,
                          const std::vector<ConfigEdit>& edits, std::ostream& out) {
  // Read everything before changing anything.
  ASSIGN_OR_RETURN(Record record, LoadRecord(target.data_dir, target.client));
  std::map<std::string, OpenFile> files;
  for (const ConfigEdit& e : edits) {
    if (files.count(e.file)) continue;
    OpenFile f;
    ASSIGN_OR_RETURN(f.file, ReadTextFile(e.file, e.new_mode));
    ASSIGN_OR_RETURN(f.doc, target.parse(f.file));
    files.emplace(e.file, std::move(f));
  }
  for (const ConfigEdit& e : edits) {
    RETURN_IF_ERROR(files.at(e.file).doc->CheckEditable(e.parent, e.key));
    RETURN_IF_ERROR(CheckLineEditable(*files.at(e.file).doc, e, e.file));
  }

  std::vector<std::string> lines;
  OJson& files_record = record.doc["files"];
  for (const ConfigEdit& e : edits) {
    OpenFile& f = files.at(e.file);
    ConfigDocument& doc = *f.doc;
    std::string name = EditName(e);
    std::optional<OJson> had = CurrentOf(doc, e);
    if (had && doc.Same(*had, e.value)) {
      lines.push_back(base::StrCat("  ", e.file, ": ", name, " already ", doc.Show(e.value)));
      continue;
    }
    if (!files_record.contains(e.file)) {
      files_record[e.file] = OJson{{"created", !f.file.existed}, {"keys", OJson::array()}};
    }
    OJson* k = FindKeyRecord(files_record[e.file], e);
    if (k == nullptr) {
      OJson fresh{
          {"parent", e.parent}, {"key", e.key}, {"parent_created", !doc.HasParent(e.parent)}};
      if (!e.line.empty()) fresh["line"] = e.line;
      if (had) fresh["previous"] = *had;
      files_record[e.file]["keys"].push_back(std::move(fresh));
      k = &files_record[e.file]["keys"].back();
    }
    (*k)["written"] = e.value;
    std::string was = had ? base::StrCat("  (was ", doc.Show(*had), ")") : "";
    SetOwned(doc, e, e.value);
    f.dirty = true;
    lines.push_back(
        base::StrCat("  ", e.file, ": ", had ? "~ " : "+ ", name, " = ", doc.Show(e.value), was));
  }
  // Everything that would be written must serialize (and, for TOML, parse) first.
  std::map<std::string, std::string> texts;
  bool changed = false;
  for (auto& [path, f] : files) {
    if (!f.dirty) continue;
    ASSIGN_OR_RETURN(std::string text, f.doc->Serialize());
    changed |= text != f.file.text;
    texts.emplace(path, std::move(text));
  }

  out << (target.dry_run ? "would connect"
          : changed      ? "connected"
                         : "already connected")
      << " " << target.display_name << " to contextd at " << url << " (" << target.where << "):\n";
  for (const std::string& l : lines) out << l << "\n";
  if (target.dry_run) {
    out << "dry run: nothing was written\n";
    return absl::OkStatus();
  }
  if (changed) {
    // The record first: a crash between the writes still leaves a way back.
    RETURN_IF_ERROR(SaveRecord(record));
    for (const auto& [path, text] : texts) {
      if (text != files.at(path).file.text)
        RETURN_IF_ERROR(WriteTextFile(files.at(path).file, text));
    }
    out << "previous values saved in " << record.path << "; `" << target.undo_command
        << "` restores them\n";
  }
  return absl::OkStatus();
}

absl::Status ApplyUndo(const ConnectTarget& target, const std::vector<std::string>& paths,
                       std::ostream& out) {
  ASSIGN_OR_RETURN(Record record, LoadRecord(target.data_dir, target.client));
  OJson& files_record = record.doc["files"];
  std::vector<std::string> lines;
  std::map<std::string, OpenFile> results;
  for (const std::string& path : paths) {
    if (!files_record.contains(path) || results.count(path)) continue;
    OpenFile f;
    ASSIGN_OR_RETURN(f.file, ReadTextFile(path, 0644));
    ASSIGN_OR_RETURN(f.doc, target.parse(f.file));
    UndoFile(files_record[path], path, f, lines);
    results.emplace(path, std::move(f));
  }
  if (results.empty()) {
    out << "nothing to undo for " << target.display_name << " (" << target.where
        << "): no record in " << record.path << "\n";
    return absl::OkStatus();
  }
  // Everything that would be written must serialize first.
  std::map<std::string, std::string> texts;
  for (auto& [path, f] : results) {
    if (!f.dirty) continue;
    ASSIGN_OR_RETURN(std::string text, f.doc->Serialize());
    texts.emplace(path, std::move(text));
  }
  out << (target.dry_run ? "would restore" : "restored") << " " << target.display_name
      << "'s previous configuration (" << target.where << "):\n";
  for (const std::string& l : lines) out << l << "\n";
  if (target.dry_run) {
    out << "dry run: nothing was written\n";
    return absl::OkStatus();
  }
  for (auto& [path, f] : results) {
    if (files_record[path].value("created", false) && f.doc->Empty()) {
      // connect created the file and nothing else is in it: remove it again.
      std::error_code ec;
      if (f.file.existed) fs::remove(f.file.real, ec);
      if (ec)
        return absl::FailedPreconditionError(
            base::StrCat("cannot remove ", path, ": ", ec.message()));
      out << "  removed " << path << " (connect had created it)\n";
    } else if (texts.count(path) && texts[path] != f.file.text) {
      RETURN_IF_ERROR(WriteTextFile(f.file, texts[path]));
    }
    files_record.erase(path);
  }
  if (files_record.empty()) {
    std::error_code ec;
    fs::remove(record.file.real, ec);
  } else {
    RETURN_IF_ERROR(SaveRecord(record));
  }
  return absl::OkStatus();
}

}  // namespace contextd::cli::internal
