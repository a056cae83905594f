#include "model/withheld_rewrite.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/foreign_text.h"
#include "model/transcript.h"
#include "nlohmann/json.hpp"
#include "scrub/rule_scrubber.h"

namespace contextd::model {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kMarkerPrefix = "[REDACTED:";
constexpr std::string_view kValuePrefix = "#withheld-rewrite/1 ";
constexpr size_t kNone = std::string_view::npos;

// A redaction marker in the scrubbed text.
struct Marker {
  size_t pos = 0;
  size_t len = 0;
  std::string_view rule;
  std::string_view preview;
};

std::vector<Marker> FindMarkers(std::string_view s) {
  std::vector<Marker> out;
  for (size_t pos = s.find(kMarkerPrefix); pos != kNone; pos = s.find(kMarkerPrefix, pos)) {
    size_t len = 0;
    if (!scrub::ParseMarker(s, pos, &len)) {
      ++pos;
      continue;
    }
    // "[REDACTED:" rule ":" preview "]": neither part holds a ':'.
    std::string_view inner = s.substr(pos + kMarkerPrefix.size(), len - kMarkerPrefix.size() - 1);
    size_t colon = inner.rfind(':');
    out.push_back({pos, len, inner.substr(0, colon), inner.substr(colon + 1)});
    pos += len;
  }
  return out;
}

bool StartsAt(std::string_view text, size_t at, std::string_view part) {
  return at <= text.size() && text.size() - at >= part.size() &&
         text.compare(at, part.size(), part) == 0;
}

}  // namespace

absl::StatusOr<std::string> ApplyRedactions(std::string_view original,
                                            const std::vector<RedactionEdit>& edits) {
  std::string out;
  out.reserve(original.size());
  size_t at = 0;
  for (const RedactionEdit& e : edits) {
    if (e.begin < at || e.end <= e.begin || e.end > original.size() ||
        e.preview > e.end - e.begin) {
      return absl::InvalidArgumentError(absl::StrCat("redaction [", e.begin, ", ", e.end,
                                                     ") does not fit a text of ", original.size(),
                                                     " bytes after offset ", at));
    }
    out.append(original.substr(at, e.begin - at));
    out.append(kMarkerPrefix).append(e.rule).append(":");
    out.append(original.substr(e.begin, e.preview)).append("]");
    at = e.end;
  }
  out.append(original.substr(at));
  return out;
}

std::optional<std::vector<RedactionEdit>> AlignRedactions(std::string_view original,
                                                          std::string_view scrubbed) {
  if (original == scrubbed) return std::vector<RedactionEdit>{};
  const std::vector<Marker> markers = FindMarkers(scrubbed);
  if (markers.empty()) return std::nullopt;
  auto segment_end = [&](size_t k) {
    return k < markers.size() ? markers[k].pos : scrubbed.size();
  };
  // Depth-first search over where each marker's redaction ends in `original` (or whether the
  // marker was in `original` already), with explicit choice points; bounded in bytes looked at.
  struct Choice {
    size_t k = 0;      // the marker
    size_t i = 0;      // where it starts in `original`
    size_t edits = 0;  // edits made before it
    bool kept_tried = false;
    size_t next = 0;  // the next redaction end to try
  };
  std::vector<Choice> stack;
  std::vector<RedactionEdit> edits;
  int64_t budget = static_cast<int64_t>(16 * (original.size() + scrubbed.size()) + (1 << 20));
  size_t i = 0, j = 0, k = 0;
  while (true) {
    // Forward: the text before marker k was kept as it was.
    std::string_view kept = scrubbed.substr(j, segment_end(k) - j);
    budget -= static_cast<int64_t>(kept.size()) + 1;
    if (StartsAt(original, i, kept)) {
      i += kept.size();
      if (k == markers.size()) {
        if (i == original.size()) {
          auto applied = ApplyRedactions(original, edits);
          if (applied.ok() && *applied == scrubbed) return edits;
          return std::nullopt;
        }
      } else {
        stack.push_back({k, i, edits.size(), false, 0});
      }
    }
    // The next untried choice, backtracking as needed.
    bool advanced = false;
    while (!stack.empty() && !advanced) {
      if (budget < 0) return std::nullopt;
      Choice& c = stack.back();
      const Marker& m = markers[c.k];
      edits.resize(c.edits);
      const size_t after = m.pos + m.len;
      if (!c.kept_tried) {
        c.kept_tried = true;
        c.next = c.i + std::max<size_t>(1, m.preview.size());
        if (StartsAt(original, c.i, scrubbed.substr(m.pos, m.len))) {
          i = c.i + m.len;
          j = after;
          k = c.k + 1;
          advanced = true;
          continue;
        }
      }
      if (c.next == kNone || !StartsAt(original, c.i, m.preview)) {
        stack.pop_back();
        continue;
      }
      // A redaction of original[c.i, end): the kept text after the marker starts at `end`.
      std::string_view next_kept = scrubbed.substr(after, segment_end(c.k + 1) - after);
      size_t end = kNone;
      if (c.k + 1 == markers.size()) {
        // The rest is kept: the only possible end.
        if (original.size() >= next_kept.size() && original.size() - next_kept.size() >= c.next) {
          end = original.size() - next_kept.size();
        }
        c.next = kNone;
      } else if (c.next <= original.size()) {
        end = original.find(next_kept, c.next);
        budget -= static_cast<int64_t>((end == kNone ? original.size() : end) - c.next +
                                       next_kept.size()) +
                  1;
        c.next = end == kNone ? kNone : end + 1;
      } else {
        c.next = kNone;
      }
      if (end == kNone) {
        stack.pop_back();
        continue;
      }
      edits.push_back({c.i, end, m.preview.size(), std::string(m.rule)});
      i = end;
      j = after;
      k = c.k + 1;
      advanced = true;
    }
    if (!advanced) return std::nullopt;
  }
}

std::string WithheldRewrite::Serialize() const {
  Json j;
  j["digest"] = digest;
  if (spans) {
    Json all = Json::array();
    for (const std::vector<RedactionEdit>& span : *spans) {
      Json edits = Json::array();
      for (const RedactionEdit& e : span) edits.push_back({e.begin, e.end, e.preview, e.rule});
      all.push_back(std::move(edits));
    }
    j["spans"] = std::move(all);
  } else {
    j["spans"] = nullptr;
  }
  return std::string(kValuePrefix) + base::DumpJson(j);
}

bool WithheldRewrite::Is(std::string_view value) {
  return value.substr(0, kValuePrefix.size()) == kValuePrefix;
}

absl::StatusOr<WithheldRewrite> WithheldRewrite::Parse(std::string_view value) {
  auto bad = [] { return absl::InvalidArgumentError("malformed withheld block rewrite"); };
  if (!Is(value)) return bad();
  Json j = Json::parse(value.substr(kValuePrefix.size()), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("digest") || !j["digest"].is_string() || !j.contains("spans")) {
    return bad();
  }
  WithheldRewrite out;
  out.digest = j["digest"].get<std::string>();
  const Json& spans = j["spans"];
  if (spans.is_null()) return out;
  if (!spans.is_array()) return bad();
  out.spans.emplace();
  for (const Json& span : spans) {
    if (!span.is_array()) return bad();
    std::vector<RedactionEdit>& edits = out.spans->emplace_back();
    for (const Json& e : span) {
      if (!e.is_array() || e.size() != 4 || !e[0].is_number_unsigned() ||
          !e[1].is_number_unsigned() || !e[2].is_number_unsigned() || !e[3].is_string()) {
        return bad();
      }
      edits.push_back(
          {e[0].get<size_t>(), e[1].get<size_t>(), e[2].get<size_t>(), e[3].get<std::string>()});
    }
  }
  return out;
}

std::string BlockDigest(std::string_view block_value) {
  return Hex(Digest({"withheld-block", block_value}));
}

}  // namespace contextd::model
