// Fuzz target: WithheldRewrite::Parse on arbitrary bytes never crashes and what it accepts
// serializes back to an equal value; AlignRedactions on arbitrary (original, scrubbed) pairs never
// crashes and what it returns rebuilds `scrubbed`; ApplyRedactions never crashes. The other
// stored decision read from text, LessonRecord::Parse (lessons.h), gets the same round trip, and
// TaskText never crashes and never keeps a whole <system-reminder> span.
// Input: the first byte splits the rest into `original` and `scrubbed`.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "model/lessons.h"
#include "model/withheld_rewrite.h"

using contextd::model::AlignRedactions;
using contextd::model::ApplyRedactions;
using contextd::model::LessonRecord;
using contextd::model::TaskText;
using contextd::model::WithheldRewrite;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto parsed = WithheldRewrite::Parse(in);
  if (parsed.ok()) {
    auto again = WithheldRewrite::Parse(parsed->Serialize());
    if (!again.ok() || again->digest != parsed->digest || again->spans != parsed->spans)
      std::abort();
    if (parsed->spans) {
      for (const auto& edits : *parsed->spans) (void)ApplyRedactions(in, edits);
    }
  }
  if (auto lesson = LessonRecord::Parse(in); lesson.ok()) {
    auto again = LessonRecord::Parse(lesson->Serialize());
    if (!again.ok() || again->block != lesson->block || again->ids != lesson->ids) std::abort();
  }
  std::string task = TaskText({std::string(in)});
  const size_t open = task.find("<system-reminder>");
  if (open != std::string::npos && task.find("</system-reminder>", open) != std::string::npos) {
    std::abort();
  }
  if (size == 0) return 0;
  size_t cut = 1 + static_cast<size_t>(data[0]) * (size - 1) / 256;
  std::string_view original = in.substr(1, cut - 1);
  std::string_view scrubbed = in.substr(cut);
  if (auto edits = AlignRedactions(original, scrubbed)) {
    auto applied = ApplyRedactions(original, *edits);
    if (!applied.ok() || *applied != scrubbed) std::abort();
  }
  return 0;
}
