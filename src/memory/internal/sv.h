// Sv(): std::string_view -> absl::string_view. Debian's abseil is built with its own string_view
// type, so absl::StrCat, absl::Status and the ascii helpers do not accept std::string_view
// directly. Header-only; no state.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace contextd::memory::internal {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace contextd::memory::internal
