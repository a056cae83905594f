// Project ids from roots and headers (decision 0022).
#include "tools/session_key.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "base/str_cat.h"
#include "trail/content_hash.h"

namespace contextd::tools {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "%2F" -> "/"; a malformed escape is kept as written.
std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]);
      int lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

ProjectRef ProjectForPath(std::string_view path) {
  std::filesystem::path p{std::string(path)};
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::canonical(p, ec);
  if (ec) canonical = p.lexically_normal();
  std::string label = canonical.string();
  while (label.size() > 1 && label.back() == '/') label.pop_back();
  ProjectRef ref;
  ref.id = "p_" + trail::ContentHash(label).substr(0, 16);
  ref.label = std::move(label);
  return ref;
}

absl::StatusOr<ProjectRef> ProjectFromRoots(const protocol::Json& roots) {
  if (!roots.is_array() || roots.empty() || !roots[0].is_object()) {
    return absl::NotFoundError("no roots");
  }
  auto uri = roots[0].find("uri");
  if (uri == roots[0].end() || !uri->is_string()) return absl::NotFoundError("root without uri");
  std::string_view u = uri->get_ref<const std::string&>();
  constexpr std::string_view kFile = "file://";
  if (u.substr(0, kFile.size()) != kFile) {
    return absl::NotFoundError("the first root is not a file:// URI");
  }
  u.remove_prefix(kFile.size());
  // file:///path or file://localhost/path; another host is not a path of this machine.
  const size_t slash = u.find('/');
  if (slash == std::string_view::npos) return absl::NotFoundError("root without a path");
  std::string_view host = u.substr(0, slash);
  if (!host.empty() && host != "localhost") {
    return absl::NotFoundError("the first root names another host");
  }
  std::string_view rest = u.substr(slash);
  if (size_t q = rest.find_first_of("?#"); q != std::string_view::npos) rest = rest.substr(0, q);
  std::string path = PercentDecode(rest);
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string::npos) {
    return absl::NotFoundError("root without an absolute path");
  }
  return ProjectForPath(path);
}

absl::StatusOr<ProjectRef> ProjectFromHeader(std::string_view value) {
  if (!protocol::ValidProjectHeader(value)) {
    return absl::InvalidArgumentError(
        "X-Contextd-Project must be an absolute path or an id of 1-128 characters from "
        "[A-Za-z0-9._:-]");
  }
  if (value.front() == '/') return ProjectForPath(value);
  return ProjectRef{std::string(value), std::string(value)};
}

void ResolveSessionProject(const protocol::Json& roots, protocol::SessionInfo& info) {
  if (auto from_roots = ProjectFromRoots(roots); from_roots.ok()) {
    info.project = from_roots->id;
    info.project_label = from_roots->label;
    return;
  }
  if (!info.project_header.empty()) {
    if (auto from_header = ProjectFromHeader(info.project_header); from_header.ok()) {
      info.project = from_header->id;
      info.project_label = from_header->label;
      return;
    }
  }
  info.project = kDefaultProject;
  info.project_label.clear();
}

}  // namespace contextd::tools
