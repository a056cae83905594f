// StrCat: concatenates strings, string_views, C strings, characters and numbers into one
// std::string. Debian's abseil is built with its own absl::string_view (not std::string_view), so
// absl::StrCat does not take std::string_view; this does. Header-only; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

namespace contextd::base {
namespace internal_str_cat {

template <typename T>
void Append(std::string& out, const T& value) {
  if constexpr (std::is_same_v<T, char>) {
    out.push_back(value);
  } else if constexpr (std::is_same_v<T, bool>) {
    out += value ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    out += std::to_string(value);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out += std::string_view(value);
  } else {
    out.append(value.data(), value.size());  // absl::string_view and other views
  }
}

}  // namespace internal_str_cat

// Returns the concatenation of `parts` (numbers in decimal, bools as true/false).
template <typename... Parts>
std::string StrCat(const Parts&... parts) {
  std::string out;
  (internal_str_cat::Append(out, parts), ...);
  return out;
}

}  // namespace contextd::base
