// Cat(): string concatenation of strings, string views (std and absl: Debian's abseil keeps its
// own absl::string_view, so absl::StrCat does not take std::string_view) and integers. Pure;
// thread-safe. Private to the protocol room.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace contextd::protocol::internal {

inline void AppendTo(std::string& out, std::string_view s) { out.append(s.data(), s.size()); }
inline void AppendTo(std::string& out, const std::string& s) { out.append(s); }
inline void AppendTo(std::string& out, const char* s) { out.append(s); }
inline void AppendTo(std::string& out, char c) { out.push_back(c); }
template <typename T>
requires(std::is_same_v<T, absl::string_view> &&
         !std::is_same_v<T, std::string_view>) inline void AppendTo(std::string& out, const T& s) {
  out.append(s.data(), s.size());
}
template <typename T>
requires(std::is_integral_v<T> && !std::is_same_v<T, char> &&
         !std::is_same_v<T, bool>) inline void AppendTo(std::string& out, T v) {
  out.append(std::to_string(v));
}

// Concatenates every argument.
template <typename... Args>
std::string Cat(const Args&... args) {
  std::string out;
  (AppendTo(out, args), ...);
  return out;
}

// The message of `status` as a std::string.
inline std::string Msg(const absl::Status& status) {
  return std::string(status.message().data(), status.message().size());
}

}  // namespace contextd::protocol::internal
