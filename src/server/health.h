// Readiness for GET /healthz: each dependency contributes one JSON member under "checks"
// ({"status": ..., ...}); the answer is 503 when a configured dependency is down. Liveness stays
// what it was: the process answers. Thread-safe as the checked objects are (called on I/O threads).
#pragma once

#include <string>
#include <vector>

#include "events/publisher.h"
#include "store/database.h"
#include "store/pg_database.h"
#include "transport/http_server.h"

namespace contextd::server {

// One dependency as /healthz reports it: `detail_json` is a JSON object holding at least
// "status"; `ok` false makes the whole answer 503.
struct HealthMember {
  std::string name;
  bool ok = true;
  std::string detail_json;
};

// "database": {"status": "ok", "backend": "sqlite"} after a cheap query on the engine's
// connection (its schema version), or {"status": "error", "error": ...}.
HealthMember DatabaseHealth(store::Database& db);
// "database": {"status": "ok", "backend": "postgres"} when the server accepts connections
// (PgDatabase::Ready: cached for a second, outside the pool), else {"status": "error", ...}.
HealthMember PostgresHealth(store::PgDatabase& db);

// "nats": {"status": "disabled"} when `publisher` is null (events.nats.url empty), else the
// connection state ("connected", "connecting", "reconnecting", "closed") with "mode" (plain or
// jetstream) and the publisher's counts; ok only when connected.
HealthMember NatsHealth(const events::Publisher* publisher, bool jetstream);

// {"status": "ok"|"unavailable", "version": ..., "checks": {name: detail, ...}}; ready when every
// member is ok.
transport::HealthAnswer RenderHealth(const std::vector<HealthMember>& members,
                                     const std::string& version);

}  // namespace contextd::server
