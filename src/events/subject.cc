#include "events/subject.h"

#include <openssl/evp.h>

#include <cctype>

#include "base/ids.h"
#include "base/str_cat.h"

namespace contextd::events {
namespace {

bool Kept(unsigned char c) { return std::isalnum(c) != 0 || c == '_' || c == '-'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lowercase hex is not produced by SubjectToken: rejected to keep tokens canonical
}

std::string Sha256Prefix(std::string_view value) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(value.data(), value.size(), digest, &len, EVP_sha256(), nullptr);
  return base::HexEncode(std::string_view(reinterpret_cast<const char*>(digest), 16));
}

}  // namespace

std::string SubjectToken(std::string_view value) {
  if (value.empty()) return std::string(kNoValueToken);
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    auto c = static_cast<unsigned char>(ch);
    if (Kept(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  if (out.size() > kMaxTokenBytes) return "~" + Sha256Prefix(value);
  return out;
}

absl::Status UnescapeSubjectToken(std::string_view token, std::string* value) {
  value->clear();
  if (token == kNoValueToken) return absl::OkStatus();
  if (token.empty()) return absl::InvalidArgumentError("empty subject token");
  if (token.front() == '~') {
    return absl::InvalidArgumentError("hashed subject token: the payload carries the value");
  }
  for (size_t i = 0; i < token.size(); ++i) {
    auto c = static_cast<unsigned char>(token[i]);
    if (Kept(c)) {
      value->push_back(token[i]);
      continue;
    }
    if (c != '%' || i + 2 >= token.size()) {
      return absl::InvalidArgumentError(
          base::StrCat("bad subject token '", token, "' at byte ", i));
    }
    int hi = HexValue(token[i + 1]);
    int lo = HexValue(token[i + 2]);
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(base::StrCat("bad escape in subject token '", token, "'"));
    }
    value->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return absl::OkStatus();
}

std::string EventSubject(std::string_view prefix, std::string_view tenant, std::string_view project,
                         std::string_view session, std::string_view type) {
  return base::StrCat(prefix, ".", SubjectToken(tenant), ".", SubjectToken(project), ".",
                      SubjectToken(session), ".", type);
}

absl::Status ValidateSubjectPrefix(std::string_view prefix) {
  if (prefix.empty()) return absl::InvalidArgumentError("must not be empty");
  size_t start = 0;
  while (true) {
    size_t dot = prefix.find('.', start);
    std::string_view token =
        prefix.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (token.empty()) {
      return absl::InvalidArgumentError(
          base::StrCat("'", prefix, "' has an empty token (leading, trailing or double '.')"));
    }
    for (char ch : token) {
      auto c = static_cast<unsigned char>(ch);
      if (ch == '*' || ch == '>' || std::isspace(c) != 0 || std::iscntrl(c) != 0) {
        return absl::InvalidArgumentError(base::StrCat(
            "'", prefix, "' may not contain wildcards ('*', '>'), whitespace or control bytes"));
      }
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return absl::OkStatus();
}

}  // namespace contextd::events
