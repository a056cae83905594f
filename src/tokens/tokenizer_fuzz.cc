// Fuzz target for the tokenizer: any bytes, either encoding, with and without special tokens.
// Checks: no crash; Count equals the number of ids; the ids decode to the input with invalid
// UTF-8 replaced by U+FFFD (so exactly the input when it is valid UTF-8).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokens/bpe_tokenizer.h"
#include "tokens/internal/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using contextd::tokens::BpeTokenizer;
  static const BpeTokenizer* const o200k = *contextd::tokens::GetEncoding("o200k_base");
  static const BpeTokenizer* const cl100k = *contextd::tokens::GetEncoding("cl100k_base");
  if (size == 0) return 0;
  // The first byte picks the encoding and whether special tokens are allowed.
  const BpeTokenizer* tok = (data[0] & 1) ? cl100k : o200k;
  bool allow_special = (data[0] & 2) != 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<uint32_t> ids = tok->Encode(text, allow_special);
  if (tok->Count(text, allow_special) != ids.size()) __builtin_trap();
  auto decoded = tok->Decode(ids);
  if (!decoded.ok()) __builtin_trap();
  bool valid = contextd::tokens::internal::IsValidUtf8(text);
  if (valid ? *decoded != text : *decoded != contextd::tokens::internal::ReplaceInvalidUtf8(text)) {
    __builtin_trap();
  }
  return 0;
}
