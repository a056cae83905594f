#include "tokens/internal/rank_table.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace contextd::tokens::internal {
namespace {

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with padding; false on any malformation.
bool DecodeBase64(std::string_view in, std::string* out) {
  out->clear();
  if (in.empty() || in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return false;
      v[k] = Base64Value(c);
      if (v[k] < 0) return false;
    }
    uint32_t w = (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | v[3];
    out->push_back(static_cast<char>(w >> 16));
    if (pad < 2) out->push_back(static_cast<char>((w >> 8) & 0xFF));
    if (pad < 1) out->push_back(static_cast<char>(w & 0xFF));
  }
  return true;
}

}  // namespace

absl::StatusOr<RankTable> RankTable::Parse(std::string_view file) {
  std::vector<std::pair<uint32_t, std::string>> entries;
  entries.reserve(file.size() / 12);
  size_t line_no = 0;
  std::string bytes;
  while (!file.empty()) {
    size_t nl = file.find('\n');
    std::string_view line = file.substr(0, nl);
    file.remove_prefix(nl == std::string_view::npos ? file.size() : nl + 1);
    ++line_no;
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("rank file line ", line_no, ": no space"));
    }
    if (!DecodeBase64(line.substr(0, sp), &bytes)) {
      return absl::InvalidArgumentError(absl::StrCat("rank file line ", line_no, ": bad base64"));
    }
    std::string_view num = line.substr(sp + 1);
    uint32_t rank = 0;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), rank);
    if (ec != std::errc() || ptr != num.data() + num.size() || rank >= kNoRank - 1) {
      return absl::InvalidArgumentError(absl::StrCat("rank file line ", line_no, ": bad rank"));
    }
    entries.emplace_back(rank, bytes);
  }
  if (entries.empty()) return absl::InvalidArgumentError("rank file is empty");
  std::sort(entries.begin(), entries.end());
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].first == entries[i - 1].first) {
      return absl::InvalidArgumentError(absl::StrCat("rank ", entries[i].first, " repeats"));
    }
  }

  RankTable t;
  t.count_ = entries.size();
  uint32_t end = entries.back().first + 1;
  t.offsets_.assign(end + 1, 0);
  size_t total = 0;
  for (const auto& e : entries) total += e.second.size();
  t.arena_.reserve(total);
  size_t next = 0;
  for (uint32_t r = 0; r < end; ++r) {
    t.offsets_[r] = static_cast<uint32_t>(t.arena_.size());
    if (next < entries.size() && entries[next].first == r) {
      t.arena_ += entries[next].second;
      ++next;
    }
  }
  t.offsets_[end] = static_cast<uint32_t>(t.arena_.size());

  size_t cap = 1;
  int bits = 0;
  while (cap < t.count_ * 2) {
    cap <<= 1;
    ++bits;
  }
  t.slots_.assign(cap, Slot{0, 0, 0});
  t.tags_.assign(cap, 0);
  t.mask_ = cap - 1;
  t.shift_ = 64 - bits;
  std::fill(std::begin(t.single_), std::end(t.single_), kNoRank);
  t.pairs_.assign(65536, kNoRank);
  for (const auto& [rank, tok] : entries) {
    const auto* p = reinterpret_cast<const uint8_t*>(tok.data());
    if (tok.size() == 1) {
      if (t.single_[p[0]] != kNoRank) {
        return absl::InvalidArgumentError(absl::StrCat("token of rank ", rank, " repeats"));
      }
      t.single_[p[0]] = rank;
      continue;
    }
    if (tok.size() == 2) {
      // Two-byte tokens are looked up by direct index; Parse still hashes them to catch repeats.
      t.pairs_[(p[0] << 8) | p[1]] = rank;
    }
    uint64_t head;
    uint64_t h = Hash(p, tok.size(), &head);
    size_t i = h >> t.shift_;  // bits >= 1: cap >= 2
    for (;;) {
      Slot& slot = t.slots_[i];
      if (slot.len == 0) {
        slot = Slot{head, rank, static_cast<uint32_t>(tok.size())};
        t.tags_[i] = Tag(h);
        break;
      }
      if (slot.head == head && slot.len == tok.size() && t.Bytes(slot.rank) == tok) {
        return absl::InvalidArgumentError(absl::StrCat("token of rank ", rank, " repeats"));
      }
      i = (i + 1) & t.mask_;
    }
  }
  for (int b = 0; b < 256; ++b) {
    if (t.single_[b] == kNoRank) {
      return absl::InvalidArgumentError(absl::StrCat("rank file lacks the single byte ", b));
    }
  }
  return t;
}

}  // namespace contextd::tokens::internal
