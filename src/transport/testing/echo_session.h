// A test-only MCP engine for transport tests and the transport benchmark: EchoSessionFactory
// makes sessions that answer every request with {"echo": params} (initialize and tools/call get
// MCP-shaped results) through the real MessageSink contract. Never linked into the product.
// Thread-safe; with `async` the answers come from a separate engine thread, as in production.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "protocol/session.h"

namespace contextd::transport::testing {

// Behaviour switches read from a request's params:
//   "notify": true      -> a notifications/message related to the request precedes the answer
//   "standalone": true  -> a notifications/message with null related id precedes the answer
//   "hold": true        -> the answer is kept until EchoSessionFactory::ReleaseHeld()
//   "close_stream": true -> MessageSink::CloseStream(id) before the answer
class EchoSessionFactory final : public protocol::SessionFactory {
 public:
  // `async`: answer from a dedicated engine thread instead of inside Receive.
  explicit EchoSessionFactory(bool async = false);
  ~EchoSessionFactory() override;

  std::shared_ptr<protocol::Session> CreateSession(
      protocol::SessionInfo info, std::shared_ptr<protocol::MessageSink> sink) override;

  // Sends the answers of every held request (see "hold").
  void ReleaseHeld();
  // Waits until at least `n` answers are held (an async engine holds a request's answer after
  // what precedes it, e.g. a CloseStream the client may already have seen); false after
  // `timeout`.
  bool WaitHeld(size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // From now on Session::CloseThen confirmations wait for ConfirmHeldCloses, which calls the
  // held ones with `outcome` on the calling thread and returns how many there were.
  void HoldCloseConfirmations();
  int ConfirmHeldCloses(const absl::Status& outcome);
  // Sends `message` with null related id on every live session.
  void Broadcast(const protocol::Json& message);

  int sessions_created() const { return created_.load(); }
  // Close reasons of all sessions, in the order Close was first called.
  std::vector<std::string> close_reasons() const;
  // Notifications and responses received from clients, serialized, across sessions.
  std::vector<std::string> received_non_requests() const;
  // The SessionInfo of every session created.
  std::vector<protocol::SessionInfo> infos() const;

 private:
  friend class EchoSession;
  void Run(std::function<void()> task);

  std::unique_ptr<base::ThreadExecutor> engine_;
  std::atomic<int> created_{0};
  mutable std::mutex mu_;
  std::vector<std::string> close_reasons_;
  std::vector<std::string> received_;
  std::vector<protocol::SessionInfo> infos_;
  std::vector<std::function<void()>> held_;
  std::condition_variable held_changed_;
  bool hold_close_confirmations_ = false;
  std::vector<std::function<void(const absl::Status&)>> held_confirmations_;
  std::vector<std::weak_ptr<protocol::MessageSink>> sinks_;
};

}  // namespace contextd::transport::testing
