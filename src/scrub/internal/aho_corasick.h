// AhoCorasick: an ASCII case-insensitive multi-pattern matcher compiled to a dense DFA over byte
// classes, used as the keyword prefilter of the rule scanner. Immutable after construction;
// Scan() is const and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace contextd::scrub::internal {

class AhoCorasick {
 public:
  // Builds the automaton for `patterns` (empty patterns are ignored). Pattern i reports id i.
  // Matching folds ASCII A-Z to a-z on both sides.
  explicit AhoCorasick(const std::vector<std::string>& patterns);

  // Calls `on_match(pattern_id, end_offset)` for every occurrence (overlapping ones included) of
  // every pattern in `text`; `end_offset` is one past the last byte of the occurrence.
  template <typename F>
  void Scan(std::string_view text, F&& on_match) const {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const size_t n = text.size();
    uint32_t s = 0;
    size_t i = 0;
    while (i < n) {
      // The hot loop has no calls in it, so the state stays in a register.
      i = delta16_.empty() ? Run(delta_.data(), p, i, n, &s) : Run(delta16_.data(), p, i, n, &s);
      if (i == 0) break;
      const uint32_t state = (s >> 1) / num_classes_;
      for (uint32_t k = out_begin_[state]; k < out_begin_[state + 1]; ++k) on_match(out_[k], i);
    }
  }

  // Number of DFA states (for tests and stats).
  size_t num_states() const { return out_begin_.empty() ? 0 : out_begin_.size() - 1; }

 private:
  // Advances from byte `i` until a state with output is entered; returns the offset just past
  // that byte (updating *state), or 0 when the end is reached without output.
  template <typename Entry>
  size_t Run(const Entry* delta, const unsigned char* p, size_t i, size_t n,
             uint32_t* state) const {
    const uint8_t* cls = class_of_;
    uint32_t s = *state;
    while (i < n) {
      s = delta[(s >> 1) + cls[p[i++]]];
      if (s & 1u) [[unlikely]] {
        *state = s;
        return i;
      }
    }
    *state = s;
    return 0;
  }

  uint8_t class_of_[256];
  uint32_t num_classes_ = 1;
  // delta_[row + class] = (next_row << 1) | has_output, where row = state * num_classes_.
  std::vector<uint32_t> delta_;
  // The same table in 16 bits when it fits (keeps the hot part of the automaton in L1); when
  // non-empty it is used instead of delta_.
  std::vector<uint16_t> delta16_;
  std::vector<uint32_t> out_begin_;  // per state, into out_; size num_states + 1
  std::vector<uint32_t> out_;
};

}  // namespace contextd::scrub::internal
