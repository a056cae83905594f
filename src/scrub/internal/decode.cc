// Encoded segments: candidates, decoders, decoded views (see decode.h).

#include "scrub/internal/decode.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <iterator>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace contextd::scrub::internal {
namespace {

// Byte classes.
constexpr uint8_t kRunChar = 1;     // [A-Za-z0-9+/_-]: may be part of a base64 run
constexpr uint8_t kHexChar = 2;     // [0-9A-Fa-f]
constexpr uint8_t kLikelyChar = 4;  // [0-9+/_-]: base64 of text nearly always has one
constexpr uint8_t kStdChar = 8;     // + and /: standard alphabet only
constexpr uint8_t kUrlChar = 16;    // - and _: URL-safe alphabet only
constexpr uint8_t kDigit = 32;      // [0-9]

struct Tables {
  std::array<uint8_t, 256> cls{};
  std::array<uint8_t, 256> b64{};  // sextet value, 0xFF when not in either alphabet
  std::array<uint8_t, 256> hex{};  // nibble value, 0xFF when not a hex digit
};

constexpr Tables MakeTables() {
  Tables t;
  for (int c = 0; c < 256; ++c) {
    t.b64[c] = 0xFF;
    t.hex[c] = 0xFF;
  }
  for (int c = 'A'; c <= 'Z'; ++c) {
    t.cls[c] |= kRunChar;
    t.b64[c] = static_cast<uint8_t>(c - 'A');
  }
  for (int c = 'a'; c <= 'z'; ++c) {
    t.cls[c] |= kRunChar;
    t.b64[c] = static_cast<uint8_t>(c - 'a' + 26);
  }
  for (int c = '0'; c <= '9'; ++c) {
    t.cls[c] |= kRunChar | kHexChar | kLikelyChar | kDigit;
    t.b64[c] = static_cast<uint8_t>(c - '0' + 52);
    t.hex[c] = static_cast<uint8_t>(c - '0');
  }
  for (int c = 'a'; c <= 'f'; ++c) {
    t.cls[c] |= kHexChar;
    t.hex[c] = static_cast<uint8_t>(c - 'a' + 10);
    t.cls[c - 32] |= kHexChar;
    t.hex[c - 32] = static_cast<uint8_t>(c - 'a' + 10);
  }
  t.cls['+'] |= kRunChar | kLikelyChar | kStdChar;
  t.cls['/'] |= kRunChar | kLikelyChar | kStdChar;
  t.cls['-'] |= kRunChar | kLikelyChar | kUrlChar;
  t.cls['_'] |= kRunChar | kLikelyChar | kUrlChar;
  t.b64['+'] = 62;
  t.b64['-'] = 62;
  t.b64['/'] = 63;
  t.b64['_'] = 63;
  return t;
}

constexpr Tables kTables = MakeTables();

inline uint8_t Cls(char c) { return kTables.cls[static_cast<unsigned char>(c)]; }
inline bool IsHex(char c) { return (Cls(c) & kHexChar) != 0; }

// Incremental IsText: Push() each byte, then Complete().
class TextCheck {
 public:
  bool Push(unsigned char c) {
    if (need_ == 0) {
      if (c < 0x80) return (c >= 0x09 && c <= 0x0d) || (c >= 0x20 && c < 0x7f);
      if (c >= 0xC2 && c <= 0xDF) {
        Start(1, c & 0x1F, 0x80);
      } else if (c >= 0xE0 && c <= 0xEF) {
        Start(2, c & 0x0F, 0x800);
      } else if (c >= 0xF0 && c <= 0xF4) {
        Start(3, c & 0x07, 0x10000);
      } else {
        return false;
      }
      return true;
    }
    if ((c & 0xC0) != 0x80) return false;
    cp_ = (cp_ << 6) | (c & 0x3F);
    if (--need_ > 0) return true;
    return cp_ >= min_ && cp_ <= 0x10FFFF && !(cp_ >= 0xD800 && cp_ <= 0xDFFF) &&
           !(cp_ >= 0x80 && cp_ <= 0x9F);
  }
  bool Complete() const { return need_ == 0; }

 private:
  void Start(int need, uint32_t bits, uint32_t min) {
    need_ = need;
    cp_ = bits;
    min_ = min;
  }
  int need_ = 0;
  uint32_t cp_ = 0, min_ = 0;
};

#if defined(__SSE2__)
// Bit i set: p[i] is a run character, for 16 bytes.
inline uint32_t RunMask16(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // x in [lo, lo + w) as one signed compare: x + (128 - lo) < w - 128 (bytes wrap).
  auto in_range = [](__m128i x, int lo, int w) {
    return _mm_cmplt_epi8(_mm_add_epi8(x, _mm_set1_epi8(static_cast<char>(128 - lo))),
                          _mm_set1_epi8(static_cast<char>(w - 128)));
  };
  const __m128i letter = in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 26);
  // '+' .. '9' is "+,-./0123456789": all but ',' and '.', which are 0x2C | 0x02.
  const __m128i comma_dot =
      _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(static_cast<char>(0xFD))), _mm_set1_epi8(0x2C));
  const __m128i plus_to_nine = _mm_andnot_si128(comma_dot, in_range(v, '+', '9' - '+' + 1));
  const __m128i underscore = _mm_cmpeq_epi8(v, _mm_set1_epi8('_'));
  return static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, plus_to_nine), underscore)));
}
#endif

// Bit i set: p[i] is a run character ([A-Za-z0-9+/_-]); n <= 64 bytes, bits from n on clear.
inline uint64_t RunMask(const char* p, size_t n) {
#if defined(__SSE2__)
  if (n == 64) {
    return uint64_t{RunMask16(p)} | (uint64_t{RunMask16(p + 16)} << 16) |
           (uint64_t{RunMask16(p + 32)} << 32) | (uint64_t{RunMask16(p + 48)} << 48);
  }
  // The last bytes of a text: through a zeroed copy (texts are often short, and a byte loop
  // over their tail cost as much as the vector loop over the rest).
  alignas(16) char tail[64] = {};
  std::memcpy(tail, p, n);
  return RunMask(tail, 64) & ((uint64_t{1} << n) - 1);
#else
  uint64_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    m |= uint64_t{(Cls(p[i]) & kRunChar) != 0} << i;
  }
  return m;
#endif
}

// True when a "%XX" escape starts at `i`.
inline bool EscapeAt(std::string_view t, size_t i) {
  return i + 3 <= t.size() && t[i] == '%' && IsHex(t[i + 1]) && IsHex(t[i + 2]);
}

// True when [s, e) overlaps a span of `skip` (sorted, disjoint).
bool Overlaps(const std::vector<std::pair<size_t, size_t>>& skip, size_t s, size_t e) {
  if (skip.empty()) return false;
  auto it = std::lower_bound(skip.begin(), skip.end(), std::make_pair(e, size_t{0}));
  return it != skip.begin() && std::prev(it)->second > s;
}

inline uint8_t Bit(Encoding e) { return static_cast<uint8_t>(e); }

}  // namespace

std::string_view EncodingName(Encoding e) {
  switch (e) {
    case Encoding::kPercent:
      return "percent";
    case Encoding::kHex:
      return "hex";
    case Encoding::kBase64:
      return "base64";
  }
  return "";
}

bool IsText(std::string_view s) {
  TextCheck check;
  for (char c : s) {
    if (!check.Push(static_cast<unsigned char>(c))) return false;
  }
  return check.Complete();
}

bool DecodeBase64(std::string_view in, std::string* out) {
  size_t n = in.size();
  size_t pad = 0;
  while (n > 0 && in[n - 1] == '=') {
    --n;
    ++pad;
  }
  if (pad > 2 || n < kMinBase64Run || n % 4 == 1) return false;
  if (pad > 0 && (n + pad) % 4 != 0) return false;
  uint8_t seen = 0;
  TextCheck check;
  // Decodes as it goes and stops at the first byte that is not text: binary (the common case
  // among candidates) fails within the first few groups.
  auto sextet = [&](size_t i, uint8_t* v) {
    seen |= Cls(in[i]);
    *v = kTables.b64[static_cast<unsigned char>(in[i])];
    return *v != 0xFF;
  };
  auto emit = [&](uint32_t byte) {
    out->push_back(static_cast<char>(byte));
    return check.Push(static_cast<unsigned char>(byte));
  };
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint8_t a, b, c, d;
    if (!sextet(i, &a) || !sextet(i + 1, &b) || !sextet(i + 2, &c) || !sextet(i + 3, &d)) {
      return false;
    }
    const uint32_t v = (uint32_t{a} << 18) | (uint32_t{b} << 12) | (uint32_t{c} << 6) | d;
    if (!emit(v >> 16) || !emit((v >> 8) & 0xFF) || !emit(v & 0xFF)) return false;
  }
  const size_t rem = n - i;
  if (rem == 2) {
    uint8_t a, b;
    if (!sextet(i, &a) || !sextet(i + 1, &b) || (b & 0x0F) != 0) return false;
    if (!emit((uint32_t{a} << 2) | (b >> 4))) return false;
  } else if (rem == 3) {
    uint8_t a, b, c;
    if (!sextet(i, &a) || !sextet(i + 1, &b) || !sextet(i + 2, &c) || (c & 0x03) != 0) {
      return false;
    }
    const uint32_t v = (uint32_t{a} << 10) | (uint32_t{b} << 4) | (c >> 2);
    if (!emit(v >> 8) || !emit(v & 0xFF)) return false;
  }
  if ((seen & kStdChar) != 0 && (seen & kUrlChar) != 0) return false;  // two alphabets
  if ((seen & kLikelyChar) == 0) return false;                         // letters only
  return check.Complete();
}

bool DecodeHex(std::string_view in, std::string* out) {
  if (in.size() < kMinHexRun || in.size() % 2 != 0) return false;
  TextCheck check;
  bool digit = false;
  for (size_t i = 0; i < in.size(); i += 2) {
    const uint8_t hi = kTables.hex[static_cast<unsigned char>(in[i])];
    const uint8_t lo = kTables.hex[static_cast<unsigned char>(in[i + 1])];
    if (hi == 0xFF || lo == 0xFF) return false;
    digit |= ((Cls(in[i]) | Cls(in[i + 1])) & kDigit) != 0;
    const unsigned char byte = static_cast<unsigned char>((hi << 4) | lo);
    out->push_back(static_cast<char>(byte));
    if (!check.Push(byte)) return false;
  }
  return digit && check.Complete();
}

bool DecodePercent(std::string_view in, std::string* out) {
  if (in.empty() || in.size() % 3 != 0) return false;
  TextCheck check;
  for (size_t i = 0; i < in.size(); i += 3) {
    if (!EscapeAt(in, i)) return false;
    const unsigned char byte =
        static_cast<unsigned char>((kTables.hex[static_cast<unsigned char>(in[i + 1])] << 4) |
                                   kTables.hex[static_cast<unsigned char>(in[i + 2])]);
    out->push_back(static_cast<char>(byte));
    if (!check.Push(byte)) return false;
  }
  return check.Complete();
}

void FindCandidates(std::string_view text, size_t from, size_t to,
                    const std::vector<std::pair<size_t, size_t>>& skip,
                    std::vector<Candidate>* out) {
  to = std::min(to, text.size());
  if (from >= to) return;
  const size_t first = out->size();
  // Percent runs: '%' is rare outside URLs and format strings.
  std::vector<Candidate> percent;
  for (size_t i = from; i < to;) {
    const void* hit = std::memchr(text.data() + i, '%', to - i);
    if (hit == nullptr) break;
    size_t s = static_cast<const char*>(hit) - text.data();
    size_t e = s;
    while (e + 3 <= to && EscapeAt(text, e)) e += 3;
    if (e > s && !Overlaps(skip, s, e)) percent.push_back({s, e, Encoding::kPercent, false});
    i = e > s ? e : s + 1;
  }
  auto touches_percent_at = [&](size_t pos) { return pos + 3 <= to && EscapeAt(text, pos); };
  const char* t = text.data();
  auto on_run = [&](size_t s, size_t e) {
    bool deferred = false;
    // A run that starts with the two hex digits of a "%XX" escape: the escape belongs to the
    // percent run; the rest touches it.
    if (s > from && t[s - 1] == '%' && e - s >= 2 && IsHex(t[s]) && IsHex(t[s + 1])) {
      s += 2;
      deferred = true;
    }
    if (e - s < kMinBase64Run) return;
    bool all_hex = e - s >= kMinHexRun;
    for (size_t k = s; all_hex && k < e; ++k) all_hex = IsHex(t[k]);
    size_t end = e;
    if (!all_hex) {
      while (end < to && end - e < 3 && t[end] == '=') ++end;
    }
    deferred |= touches_percent_at(end);
    if (Overlaps(skip, s, end)) return;
    out->push_back({s, end, all_hex ? Encoding::kHex : Encoding::kBase64, deferred});
  };
  // Runs of base64 characters of at least kMinBase64Run, 64 bytes at a time: a bit mask of the
  // run characters (RunMask), in which a run that long shows as 16 consecutive ones. Most runs
  // in text and code are words and identifiers much shorter than that.
  size_t base = from;
  size_t carry = 0;  // length of the run that ends at `base` (it started at base - carry)
  while (base < to) {
    const size_t n = std::min<size_t>(64, to - base);
    uint64_t m = RunMask(t + base, n);
    if (carry > 0) {
      const size_t lead = ~m == 0 ? 64 : static_cast<size_t>(__builtin_ctzll(~m));
      if (lead == 64) {
        carry += 64;
        base += 64;
        continue;
      }
      if (carry + lead >= kMinBase64Run) on_run(base - carry, base + lead);
      carry = 0;
      m &= ~((uint64_t{1} << lead) - 1);
    }
    // Bit i of `a`: bits i..i+15 of m are all set (a run of 16 starts at i).
    uint64_t a = m & (m >> 1);
    a &= a >> 2;
    a &= a >> 4;
    a &= a >> 8;
    while (a != 0) {
      const int rs = __builtin_ctzll(a);
      const uint64_t rest = ~(m >> rs);
      const size_t len = rest == 0 ? 64 - rs : static_cast<size_t>(__builtin_ctzll(rest));
      if (rs + len >= 64) break;  // goes on into the next 64 bytes: carried
      on_run(base + rs, base + rs + len);
      const uint64_t run = ((uint64_t{1} << len) - 1) << rs;
      m &= ~run;
      a &= ~run;
    }
    if (n == 64 && (m >> 63) != 0) {
      carry = ~m == 0 ? 64 : static_cast<size_t>(__builtin_clzll(~m));
    }
    base += n;
  }
  if (carry >= kMinBase64Run) on_run(to - carry, to);
  if (percent.empty()) return;
  // Both lists are sorted by start and disjoint ('%' is not a run character): merge.
  std::vector<Candidate> runs(out->begin() + first, out->end());
  out->resize(first);
  std::merge(runs.begin(), runs.end(), percent.begin(), percent.end(), std::back_inserter(*out),
             [](const Candidate& a, const Candidate& b) { return a.start < b.start; });
}

bool DecodeCandidate(std::string_view text, const Candidate& c, std::string* out) {
  if (c.deferred) return false;
  const std::string_view in = text.substr(c.start, c.end - c.start);
  switch (c.kind) {
    case Encoding::kPercent:
      return DecodePercent(in, out);
    case Encoding::kHex:
      return DecodeHex(in, out);
    case Encoding::kBase64:
      return DecodeBase64(in, out);
  }
  return false;
}

DecodedView DecodedView::Make(std::string_view original, size_t from, size_t to,
                              const std::vector<DecodedSegment>& segments) {
  DecodedView v;
  v.level_ = 1;
  v.text_.reserve(to - from);
  size_t pos = from;
  auto copy = [&](size_t a, size_t b) {
    if (a >= b) return;
    const size_t vs = v.text_.size();
    v.text_.append(original.substr(a, b - a));
    v.pieces_.push_back({vs, v.text_.size(), a, b, 0, 0});
  };
  for (const DecodedSegment& seg : segments) {
    copy(pos, seg.start);
    v.AppendDecoded(seg.decoded, seg.start, seg.end, Bit(seg.kind));
    pos = seg.end;
  }
  copy(pos, to);
  return v;
}

void DecodedView::AppendDecoded(std::string_view decoded, size_t orig_start, size_t orig_end,
                                uint8_t encodings) {
  const size_t vs = text_.size();
  text_.append(decoded);
  pieces_.push_back(
      {vs, text_.size(), orig_start, orig_end, encodings, static_cast<uint8_t>(level_)});
}

void DecodedView::CopyFrom(const DecodedView& in, size_t a, size_t b) {
  if (a >= b) return;
  auto it = std::upper_bound(in.pieces_.begin(), in.pieces_.end(), a,
                             [](size_t v, const Piece& p) { return v < p.view_end; });
  for (; it != in.pieces_.end() && it->view_start < b; ++it) {
    const size_t x = std::max(a, it->view_start), y = std::min(b, it->view_end);
    const size_t vs = text_.size();
    text_.append(in.text_, x, y - x);
    if (it->encodings == 0) {
      const size_t os = it->orig_start + (x - it->view_start);
      if (!pieces_.empty() && pieces_.back().encodings == 0 && pieces_.back().orig_end == os) {
        pieces_.back().view_end = text_.size();
        pieces_.back().orig_end = os + (y - x);
      } else {
        pieces_.push_back({vs, text_.size(), os, os + (y - x), 0, 0});
      }
    } else {
      pieces_.push_back({vs, text_.size(), it->orig_start, it->orig_end, it->encodings, it->depth});
    }
  }
}

bool DecodedView::DecodeNext(const std::vector<std::pair<size_t, size_t>>& skip,
                             DecodedView* next) const {
  std::vector<Candidate> candidates;
  FindCandidates(text_, 0, text_.size(), skip, &candidates);
  struct Found {
    size_t start, end;
    Encoding kind;
    std::string decoded;
  };
  std::vector<Found> found;
  size_t pi = 0;  // candidates come in order: the pieces before them can be passed for good
  for (const Candidate& c : candidates) {
    while (pi < pieces_.size() && pieces_[pi].view_end < c.start) ++pi;
    bool near_last_level = false;
    for (size_t k = pi; k < pieces_.size() && pieces_[k].view_start <= c.end; ++k) {
      near_last_level |= pieces_[k].depth == level_ && pieces_[k].encodings != 0;
    }
    if (!near_last_level) continue;
    std::string decoded;
    if (DecodeCandidate(text_, c, &decoded)) found.push_back({c.start, c.end, c.kind, decoded});
  }
  if (found.empty()) return false;
  DecodedView v;
  v.level_ = level_ + 1;
  v.text_.reserve(text_.size());
  size_t pos = 0;
  for (const Found& f : found) {
    v.CopyFrom(*this, pos, f.start);
    uint8_t encodings = 0;
    const auto [os, oe] = ToOriginal(f.start, f.end, &encodings);
    v.AppendDecoded(f.decoded, os, oe, encodings | Bit(f.kind));
    pos = f.end;
  }
  v.CopyFrom(*this, pos, text_.size());
  *next = std::move(v);
  return true;
}

std::pair<size_t, size_t> DecodedView::ToOriginal(size_t a, size_t b, uint8_t* encodings,
                                                  uint8_t* depth, bool* at_level) const {
  uint8_t enc = 0, deepest = 0;
  bool level = false;
  size_t os = SIZE_MAX, oe = 0;
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), a,
                             [](size_t v, const Piece& p) { return v < p.view_end; });
  for (; it != pieces_.end() && it->view_start < b; ++it) {
    size_t ps = it->orig_start, pe = it->orig_end;
    if (it->encodings == 0) {
      ps = it->orig_start + (std::max(a, it->view_start) - it->view_start);
      pe = it->orig_start + (std::min(b, it->view_end) - it->view_start);
    } else {
      enc |= it->encodings;
      deepest = std::max(deepest, it->depth);
      level |= it->depth == level_;
    }
    os = std::min(os, ps);
    oe = std::max(oe, pe);
  }
  if (encodings != nullptr) *encodings = enc;
  if (depth != nullptr) *depth = deepest;
  if (at_level != nullptr) *at_level = level;
  if (os == SIZE_MAX) return {0, 0};
  return {os, oe};
}

}  // namespace contextd::scrub::internal
