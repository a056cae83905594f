// RecordingSink: a MessageSink for tests that keeps every message sent to it, in order, until
// Take(). Test-only. Thread-safe (sessions may send from the executor while the test reads).
#pragma once

#include <mutex>
#include <utility>
#include <vector>

#include "protocol/session.h"

namespace contextd::protocol::testing {

class RecordingSink final : public MessageSink {
 public:
  void Send(Json message, const Json& /*related_request_id*/) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.push_back(std::move(message));
  }
  // How many messages are waiting for Take.
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_.size();
  }
  // The messages sent since the last Take, oldest first.
  std::vector<Json> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(sent_, {});
  }

 private:
  std::mutex mu_;
  std::vector<Json> sent_;
};

}  // namespace contextd::protocol::testing
