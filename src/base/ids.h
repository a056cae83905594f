// Identifiers: random ids from the operating system's CSPRNG (getrandom), hex encoded, with an
// optional prefix ("br_", "ses_"). Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace contextd::base {

// Returns `prefix` followed by 2*`bytes` lowercase hex characters of CSPRNG output.
// `bytes` of 16 gives 128 bits. Aborts only if the kernel's random source is unusable.
std::string RandomId(std::string_view prefix, size_t bytes = 16);

// Returns `prefix` followed by 32 lowercase hex characters: the wall clock's milliseconds since
// the epoch (48 bits, big-endian) and then 80 bits of CSPRNG output. Ids made later sort after
// earlier ones (to the millisecond), so rows keyed by them are appended at the right edge of a
// B-tree instead of dirtying a random page per insert; 80 random bits keep them unguessable and
// unique.
std::string TimeOrderedId(std::string_view prefix);

// Fills `out` with `n` CSPRNG bytes.
void RandomBytes(void* out, size_t n);

// Lowercase hex of `data`.
std::string HexEncode(std::string_view data);

}  // namespace contextd::base
