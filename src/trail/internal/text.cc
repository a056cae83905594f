#include "trail/internal/text.h"

namespace contextd::trail::internal {

std::string OneLine(std::string_view text, size_t max_chars) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max_chars) {
      // Do not cut a UTF-8 sequence: drop trailing continuation bytes of a partial character.
      while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
        out.pop_back();
      if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80) != 0) out.pop_back();
      return out + "...";
    }
    out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
  }
  return out;
}

int64_t CountWords(std::string_view text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

}  // namespace contextd::trail::internal
