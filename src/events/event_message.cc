#include "events/event_message.h"

#include <ctime>
#include <nlohmann/json.hpp>

#include "base/foreign_text.h"
#include "base/ids.h"
#include "events/subject.h"

namespace contextd::events {
namespace {

nlohmann::json NullIfEmpty(const std::string& s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

nlohmann::json Envelope(const std::string& id, const std::string& type, int64_t at_ms,
                        const std::string& tenant, const std::string& project,
                        const std::string& session) {
  nlohmann::json j;
  j["v"] = kPayloadVersion;
  j["id"] = id;
  j["type"] = type;
  j["time"] = Rfc3339Millis(at_ms);
  j["time_ms"] = at_ms;
  j["tenant"] = tenant;
  j["project"] = project;
  j["session"] = NullIfEmpty(session);
  return j;
}

std::string Dump(const nlohmann::json& j) {
  // Invalid UTF-8 (never expected: texts are scrubbed UTF-8) is replaced rather than thrown.
  return base::DumpJson(j);
}

}  // namespace

std::string NewEventId() { return base::TimeOrderedId("ev_"); }

std::string Rfc3339Millis(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  int64_t milli = ms % 1000;
  if (milli < 0) {
    milli += 1000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(milli));
  return buf;
}

std::optional<EventMessage> BranchEventMessage(const folding::BranchEvent& e,
                                               std::string_view prefix, std::string id) {
  if (e.type == folding::BranchEventType::kCharged) return std::nullopt;
  EventMessage m;
  m.id = std::move(id);
  m.type = folding::BranchEventName(e.type);
  m.subject =
      EventSubject(prefix, e.session.tenant, e.session.project, e.session.session_id, m.type);
  nlohmann::json j =
      Envelope(m.id, m.type, e.at_ms, e.session.tenant, e.session.project, e.session.session_id);
  j["branch_id"] = e.branch_id;
  j["parent_id"] = NullIfEmpty(e.parent_id);
  j["depth"] = e.depth;
  j["status"] = folding::BranchStatusName(e.status);
  j["budget_allocated"] = e.budget_allocated;
  j["tokens_used"] = e.tokens_used;
  switch (e.type) {
    case folding::BranchEventType::kCreated:
      j["prompt_tokens"] = e.text_tokens;
      break;
    case folding::BranchEventType::kWarning:
      break;
    case folding::BranchEventType::kFolded:
    case folding::BranchEventType::kForceReturned:
      j["tokens_folded"] = e.type == folding::BranchEventType::kFolded ? nlohmann::json(e.tokens)
                                                                       : nlohmann::json(nullptr);
      j["reason"] =
          NullIfEmpty(e.reason.empty() && e.branch != nullptr ? e.branch->finish_reason : e.reason);
      // The summary as stored: scrubbed of secrets, private spans withheld.
      j["summary"] =
          e.branch != nullptr ? nlohmann::json(e.branch->summary) : nlohmann::json(nullptr);
      j["summary_tokens"] = e.text_tokens;
      break;
    case folding::BranchEventType::kCharged:
      break;
  }
  m.payload = Dump(j);
  return m;
}

EventMessage MemoryEventMessage(const memory::MemoryEvent& e, std::string_view prefix,
                                std::string id, int64_t at_ms) {
  EventMessage m;
  m.id = std::move(id);
  m.type = e.type;
  m.subject = EventSubject(prefix, e.tenant, e.project, "", m.type);
  nlohmann::json j = Envelope(m.id, m.type, at_ms, e.tenant, e.project, "");
  j["branch_id"] = NullIfEmpty(e.branch_id);
  j["memory_ids"] = e.memory_ids;
  j["tokens"] = e.tokens;
  m.payload = Dump(j);
  return m;
}

}  // namespace contextd::events
