#include <algorithm>

#include "base/foreign_text.h"
#include "transport/internal/mcp_session.h"
#include "transport/internal/message_shape.h"

namespace contextd::transport::internal {

using protocol::Json;

namespace {
constexpr size_t kMaxReplayBytes = 8u << 20;  // per session, with HttpServerOptions::replay_events
}  // namespace

// ---- HttpSink.

void HttpSink::Send(Json message, const Json& related_request_id) {
  if (related_request_id.is_null()) {  // for the standalone stream
    SendStandalone(protocol::Serialize(message));
    return;
  }
  const bool response = IsResponse(message);
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  auto it = routes_.find(base::DumpJson(related_request_id));
  if (it != routes_.end()) {
    if (std::shared_ptr<McpExchange> ex = it->second.ex) {
      if (response) routes_.erase(it);
      // Posted under the lock, so in the order of the Send calls. Serialized on the
      // connection's I/O thread, not on the caller's (the engine executor, which every session
      // shares).
      ex->PostMessage(std::move(message), response);
      return;
    }
    // Its stream was closed by the engine: kept for the GET that resumes it.
    const uint64_t stream = it->second.stream;
    if (response) routes_.erase(it);
    std::string payload = protocol::Serialize(message);
    auto resumed = resumed_.find(stream);
    const uint64_t id = RecordLocked(stream, payload);
    if (resumed != resumed_.end()) resumed->second->PostEvent(id, std::move(payload));
    if (response) {
      auto owed = closed_pending_.find(stream);
      if (owed != closed_pending_.end() && --owed->second == 0) {
        closed_pending_.erase(owed);
        if (resumed != resumed_.end()) {
          resumed->second->PostStreamComplete();
          resumed_.erase(resumed);
        }
      }
    }
    return;
  }
  if (response) return;  // its POST is gone (client vanished or timed out): dropped
  // A notification of a request whose POST is gone goes to the standalone stream.
  StandaloneLocked(protocol::Serialize(message));
}

void HttpSink::CloseStream(const Json& related_request_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  auto it = routes_.find(base::DumpJson(related_request_id));
  if (it == routes_.end() || !it->second.ex || !it->second.sse) return;
  std::shared_ptr<McpExchange> ex = it->second.ex;
  size_t owed = 0;
  for (auto& [key, r] : routes_) {
    if (r.ex == ex) {
      r.ex.reset();
      ++owed;
    }
  }
  closed_pending_[it->second.stream] += owed;
  // The cursor the client resumes from precedes every answer kept for it.
  ex->PostServerClose(RecordLocked(it->second.stream, std::string()));
}

void HttpSink::SendStandalone(std::string payload) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  StandaloneLocked(std::move(payload));
}

void HttpSink::StandaloneLocked(std::string payload) {
  const uint64_t id = RecordLocked(0, standalone_ ? payload : std::move(payload));
  if (standalone_) standalone_->PostEvent(id, std::move(payload));
}

uint64_t HttpSink::RecordLocked(uint64_t stream, std::string payload) {
  const uint64_t id = ++next_event_id_;
  if (replay_max_ == 0) return id;
  replay_bytes_ += payload.size();
  replay_.push_back(Event{id, stream, std::move(payload)});
  while (replay_.size() > replay_max_ || replay_bytes_ > kMaxReplayBytes) {
    replay_bytes_ -= replay_.front().payload.size();
    replay_.pop_front();
  }
  return id;
}

HttpSink::AttachResult HttpSink::Attach(const std::shared_ptr<McpExchange>& ex,
                                        std::optional<uint64_t> last,
                                        std::vector<std::pair<uint64_t, std::string>>* replay) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return AttachResult::kEnded;
  uint64_t stream = 0;
  if (last) {
    auto at =
        std::find_if(replay_.begin(), replay_.end(), [&](const Event& e) { return e.id == *last; });
    if (at != replay_.end()) stream = at->stream;
  }
  if (stream != 0) {
    const bool complete = closed_pending_.count(stream) == 0;
    if (!complete && resumed_.count(stream) > 0) return AttachResult::kConflict;
    for (const auto& e : replay_) {
      if (e.stream == stream && e.id > *last && !e.payload.empty()) {
        replay->emplace_back(e.id, e.payload);
      }
    }
    if (complete) return AttachResult::kResumedComplete;
    resumed_.emplace(stream, ex);
    return AttachResult::kResumed;
  }
  if (standalone_) return AttachResult::kConflict;
  standalone_ = ex;
  if (last) {
    for (const auto& e : replay_) {
      if (e.stream == 0 && e.id > *last) replay->emplace_back(e.id, e.payload);
    }
  }
  return AttachResult::kStandalone;
}

void HttpSink::DetachStream(const McpExchange* ex) {
  std::lock_guard<std::mutex> lock(mu_);
  if (standalone_.get() == ex) standalone_.reset();
  std::erase_if(resumed_, [ex](const auto& kv) { return kv.second.get() == ex; });
}

void HttpSink::Detach(bool notify) {
  std::lock_guard<std::mutex> lock(mu_);
  if (detached_) return;
  detached_ = true;
  if (notify) {
    for (auto& [key, r] : routes_) {
      if (r.ex) r.ex->PostSessionGone();
    }
    if (standalone_) standalone_->PostSessionGone();
    for (auto& [stream, ex] : resumed_) ex->PostSessionGone();
  }
  routes_.clear();
  standalone_.reset();
  resumed_.clear();
  closed_pending_.clear();
  replay_.clear();
  replay_bytes_ = 0;
}

}  // namespace contextd::transport::internal
