#include "server/shared_sessions.h"

#include <utility>

#include "base/foreign_text.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "nlohmann/json.hpp"

namespace contextd::server {
namespace {

int64_t NowMs() { return base::RealClock::Get().WallMillis(); }

protocol::Json ParseOr(const std::string& text, protocol::Json fallback) {
  protocol::Json j = protocol::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

}  // namespace

SharedSessions::SharedSessions(std::shared_ptr<store::McpSessionStore> store,
                               std::chrono::milliseconds idle_timeout)
    : store_(std::move(store)), idle_timeout_(idle_timeout) {}

SharedSessions::~SharedSessions() { Stop(); }

void SharedSessions::Stop() { worker_.Stop(); }

void SharedSessions::Lookup(std::string id, std::string tenant,
                            std::function<void(absl::StatusOr<std::optional<Found>>)> done) {
  worker_.Post([this, id = std::move(id), tenant = std::move(tenant), done = std::move(done)] {
    auto record = store_->Get(id);
    if (!record.ok()) return done(record.status());
    // Ended, unknown and another tenant's look the same to the client: 404.
    if (!record->has_value() || (*record)->ended_ms != 0 || (*record)->tenant != tenant) {
      return done(std::optional<Found>());
    }
    const store::McpSessionRecord& r = **record;
    Found found;
    found.info.session_id = r.id;
    found.info.tenant = r.tenant;
    found.info.transport = "http";
    found.info.project = r.project;
    found.info.project_label = r.project_label;
    found.info.project_header = r.project_header;
    found.resume.protocol_version = r.protocol_version;
    found.resume.client_capabilities = ParseOr(r.client_capabilities, protocol::Json::object());
    found.resume.client_info = ParseOr(r.client_info, nullptr);
    done(std::optional<Found>(std::move(found)));
  });
}

void SharedSessions::Touch(std::vector<std::string> ids,
                           std::function<void(absl::StatusOr<std::vector<std::string>>)> done) {
  worker_.Post([this, ids = std::move(ids), done = std::move(done)] {
    auto open = store_->Touch(ids, NowMs());
    if (!open.ok()) {
      base::LogWarn(base::StrCat("sessions: touching ", ids.size(),
                                 " session(s): ", std::string(open.status().message())));
    }
    done(std::move(open));
  });
}

absl::Status SharedSessions::Record(const protocol::SessionInfo& info,
                                    const protocol::SessionResume& resume) {
  if (info.transport != "http") return absl::OkStatus();
  store::McpSessionRecord r;
  r.id = info.session_id;
  r.tenant = info.tenant;
  r.project = info.project;
  r.project_label = info.project_label;
  r.project_header = info.project_header;
  r.protocol_version = resume.protocol_version;
  r.client_capabilities = base::DumpJson(resume.client_capabilities);
  r.client_info = base::DumpJson(resume.client_info);
  r.created_ms = NowMs();
  r.last_seen_ms = r.created_ms;
  absl::Status created = store_->Create(r);
  if (!created.ok()) {
    base::LogError(
        base::StrCat("session ", info.session_id, ": saving it: ", std::string(created.message())));
  }
  return created;
}

void SharedSessions::ProjectFixed(const protocol::SessionInfo& info) {
  if (info.transport != "http") return;
  absl::Status set = store_->SetProject(info.session_id, info.project, info.project_label);
  if (!set.ok()) {
    base::LogWarn(base::StrCat("session ", info.session_id,
                               ": saving its project: ", std::string(set.message())));
  }
}

bool SharedSessions::EndsEverywhere(const protocol::SessionInfo& info, std::string_view reason) {
  if (info.transport != "http") return true;
  const int64_t now = NowMs();
  if (reason == transport::kCloseDeleted) {
    // The client asked: ended for everyone, whoever else holds it (they see it at their next
    // touch). Its branches end here even if marking the record failed.
    auto ended = store_->End(info.session_id, now, reason);
    if (!ended.ok()) {
      base::LogError(base::StrCat("session ", info.session_id,
                                  ": recording its end: ", std::string(ended.status().message())));
    }
    return true;
  }
  if (reason == transport::kCloseIdle) {
    // Idle here; ended only if no instance has seen it for the idle timeout either.
    auto ended = store_->End(info.session_id, now, reason, now - idle_timeout_.count());
    if (!ended.ok()) {
      base::LogError(base::StrCat("session ", info.session_id,
                                  ": ending it (idle): ", std::string(ended.status().message())));
      return false;  // when in doubt, leave it to the instance serving it
    }
    if (!*ended) {
      base::LogInfo(base::StrCat("session ", info.session_id,
                                 " idle here but seen elsewhere (or ended there): left to the "
                                 "other instances"));
    }
    return *ended;
  }
  // Shutdown, ended elsewhere (that instance ended its branches), dropped: not ours to end.
  base::LogInfo(base::StrCat("session ", info.session_id, " released (", reason,
                             "); it stays open for the other instances"));
  return false;
}

std::vector<protocol::SessionInfo> SharedSessions::EndIdle(int limit) {
  std::vector<protocol::SessionInfo> ended;
  const int64_t now = NowMs();
  const int64_t idle_before = now - idle_timeout_.count();
  auto idle = store_->ListIdle(idle_before, limit);
  if (!idle.ok()) {
    base::LogWarn(base::StrCat("sessions: idle sweep: ", std::string(idle.status().message())));
    return ended;
  }
  for (const store::McpSessionRecord& r : *idle) {
    auto done = store_->End(r.id, now, transport::kCloseIdle, idle_before);
    if (!done.ok() || !*done) continue;  // seen meanwhile, or another instance ended it
    protocol::SessionInfo info;
    info.session_id = r.id;
    info.tenant = r.tenant;
    info.transport = "http";
    info.project = r.project;
    info.project_label = r.project_label;
    info.project_header = r.project_header;
    ended.push_back(std::move(info));
  }
  return ended;
}

}  // namespace contextd::server
