// Readiness for GET /healthz: each dependency contributes one JSON member under "checks"
// ({"status": ..., ...}); the answer is 503 when a configured dependency is down. Liveness stays
// what it was: the process answers. Thread-safe as the checked objects are (called on I/O threads).
#pragma once

#include <string>
#include <vector>

#include "events/publisher.h"
#include "store/backend.h"
#include "transport/http_server.h"

namespace contextd::server {

// One dependency as /healthz reports it: `detail_json` is a JSON object holding at least
// "status"; `ok` false makes the whole answer 503.
struct HealthMember {
  std::string name;
  bool ok = true;
  std::string detail_json;
};

// "database": {"status": "ok", "backend": "sqlite"|"postgres"} after the backend's cheap check
// (Backend::Health: SQLite reads its schema version on the engine's connection, reported as
// "schema_version"; PostgreSQL asks whether the server accepts connections, cached for a second,
// outside the pool), else {"status": "error", "error": ...}.
HealthMember DatabaseHealth(store::Backend& backend);

// "nats": {"status": "disabled"} when `publisher` is null (events.nats.url empty), else the
// connection state ("connected", "connecting", "reconnecting", "closed") with "mode" (plain or
// jetstream) and the publisher's counts; ok only when connected.
HealthMember NatsHealth(const events::Publisher* publisher, bool jetstream);

// {"status": "ok"|"unavailable", "version": ..., "checks": {name: detail, ...}}; ready when every
// member is ok.
transport::HealthAnswer RenderHealth(const std::vector<HealthMember>& members,
                                     const std::string& version);

}  // namespace contextd::server
