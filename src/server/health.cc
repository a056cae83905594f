#include "server/health.h"

#include <nlohmann/json.hpp>

#include "base/foreign_text.h"

namespace contextd::server {

HealthMember DatabaseHealth(store::Backend& backend) {
  HealthMember m{"database", true, ""};
  store::StoreHealth health = backend.Health();
  nlohmann::json j;
  j["backend"] = health.backend;
  if (health.status.ok()) {
    j["status"] = "ok";
    if (health.schema_version) j["schema_version"] = *health.schema_version;
  } else {
    m.ok = false;
    j["status"] = "error";
    j["error"] = std::string(health.status.message());  // a conninfo in it is redacted
  }
  m.detail_json = base::DumpJson(j);
  return m;
}

HealthMember NatsHealth(const events::Publisher* publisher, bool jetstream) {
  HealthMember m{"nats", true, ""};
  nlohmann::json j;
  if (publisher == nullptr) {
    j["status"] = "disabled";
    m.detail_json = base::DumpJson(j);
    return m;
  }
  events::ConnectionState state = publisher->state();
  events::PublisherStats stats = publisher->stats();
  m.ok = state == events::ConnectionState::kConnected;
  j["status"] = events::ConnectionStateName(state);
  j["mode"] = jetstream ? "jetstream" : "plain";
  j["published"] = stats.published;
  j["dropped"] = stats.dropped;
  j["queued"] = stats.queued;
  if (jetstream) j["duplicates"] = stats.duplicates;
  m.detail_json = base::DumpJson(j);
  return m;
}

transport::HealthAnswer RenderHealth(const std::vector<HealthMember>& members,
                                     const std::string& version) {
  transport::HealthAnswer answer;
  nlohmann::json checks = nlohmann::json::object();
  for (const HealthMember& m : members) {
    answer.ready = answer.ready && m.ok;
    checks[m.name] = nlohmann::json::parse(m.detail_json, nullptr, false);
  }
  nlohmann::json j;
  j["status"] = answer.ready ? "ok" : "unavailable";
  j["version"] = version;
  j["checks"] = std::move(checks);
  answer.json = base::DumpJson(j);
  return answer;
}

}  // namespace contextd::server
