// Publisher: sends EventMessages to NATS from a worker thread of its own, behind a bounded queue,
// so that the engine executor never waits on the network. Plain NATS: at most once (dropped and
// counted while disconnected). JetStream: each queued event is published with Nats-Msg-Id = its
// id and retried (bounded) until the stream acks it, so the stream holds it exactly once
// (docs/events.md). Enqueue, state and stats are thread-safe; Stop is called once, by the owner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "events/event_message.h"

namespace contextd::events {

struct PublisherOptions {
  std::string url;         // nats://host:port (comma-separated list allowed); required
  bool jetstream = false;  // publish to a stream and wait for its acks
  std::string stream;      // JetStream stream name (created if missing)
  std::string subject_prefix = "contextd";  // the created stream's subjects: <prefix>.>
  std::string credentials_file;             // NATS .creds file (JWT + NKey seed); optional
  std::string tls_ca_file;         // PEM CA: TLS to the server, verified against it; optional
  size_t queue_capacity = 10'000;  // events waiting to be published; more are dropped
  int64_t connect_timeout_ms = 2'000;
  int64_t reconnect_wait_ms = 1'000;
  int64_t ack_timeout_ms = 2'000;  // JetStream: one publish's wait for its ack
  int publish_attempts = 8;        // JetStream: attempts per event (backoff 250 ms doubling to 4 s)
  int64_t flush_timeout_ms = 2'000;  // Stop: longest wait for the queue and the socket to drain
};

// `url` (events.nats.url, a comma-separated list) as logs and errors may show it: each server's
// userinfo (nats://user:password@host, nats://token@host) replaced by "***".
std::string RedactNatsUrl(std::string_view url);

// The connection as /healthz reports it.
enum class ConnectionState { kConnecting, kConnected, kReconnecting, kClosed };
// "connecting", "connected", "reconnecting", "closed".
const char* ConnectionStateName(ConnectionState state);

// Why an event was not delivered (the `reason` label of contextd_events_dropped_total):
// "queue_full", "disconnected" (plain NATS), "publish_error", "retries_exhausted" (JetStream),
// "shutdown" (still queued when Stop's bound passed).
struct PublisherHooks {
  std::function<void(std::string_view reason)> dropped;
  std::function<void()> published;
  std::function<void()> duplicate;  // JetStream acked a retry as a duplicate (already stored)
};

struct PublisherStats {
  uint64_t enqueued = 0;
  uint64_t published = 0;
  uint64_t dropped = 0;
  uint64_t duplicates = 0;
  uint64_t retries = 0;
  size_t queued = 0;
};

class Publisher {
 public:
  virtual ~Publisher() = default;
  // Queues `message`; never blocks. When the queue is full the message is dropped ("queue_full").
  virtual void Enqueue(EventMessage message) = 0;
  virtual ConnectionState state() const = 0;
  virtual PublisherStats stats() const = 0;
  // Drains the queue for at most flush_timeout_ms, flushes and closes the connection; what is
  // left is dropped ("shutdown"). Enqueue after Stop drops ("shutdown"). Idempotent.
  virtual void Stop() = 0;

  // The outbox relay's way (decision 0027), instead of Enqueue: the caller keeps the event until
  // this says NATS has it, so nothing is dropped or counted as dropped here. Send and Flush are
  // called from one thread, and a publisher fed by Send is not fed by Enqueue.
  // Sends `message` now: JetStream: one publish with Nats-Msg-Id = its id, waiting for the
  // stream's ack (OK also when the stream already held it: a duplicate, counted); plain NATS:
  // handed to the client library (Flush makes sure it reached the server). Unavailable while
  // disconnected, when the ack does not come in time, or after Stop.
  virtual absl::Status Send(const EventMessage& message) = 0;
  // Plain NATS: waits (up to flush_timeout_ms) until what Send handed over reached the server;
  // Unavailable if it cannot tell. JetStream: OK (each Send was acked).
  virtual absl::Status Flush() = 0;
};

// True if this binary was built with libnats.
bool NatsSupported();

// Validates `options` (InvalidArgument naming the option), starts the worker and begins
// connecting. A server that is down is not an error: the connection is retried in the background
// (state kConnecting). FailedPrecondition when built without libnats; InvalidArgument for a
// credentials or CA file libnats refuses.
absl::StatusOr<std::unique_ptr<Publisher>> StartNatsPublisher(const PublisherOptions& options,
                                                              PublisherHooks hooks);

}  // namespace contextd::events
