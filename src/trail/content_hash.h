// Content addressing for trail blobs: the lowercase hex SHA-256 of a payload. Stateless and
// thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace contextd::trail {

// Returns the 64 lowercase hex characters of SHA-256(`data`).
std::string ContentHash(std::string_view data);

}  // namespace contextd::trail
