// Sv(): std::string_view -> absl::string_view. Debian's abseil is built with its own string_view
// type (ABSL_OPTION_USE_STD_STRING_VIEW 0), so absl::StrCat and absl::Status do not accept
// std::string_view directly. Header-only; no state.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace contextd::folding::internal {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace contextd::folding::internal
