// Redaction: markers, the scan-and-redact loop to a fixpoint, findings (see engine.h).

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scrub/internal/decode.h"
#include "scrub/internal/engine.h"
#include "scrub/internal/sv.h"

namespace contextd::scrub::internal {

void Engine::FindMarkers(std::string_view text, std::vector<Span>* markers) {
  for (size_t pos = text.find(kMarkerPrefix); pos != std::string_view::npos;
       pos = text.find(kMarkerPrefix, pos + 1)) {
    size_t len = 0;
    if (ParseMarker(text, pos, &len)) markers->emplace_back(pos, pos + len);
  }
}

std::vector<Hit> Engine::ClipAroundMarkers(std::vector<Hit> in, const std::vector<Span>& m) {
  std::vector<Hit> out;
  for (Hit& f : in) {
    auto it = std::upper_bound(m.begin(), m.end(), std::make_pair(f.start, SIZE_MAX));
    if (it != m.begin()) --it;
    size_t cur = f.start;
    bool clipped = false;
    for (; it != m.end() && it->first < f.end; ++it) {
      if (it->second <= cur) continue;
      clipped = true;
      if (it->first > cur && it->first - cur >= kMinClippedPiece) {
        Hit p = f;
        p.start = cur;
        p.end = it->first;
        out.push_back(p);
      }
      cur = std::max(cur, it->second);
    }
    if (!clipped) {
      out.push_back(f);
    } else if (cur < f.end && f.end - cur >= kMinClippedPiece) {
      f.start = cur;
      out.push_back(f);
    }
  }
  std::sort(out.begin(), out.end(), HitBefore);
  return out;
}

std::string Engine::ScrubText(std::string_view text, std::string_view path,
                              std::vector<Hit>* first) const {
  std::vector<std::pair<size_t, size_t>> markers;
  std::vector<KeywordHit> wide_hits, lead_hits;
  *first = ScanOnce(text, path, &markers, nullptr, &wide_hits, &lead_hits);
  // -- encoded secrets (decoded_scan.cc): findings in decoded segments join each pass's --
  AddDecodedHits(text, path, markers, nullptr, first);
  if (first->empty()) return std::string(text);
  std::vector<std::pair<size_t, size_t>> inserted, replaced;
  std::string out = Redact(text, *first, &inserted, &replaced);
  // Redaction changes the context of nearby text; repeat until nothing more is found so that
  // the output is a fixpoint (idempotence). Text away from the new markers is unchanged and was
  // already scanned, so later passes only look at keyword hits near a new marker.
  for (int pass = 1; pass < kMaxPasses; ++pass) {
    std::vector<std::pair<size_t, size_t>> dirty = DirtyRanges(out, inserted);
    wide_hits = MapKeywordHits(wide_hits, keyword_len, max_keyword_len, replaced, inserted);
    if (!lead_hits.empty()) lead_hits = MapLeadHits(out, lead_hits, replaced, inserted);
    markers.clear();
    std::vector<Hit> more = ScanOnce(out, path, &markers, &dirty, &wide_hits, &lead_hits);
    AddDecodedHits(out, path, markers, &dirty, &more);  // -- encoded secrets --
    if (more.empty()) break;
    inserted.clear();
    replaced.clear();
    out = Redact(out, more, &inserted, &replaced);
  }
  return out;
}

std::vector<Finding> Engine::ToFindings(std::string_view text, const std::vector<Hit>& hits) const {
  std::vector<Finding> out;
  out.reserve(hits.size());
  size_t line = 1, at = 0;
  for (const Hit& h : hits) {
    line += std::count(text.begin() + at, text.begin() + h.start, '\n');
    at = h.start;
    Finding f;
    f.rule_id = rules[h.rule].id;
    f.start = h.start;
    f.end = h.end;
    f.match_start = h.match_start;
    f.match_end = h.match_end;
    f.line = line;
    f.entropy = h.entropy >= 0 ? h.entropy : ShannonEntropy(text.substr(h.start, h.end - h.start));
    f.tags = rules[h.rule].tags;
    // -- encoded secrets: gitleaks' tags for a finding in decoded text --
    if (h.encodings != 0) {
      for (Encoding e : {Encoding::kPercent, Encoding::kHex, Encoding::kBase64}) {
        if ((h.encodings & static_cast<uint8_t>(e)) != 0) {
          f.tags.push_back(absl::StrCat("decoded:", Av(EncodingName(e))));
        }
      }
      f.tags.push_back(absl::StrCat("decode-depth:", h.decode_depth));
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string Engine::Redact(std::string_view text, const std::vector<Hit>& found,
                           std::vector<Span>* inserted, std::vector<Span>* replaced) const {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  size_t i = 0;
  while (i < found.size()) {
    size_t s = found[i].start, e = found[i].end;
    const std::string& id = rules[found[i].rule].marker_id;
    size_t j = i + 1;
    while (j < found.size() && found[j].start < e) {
      e = std::max(e, found[j].end);
      ++j;
    }
    out.append(text.substr(pos, s - pos));
    std::string_view secret = text.substr(s, e - s);
    size_t keep = std::min<size_t>(4, secret.size() / 4);
    size_t p = 0;
    while (p < keep && IsPreviewChar(secret[p])) ++p;
    const size_t marker_start = out.size();
    absl::StrAppend(&out, Av(kMarkerPrefix), id, ":", Av(secret.substr(0, p)), "]");
    if (inserted != nullptr) inserted->emplace_back(marker_start, out.size());
    if (replaced != nullptr) replaced->emplace_back(s, e);
    pos = e;
    i = j;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace contextd::scrub::internal

namespace contextd::scrub {

bool ParseMarker(std::string_view text, size_t pos, size_t* len) {
  if (text.compare(pos, internal::kMarkerPrefix.size(), internal::kMarkerPrefix) != 0) return false;
  size_t i = pos + internal::kMarkerPrefix.size();
  size_t id_len = 0;
  while (i < text.size() && internal::IsIdChar(text[i]) && id_len < internal::kMaxMarkerId) {
    ++i;
    ++id_len;
  }
  if (id_len == 0 || i >= text.size() || text[i] != ':') return false;
  ++i;
  size_t p = 0;
  while (i < text.size() && p < 4 && internal::IsPreviewChar(text[i])) {
    ++i;
    ++p;
  }
  if (i >= text.size() || text[i] != ']') return false;
  *len = i + 1 - pos;
  return true;
}

}  // namespace contextd::scrub
