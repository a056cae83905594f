#include "scrub/internal/aho_corasick.h"

#include <algorithm>
#include <deque>

namespace contextd::scrub::internal {
namespace {
unsigned char Fold(unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
}  // namespace

AhoCorasick::AhoCorasick(const std::vector<std::string>& patterns) {
  // Byte classes: class 0 for bytes that occur in no pattern, one class per folded byte otherwise.
  for (unsigned c = 0; c < 256; ++c) class_of_[c] = 0;
  uint8_t folded_class[256] = {0};
  num_classes_ = 1;
  for (const std::string& p : patterns) {
    for (unsigned char c : p) {
      unsigned char f = Fold(c);
      if (folded_class[f] == 0) folded_class[f] = static_cast<uint8_t>(num_classes_++);
    }
  }
  for (unsigned c = 0; c < 256; ++c)
    class_of_[c] = folded_class[Fold(static_cast<unsigned char>(c))];
  const uint32_t nc = num_classes_;

  // Trie with goto table (-1 = none), then BFS for failure links into a full DFA.
  std::vector<int32_t> go(nc, -1);
  std::vector<std::vector<uint32_t>> outs(1);
  for (uint32_t id = 0; id < patterns.size(); ++id) {
    if (patterns[id].empty()) continue;
    max_len_ = std::max(max_len_, patterns[id].size());
    int32_t s = 0;
    for (unsigned char c : patterns[id]) {
      uint32_t k = class_of_[c];
      if (go[s * nc + k] < 0) {
        int32_t next = static_cast<int32_t>(outs.size());
        outs.emplace_back();
        go.resize(go.size() + nc, -1);
        go[s * nc + k] = next;
      }
      s = go[s * nc + k];
    }
    outs[s].push_back(id);
  }
  const size_t num_states = outs.size();
  std::vector<int32_t> fail(num_states, 0);
  std::deque<int32_t> queue;
  for (uint32_t k = 0; k < nc; ++k) {
    int32_t t = go[k];
    if (t < 0) {
      go[k] = 0;
    } else {
      fail[t] = 0;
      queue.push_back(t);
    }
  }
  while (!queue.empty()) {
    int32_t s = queue.front();
    queue.pop_front();
    const auto& fo = outs[fail[s]];
    outs[s].insert(outs[s].end(), fo.begin(), fo.end());
    for (uint32_t k = 0; k < nc; ++k) {
      int32_t t = go[s * nc + k];
      if (t < 0) {
        go[s * nc + k] = go[fail[s] * nc + k];
      } else {
        fail[t] = go[fail[s] * nc + k];
        queue.push_back(t);
      }
    }
  }
  // Renumber the states: those without output first, so that "has output" is "row >= first
  // output row" and the table entries are bare rows (16 bits go twice as far as with a flag bit).
  std::vector<uint32_t> order;  // new index -> old state
  for (size_t st = 0; st < num_states; ++st) {
    if (outs[st].empty()) order.push_back(static_cast<uint32_t>(st));
  }
  const size_t quiet = order.size();  // state 0 (the root) has no output: it stays 0
  for (size_t st = 0; st < num_states; ++st) {
    if (!outs[st].empty()) order.push_back(static_cast<uint32_t>(st));
  }
  std::vector<uint32_t> index(num_states);
  for (size_t i = 0; i < num_states; ++i) index[order[i]] = static_cast<uint32_t>(i);
  first_output_row_ = static_cast<uint32_t>(quiet * nc);
  delta_.resize(num_states * nc);
  for (size_t i = 0; i < num_states; ++i) {
    for (uint32_t k = 0; k < nc; ++k) {
      delta_[i * nc + k] = index[static_cast<uint32_t>(go[order[i] * nc + k])] * nc;
    }
  }
  if (num_states * nc <= 65536) {
    delta16_.assign(delta_.begin(), delta_.end());
    delta_.clear();
  }
  out_begin_.resize(num_states + 1);
  for (size_t i = 0; i < num_states; ++i) {
    out_begin_[i] = static_cast<uint32_t>(out_.size());
    out_.insert(out_.end(), outs[order[i]].begin(), outs[order[i]].end());
  }
  out_begin_[num_states] = static_cast<uint32_t>(out_.size());
}

}  // namespace contextd::scrub::internal
