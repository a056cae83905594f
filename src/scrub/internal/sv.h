// Av(): std::string_view -> absl::string_view. Debian's abseil is built without
// ABSL_USES_STD_STRING_VIEW, so absl::StrCat does not take std::string_view directly. Stateless.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace contextd::scrub::internal {

inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace contextd::scrub::internal
