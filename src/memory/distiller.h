// Distillation of a finished branch into candidate memories: the BranchTrace a distiller reads,
// the Distiller interface (an OpenAI-compatible model implements it in server/), and the
// StructuralDistiller used without a model or when the model fails. Distillers are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memory/memory_item.h"

namespace contextd::memory {

// One thing that happened inside the branch (already scrubbed, private spans withheld).
struct TraceEvent {
  std::string kind;   // "tool_call", "tool_result", "warning", ...
  std::string label;  // tool name
  std::string text;   // payload (arguments or result), possibly truncated
  bool is_error = false;
};

// Everything a distiller may use about one finished branch.
struct BranchTrace {
  std::string tenant;
  std::string project;
  std::string session_id;
  std::string branch_id;
  std::string description;
  std::string prompt;
  std::string summary;    // the return message, or the automatic partial summary
  bool succeeded = true;  // completed by branch_return; false when force-returned
  std::string finish_reason;
  std::vector<TraceEvent> events;  // in order
};

// A candidate memory: texts and outcome only; the bank fills identity, scope and source.
struct Candidate {
  std::string title;
  std::string description;
  std::string content;
  Outcome outcome = Outcome::kSuccess;
  std::vector<std::string> tags;
};

// At most this many candidates per branch.
inline constexpr size_t kMaxCandidates = 3;

class Distiller {
 public:
  virtual ~Distiller() = default;
  // Up to kMaxCandidates candidates for `trace`. Any error (unreachable endpoint, bad answer)
  // makes the bank fall back to the structural distiller with a warning.
  virtual absl::StatusOr<std::vector<Candidate>> Distill(const BranchTrace& trace) = 0;
  // For logs and history: "structural", "model <name>".
  virtual std::string name() const = 0;
};

// Without a model: what was looked at, what was run, what the summary concluded, errors met.
// A completed branch yields a success item, plus a failure item naming the errors it met on the
// way (if any); a force-returned branch yields one failure item ("what to avoid").
class StructuralDistiller final : public Distiller {
 public:
  absl::StatusOr<std::vector<Candidate>> Distill(const BranchTrace& trace) override;
  std::string name() const override { return "structural"; }
};

}  // namespace contextd::memory
