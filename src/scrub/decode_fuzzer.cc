// Fuzz target: the decoder (internal/decode.h) on arbitrary bytes. Candidates lie in range, in
// order, disjoint, and their runs are exactly the maximal runs a byte-at-a-time scan finds; a
// decoding that is accepted is text and shorter than its encoding; decoded views, level after
// level, cover their text with contiguous pieces whose original spans stay in the input and
// never go backwards, and ToOriginal maps every span inside [0, input size).
// Input: byte 0 picks the depth (1-4) and the probe spans; the rest is the text.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "scrub/internal/decode.h"

namespace {

using contextd::scrub::internal::Candidate;
using contextd::scrub::internal::DecodeCandidate;
using contextd::scrub::internal::DecodedSegment;
using contextd::scrub::internal::DecodedView;
using contextd::scrub::internal::Encoding;
using contextd::scrub::internal::FindCandidates;
using contextd::scrub::internal::IsText;
using contextd::scrub::internal::kMinBase64Run;

void Check(bool ok) {
  if (!ok) std::abort();
}

bool RunChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/' || c == '-' || c == '_';
}

void CheckView(const DecodedView& v, size_t input_size, uint8_t probe) {
  size_t at = 0, last_start = 0, last_end = 0;
  for (const auto& p : v.pieces()) {
    Check(p.view_start == at && p.view_end > p.view_start);
    Check(p.orig_start < p.orig_end && p.orig_end <= input_size);
    Check(p.orig_start >= last_start && p.orig_end >= last_end);
    if (p.encodings == 0) Check(p.orig_end - p.orig_start == p.view_end - p.view_start);
    last_start = p.orig_start;
    last_end = p.orig_end;
    at = p.view_end;
  }
  Check(at == v.text().size());
  const size_t n = v.text().size();
  if (n == 0) return;
  for (size_t a = probe % n; a < n; a += 1 + probe) {
    const size_t b = std::min(n, a + 1 + probe % 7);
    const auto [os, oe] = v.ToOriginal(a, b);
    Check(os < oe && oe <= input_size);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t control = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<Candidate> candidates;
  FindCandidates(text, 0, text.size(), {}, &candidates);
  // Runs against a byte-at-a-time scan.
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = 0; i < text.size();) {
    if (!RunChar(text[i])) {
      ++i;
      continue;
    }
    size_t e = i;
    while (e < text.size() && RunChar(text[e])) ++e;
    if (e - i >= kMinBase64Run) runs.emplace_back(i, e);
    i = e;
  }
  size_t ri = 0, prev_end = 0;
  std::vector<DecodedSegment> segments;
  for (const Candidate& c : candidates) {
    Check(c.start < c.end && c.end <= text.size() && c.start >= prev_end);
    prev_end = c.end;
    if (c.kind != Encoding::kPercent) {
      // Each base64/hex candidate is one of the runs (a leading "%XX" escape's digits cut
      // off, '=' padding added), in order.
      while (ri < runs.size() && runs[ri].second < c.start) ++ri;
      Check(ri < runs.size() && runs[ri].first <= c.start && runs[ri].second <= c.end);
      ++ri;
    }
    std::string decoded;
    if (DecodeCandidate(text, c, &decoded)) {
      Check(!decoded.empty() && decoded.size() < c.end - c.start && IsText(decoded));
      segments.push_back({c.start, c.end, c.kind, decoded});
    }
  }
  // Every run long enough is a candidate, unless a percent escape ate its head.
  size_t base64_candidates = 0;
  for (const Candidate& c : candidates) base64_candidates += c.kind != Encoding::kPercent;
  Check(base64_candidates <= runs.size());
  DecodedView v = DecodedView::Make(text, 0, text.size(), segments);
  CheckView(v, text.size(), control);
  const int depth = 1 + control % 4;
  while (v.level() < depth) {
    DecodedView next;
    if (!v.DecodeNext({}, &next)) break;
    Check(next.level() == v.level() + 1 && next.text().size() < v.text().size());
    v = std::move(next);
    CheckView(v, text.size(), control);
  }
  return 0;
}
