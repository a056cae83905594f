#include "transport/stdio_transport.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/foreign_text.h"
#include "base/internal_errors.h"
#include "base/logging.h"
#include "transport/internal/message_shape.h"
#include "transport/ndjson_framer.h"

namespace contextd::transport {
namespace {

using protocol::Json;

// True when `m` is a JSON-RPC response (result or error), not a request or notification.
using internal::IsEmptyArray;
using internal::IsResponse;

// The answers of one batch, collected until every request is answered.
struct Batch {
  size_t remaining = 0;
  std::vector<std::string> responses;  // serialized messages
};

// Writes lines to out_fd from one writer thread, and aggregates batch answers.
class StdioSink final : public protocol::MessageSink {
 public:
  explicit StdioSink(int out_fd) : out_fd_(out_fd) {
    writer_ = std::thread([this] { base::RunLoopCatching("stdio", [this] { WriterLoop(); }); });
  }
  ~StdioSink() override { StopWriter(); }

  void Send(Json message, const Json& related_request_id) override {
    const bool response = !related_request_id.is_null() && IsResponse(message);
    std::string line = protocol::Serialize(message);
    std::unique_lock<std::mutex> lock(mu_);
    if (response) {
      if (!batch_routes_.empty()) {
        auto it = batch_routes_.find(base::DumpJson(related_request_id));
        if (it != batch_routes_.end()) {
          std::shared_ptr<Batch> batch = std::move(it->second);
          batch_routes_.erase(it);
          batch->responses.push_back(std::move(line));
          if (--batch->remaining == 0) AppendBatchLocked(*batch);
          FinishRequestLocked();
          return;
        }
      }
      FinishRequestLocked();
    }
    line.push_back('\n');
    AppendLocked(line);
  }

  // Writes one message produced by the transport itself (a parse error answer).
  void WriteDirect(const Json& message) {
    std::string line = protocol::Serialize(message);
    line.push_back('\n');
    std::lock_guard<std::mutex> lock(mu_);
    AppendLocked(line);
  }

  // Registers the requests of a batch and answers its unparsable items. Returns the messages
  // to hand to the session (requests routed to `batch`, notifications, responses).
  std::vector<protocol::Message> StartBatch(std::vector<protocol::Parsed>& items) {
    auto batch = std::make_shared<Batch>();
    std::vector<protocol::Message> to_session;
    to_session.reserve(items.size());
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& item : items) {
      if (auto* err = std::get_if<protocol::ParseError>(&item)) {
        batch->responses.push_back(
            protocol::Serialize(protocol::MakeError(err->id, err->code, err->message)));
        continue;
      }
      auto& msg = std::get<protocol::Message>(item);
      if (msg.kind == protocol::MessageKind::kRequest) {
        auto [it, inserted] = batch_routes_.try_emplace(base::DumpJson(msg.id), batch);
        if (!inserted) {
          batch->responses.push_back(protocol::Serialize(
              protocol::MakeError(msg.id, protocol::kInvalidRequest,
                                  "invalid request: duplicate request id in a batch in flight")));
          continue;
        }
        ++batch->remaining;
        ++in_flight_;
      }
      to_session.push_back(std::move(msg));
    }
    if (batch->remaining == 0 && !batch->responses.empty()) AppendBatchLocked(*batch);
    return to_session;
  }

  // Accounts for one request about to be handed to the session. Returns false (and answers
  // it) if its id collides with a batched request still in flight.
  bool StartRequest(const protocol::Message& msg) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!batch_routes_.empty() && batch_routes_.count(base::DumpJson(msg.id)) != 0) {
      std::string line = protocol::Serialize(
          protocol::MakeError(msg.id, protocol::kInvalidRequest,
                              "invalid request: duplicate request id in a batch in flight"));
      line.push_back('\n');
      AppendLocked(line);
      return false;
    }
    ++in_flight_;
    return true;
  }

  // Blocks while `max` or more requests are in flight.
  void WaitBelow(size_t max) {
    std::unique_lock<std::mutex> lock(mu_);
    drained_.wait(lock, [&] { return in_flight_ < max; });
  }

  // Waits until no request is in flight or `timeout` passes. Returns the number still in flight.
  size_t Drain(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    drained_.wait_for(lock, timeout, [&] { return in_flight_ == 0; });
    return in_flight_;
  }

  // Flushes what is queued and stops the writer; later messages are dropped. Idempotent.
  void StopWriter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    writable_.notify_one();
    if (writer_.joinable() && writer_.get_id() != std::this_thread::get_id()) writer_.join();
  }

 private:
  void FinishRequestLocked() {
    if (in_flight_ > 0) --in_flight_;
    // Wakes the reader (backpressure) and the EOF drain; cheap when nobody waits.
    drained_.notify_all();
  }

  void AppendBatchLocked(const Batch& batch) {
    std::string line = "[";
    for (size_t i = 0; i < batch.responses.size(); ++i) {
      if (i > 0) line.push_back(',');
      line += batch.responses[i];
    }
    line += "]\n";
    AppendLocked(line);
  }

  void AppendLocked(std::string_view bytes) {
    if (stopping_ || failed_) return;
    const bool was_empty = pending_.empty();
    pending_.append(bytes);
    if (was_empty && writer_idle_) writable_.notify_one();
  }

  void WriterLoop() {
    std::string out;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      writer_idle_ = true;
      writable_.wait(lock, [&] { return !pending_.empty() || stopping_; });
      writer_idle_ = false;
      if (pending_.empty()) return;  // stopping and flushed
      out.clear();
      out.swap(pending_);
      lock.unlock();
      const bool ok = WriteAll(out);
      lock.lock();
      if (!ok) {
        failed_ = true;
        pending_.clear();
      }
      // Keep the larger buffer for the next round instead of reallocating.
      if (pending_.empty() && out.capacity() > pending_.capacity()) {
        out.clear();
        pending_.swap(out);
      }
    }
  }

  bool WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(out_fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        base::LogWarn(std::string("stdio: write to output failed, dropping further output: ") +
                      std::strerror(errno));
        return false;
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  const int out_fd_;
  std::mutex mu_;
  std::condition_variable writable_;
  std::condition_variable drained_;
  std::string pending_;
  bool writer_idle_ = false;
  bool stopping_ = false;
  bool failed_ = false;
  size_t in_flight_ = 0;
  std::unordered_map<std::string, std::shared_ptr<Batch>> batch_routes_;
  std::thread writer_;
};

}  // namespace

absl::Status ServeStdio(protocol::SessionFactory& factory, int in_fd, int out_fd,
                        const StdioOptions& options) {
  if (options.ignore_sigpipe) std::signal(SIGPIPE, SIG_IGN);
  auto sink = std::make_shared<StdioSink>(out_fd);
  protocol::SessionInfo info;
  info.session_id = "stdio";
  info.tenant = "local";
  info.transport = "stdio";
  std::shared_ptr<protocol::Session> session = factory.CreateSession(std::move(info), sink);

  NdjsonFramer framer(options.max_message_bytes);
  auto on_line = [&](const NdjsonFramer::Event& ev) {
    if (ev.kind == NdjsonFramer::Event::Kind::kTooLong) {
      sink->WriteDirect(protocol::MakeError(nullptr, protocol::kInvalidRequest,
                                            "invalid request: message exceeds " +
                                                std::to_string(options.max_message_bytes) +
                                                " bytes"));
      return;
    }
    protocol::Incoming in = protocol::ParseIncoming(ev.line, options.max_message_bytes);
    if (in.batch && !IsEmptyArray(ev.line)) {
      for (auto& msg : sink->StartBatch(in.items)) session->Receive(std::move(msg));
    } else {
      for (auto& item : in.items) {
        if (auto* err = std::get_if<protocol::ParseError>(&item)) {
          sink->WriteDirect(protocol::MakeError(err->id, err->code, err->message));
          continue;
        }
        auto& msg = std::get<protocol::Message>(item);
        if (msg.kind == protocol::MessageKind::kRequest && !sink->StartRequest(msg)) continue;
        session->Receive(std::move(msg));
      }
    }
  };

  std::string buffer(options.read_buffer_bytes == 0 ? 65536 : options.read_buffer_bytes, '\0');
  absl::Status status = absl::OkStatus();
  for (;;) {
    sink->WaitBelow(options.max_in_flight == 0 ? 1 : options.max_in_flight);
    ssize_t n = ::read(in_fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      status = absl::InternalError(std::string("stdio: read failed: ") + std::strerror(errno));
      break;
    }
    if (n == 0) break;
    framer.Feed(std::string_view(buffer.data(), static_cast<size_t>(n)), on_line);
  }
  if (status.ok()) {
    framer.Finish(on_line);
    const size_t left = sink->Drain(options.eof_drain_timeout);
    if (left > 0) {
      base::LogWarn("stdio: closing with " + std::to_string(left) + " request(s) unanswered");
    }
  }
  session->Close(status.ok() ? "stdin closed" : "stdin read error");
  sink->StopWriter();
  return status;
}

}  // namespace contextd::transport
