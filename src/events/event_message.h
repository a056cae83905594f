// EventMessage: one contextd event ready for NATS (its id, subject and JSON payload), built from a
// folding::BranchEvent or a memory::MemoryEvent. The payload schema is documented in
// docs/events.md (version field "v": 1). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "folding/events.h"
#include "memory/memory_bank.h"

namespace contextd::events {

// Payload schema version (the "v" member).
inline constexpr int kPayloadVersion = 1;

struct EventMessage {
  std::string id;       // unique ("ev_" + 32 hex); also the JetStream Nats-Msg-Id
  std::string type;     // "branch.created", "memory.recorded", ...
  std::string subject;  // EventSubject(prefix, tenant, project, session, type)
  std::string payload;  // JSON object, one line
};

// A new event id: "ev_" + base::TimeOrderedId (sorts by time to the millisecond; 80 random bits).
std::string NewEventId();

// The message for a branch lifecycle event (created, warning, folded, force_returned); nullopt
// for branch.charged, which stays in-process. Uses e.branch (the committed branch) when set for
// the summary. `id` becomes the event id.
std::optional<EventMessage> BranchEventMessage(const folding::BranchEvent& e,
                                               std::string_view prefix, std::string id);

// The message for a ReasoningBank event. Memory belongs to a project, not a session: the session
// is null in the payload and kNoValueToken ("%") in the subject. `at_ms` is the event's time (ms
// since the epoch).
EventMessage MemoryEventMessage(const memory::MemoryEvent& e, std::string_view prefix,
                                std::string id, int64_t at_ms);

// "2025-01-31T12:34:56.789Z" for `ms` since the epoch (UTC).
std::string Rfc3339Millis(int64_t ms);

}  // namespace contextd::events
