// The libnats (Debian's libnats-dev, the NATS C client) implementation of events::Publisher.
// Built only when libnats is found (src/events/CMakeLists.txt); no_nats_publisher.cc otherwise.
#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/internal_errors.h"
#include "base/logging.h"
#include "base/str_cat.h"
#include "events/publisher.h"

namespace contextd::events {
namespace {

using Clock = std::chrono::steady_clock;

std::string NatsError(natsStatus s) {
  const char* last = nats_GetLastError(nullptr);
  return base::StrCat(natsStatus_GetText(s), last != nullptr && *last != '\0' ? " (" : "",
                      last != nullptr ? last : "", last != nullptr && *last != '\0' ? ")" : "");
}

class NatsPublisher final : public Publisher {
 public:
  NatsPublisher(PublisherOptions options, PublisherHooks hooks)
      : options_(std::move(options)), hooks_(std::move(hooks)) {}

  ~NatsPublisher() override {
    Stop();
    if (js_ != nullptr) jsCtx_Destroy(js_);
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }

  absl::Status Start() {
    natsOptions* opts = nullptr;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, options_.url.c_str());
    if (s != NATS_OK) {
      if (opts != nullptr) natsOptions_Destroy(opts);
      return absl::InvalidArgumentError(
          base::StrCat("config key 'events.nats.url': ", NatsError(s)));
    }
    natsOptions_SetName(opts, "contextd");
    natsOptions_SetTimeout(opts, options_.connect_timeout_ms);
    natsOptions_SetMaxReconnect(opts, -1);  // forever: events resume when the server is back
    natsOptions_SetReconnectWait(opts, options_.reconnect_wait_ms);
    natsOptions_SetReconnectJitter(opts, 100, 1000);
    natsOptions_SetRetryOnFailedConnect(opts, true, &NatsPublisher::OnConnected, this);
    natsOptions_SetDisconnectedCB(opts, &NatsPublisher::OnDisconnected, this);
    natsOptions_SetReconnectedCB(opts, &NatsPublisher::OnReconnected, this);
    natsOptions_SetClosedCB(opts, &NatsPublisher::OnClosed, this);
    if (!options_.credentials_file.empty()) {
      s = natsOptions_SetUserCredentialsFromFiles(opts, options_.credentials_file.c_str(), nullptr);
      if (s != NATS_OK) {
        natsOptions_Destroy(opts);
        return absl::InvalidArgumentError(
            base::StrCat("config key 'events.nats.credentials_file': '", options_.credentials_file,
                         "': ", NatsError(s)));
      }
    }
    if (!options_.tls_ca_file.empty()) {
      s = natsOptions_SetSecure(opts, true);
      if (s == NATS_OK)
        s = natsOptions_LoadCATrustedCertificates(opts, options_.tls_ca_file.c_str());
      if (s != NATS_OK) {
        natsOptions_Destroy(opts);
        return absl::InvalidArgumentError(base::StrCat("config key 'events.nats.tls_ca_file': '",
                                                       options_.tls_ca_file, "': ", NatsError(s)));
      }
    }
    s = natsConnection_Connect(&nc_, opts);
    natsOptions_Destroy(opts);
    if (s == NATS_OK) {
      ever_connected_ = true;
      base::LogInfo(base::StrCat("events: connected to NATS at ", RedactNatsUrl(options_.url),
                                 options_.jetstream ? " (JetStream stream " : "",
                                 options_.jetstream ? options_.stream : "",
                                 options_.jetstream ? ")" : ""));
    } else if (s == NATS_NOT_YET_CONNECTED) {
      base::LogWarn(base::StrCat("events: NATS at ", RedactNatsUrl(options_.url),
                                 " is not reachable; retrying in the background (events are "
                                 "dropped and counted meanwhile)"));
    } else {
      return absl::UnavailableError(base::StrCat("events: connecting to NATS at ",
                                                 RedactNatsUrl(options_.url), ": ", NatsError(s)));
    }
    if (options_.jetstream) {
      jsOptions jo;
      jsOptions_Init(&jo);
      jo.Wait = options_.ack_timeout_ms;
      s = natsConnection_JetStream(&js_, nc_, &jo);
      if (s != NATS_OK) {
        CloseAndWait();
        natsConnection_Destroy(nc_);
        nc_ = nullptr;
        return absl::InternalError(base::StrCat("events: JetStream context: ", NatsError(s)));
      }
    }
    worker_ = std::thread([this] { base::RunLoopCatching("nats_publisher", [this] { Run(); }); });
    return absl::OkStatus();
  }

  void Enqueue(EventMessage message) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopping_ && queue_.size() < options_.queue_capacity) {
        queue_.push_back(std::move(message));
        ++enqueued_;
        cv_.notify_one();
        return;
      }
    }
    Drop(stopping_requested_.load() ? "shutdown" : "queue_full");
  }

  absl::Status Send(const EventMessage& m) override {
    if (stopping_requested_.load()) return absl::UnavailableError("events: stopped");
    if (!Connected()) return absl::UnavailableError("events: not connected to NATS");
    natsMsg* msg = MakeMsg(m);
    if (msg == nullptr) return absl::ResourceExhaustedError("events: cannot build a NATS message");
    natsStatus s = NATS_OK;
    if (!options_.jetstream) {
      s = natsConnection_PublishMsg(nc_, msg);
      natsMsg_Destroy(msg);
      if (s != NATS_OK)
        return absl::UnavailableError(base::StrCat("events: publish: ", NatsError(s)));
      Published();
      return absl::OkStatus();
    }
    if (!EnsureStream()) {
      natsMsg_Destroy(msg);
      return absl::UnavailableError(
          base::StrCat("events: JetStream stream ", options_.stream, " is not available"));
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = m.id.c_str();
    po.MaxWait = options_.ack_timeout_ms;
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    s = js_PublishMsg(&ack, js_, msg, &po, &jerr);
    natsMsg_Destroy(msg);
    const bool duplicate = s == NATS_OK && ack != nullptr && ack->Duplicate;
    if (ack != nullptr) jsPubAck_Destroy(ack);
    if (s != NATS_OK) {
      if (s == NATS_NO_RESPONDERS) stream_ready_ = false;  // look for the stream again
      ++retries_;
      return absl::UnavailableError(
          base::StrCat("events: JetStream publish of ", m.type, ": ", NatsError(s)));
    }
    if (duplicate) {
      ++duplicates_;
      if (hooks_.duplicate) hooks_.duplicate();
    }
    Published();
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    if (options_.jetstream) return absl::OkStatus();
    natsStatus s = natsConnection_FlushTimeout(nc_, options_.flush_timeout_ms);
    if (s != NATS_OK) return absl::UnavailableError(base::StrCat("events: flush: ", NatsError(s)));
    return absl::OkStatus();
  }

  ConnectionState state() const override {
    if (nc_ == nullptr) return ConnectionState::kClosed;
    switch (natsConnection_Status(nc_)) {
      case NATS_CONN_STATUS_CONNECTED:
      case NATS_CONN_STATUS_DRAINING_SUBS:
      case NATS_CONN_STATUS_DRAINING_PUBS:
        return ConnectionState::kConnected;
      case NATS_CONN_STATUS_CLOSED:
        return ConnectionState::kClosed;
      case NATS_CONN_STATUS_CONNECTING:
        return ConnectionState::kConnecting;
      default:
        return ever_connected_ ? ConnectionState::kReconnecting : ConnectionState::kConnecting;
    }
  }

  PublisherStats stats() const override {
    PublisherStats s;
    s.enqueued = enqueued_.load();
    s.published = published_.load();
    s.dropped = dropped_.load();
    s.duplicates = duplicates_.load();
    s.retries = retries_.load();
    std::lock_guard<std::mutex> lock(mu_);
    s.queued = queue_.size();
    return s;
  }

  void Stop() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      stopping_requested_ = true;
      deadline_ = Clock::now() + std::chrono::milliseconds(options_.flush_timeout_ms);
      cv_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
    if (nc_ != nullptr) {
      int64_t left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED) {
        natsStatus s = natsConnection_FlushTimeout(nc_, std::max<int64_t>(left, 1));
        if (s != NATS_OK) base::LogWarn(base::StrCat("events: final flush: ", NatsError(s)));
      }
      // Closed, not destroyed: state() may still be read (it answers "closed"); the destructor
      // frees it.
      CloseAndWait();
    }
    PublisherStats s = stats();
    base::LogInfo(base::StrCat("events: stopped; ", s.published, " published, ", s.dropped,
                               " dropped, ", s.duplicates, " JetStream duplicate(s)"));
  }

 private:
  static void OnConnected(natsConnection*, void* self) {
    static_cast<NatsPublisher*>(self)->ever_connected_ = true;
    base::LogInfo("events: connected to NATS");
  }
  static void OnDisconnected(natsConnection*, void* self) {
    if (static_cast<NatsPublisher*>(self)->stopping_requested_) return;
    base::LogWarn(
        "events: disconnected from NATS; reconnecting (events dropped and counted "
        "meanwhile, or retried with JetStream)");
  }
  static void OnReconnected(natsConnection*, void*) {
    base::LogInfo("events: reconnected to NATS");
  }
  static void OnClosed(natsConnection*, void* self) {
    auto* p = static_cast<NatsPublisher*>(self);
    std::lock_guard<std::mutex> lock(p->closed_mu_);
    p->closed_ = true;
    p->closed_cv_.notify_all();
  }

  // Closes the connection and waits (up to 5 s) for libnats' closed callback: its callbacks run
  // on a thread of its own and receive `this`, so the object must outlive the last of them (the
  // disconnected callback comes before the closed one). The UBSan build of the fuzz preset saw
  // OnDisconnected run on a destroyed publisher before this wait existed.
  void CloseAndWait() {
    natsConnection_Close(nc_);
    std::unique_lock<std::mutex> lock(closed_mu_);
    closed_cv_.wait_for(lock, std::chrono::seconds(5), [this] { return closed_; });
  }

  void Drop(std::string_view reason) {
    ++dropped_;
    if (hooks_.dropped) hooks_.dropped(reason);
  }
  void Published() {
    ++published_;
    if (hooks_.published) hooks_.published();
  }

  bool Connected() const { return natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED; }

  // Waits `d`, or less when Stop's deadline comes first. False once that deadline has passed.
  bool Backoff(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mu_);
    Clock::time_point until = Clock::now() + d;
    if (stopping_ && deadline_ < until) until = deadline_;
    cv_.wait_until(lock, until, [&] { return stopping_ && Clock::now() >= deadline_; });
    return !(stopping_ && Clock::now() >= deadline_);
  }

  void Run() {
    while (true) {
      EventMessage m;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) break;
        if (stopping_ && Clock::now() >= deadline_) break;
        m = std::move(queue_.front());
        queue_.pop_front();
      }
      if (options_.jetstream) {
        PublishJetStream(m);
      } else {
        PublishPlain(m);
      }
    }
    std::deque<EventMessage> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      left.swap(queue_);
    }
    for (size_t i = 0; i < left.size(); ++i) Drop("shutdown");
  }

  // A message with the Nats-Msg-Id header (the event id), in both modes: JetStream dedups on it,
  // and plain subscribers may too.
  natsMsg* MakeMsg(const EventMessage& m) {
    natsMsg* msg = nullptr;
    if (natsMsg_Create(&msg, m.subject.c_str(), nullptr, m.payload.data(),
                       static_cast<int>(m.payload.size())) != NATS_OK) {
      return nullptr;
    }
    natsMsgHeader_Set(msg, "Nats-Msg-Id", m.id.c_str());
    natsMsgHeader_Set(msg, "Contextd-Event", m.type.c_str());
    return msg;
  }

  void PublishPlain(const EventMessage& m) {
    // At most once: while disconnected the event is dropped, not buffered by the client library
    // (whose reconnect buffer would deliver stale events in a burst, or fail silently when full).
    if (!Connected()) {
      Drop("disconnected");
      return;
    }
    natsMsg* msg = MakeMsg(m);
    natsStatus s = msg == nullptr ? NATS_NO_MEMORY : natsConnection_PublishMsg(nc_, msg);
    natsMsg_Destroy(msg);
    if (s == NATS_OK) {
      Published();
    } else {
      Drop("publish_error");
      LogOnce(base::StrCat("events: publishing ", m.type, ": ", NatsError(s)));
    }
  }

  // Creates the stream if it does not exist (subjects <prefix>.>, file storage, the server's
  // default duplicate window of 2 minutes). An existing stream is used as configured.
  bool EnsureStream() {
    if (stream_ready_) return true;
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_GetStreamInfo(&si, js_, options_.stream.c_str(), nullptr, &jerr);
    if (s == NATS_NOT_FOUND) {
      jsStreamConfig cfg;
      jsStreamConfig_Init(&cfg);
      cfg.Name = options_.stream.c_str();
      std::string subjects = options_.subject_prefix + ".>";
      const char* list[1] = {subjects.c_str()};
      cfg.Subjects = list;
      cfg.SubjectsLen = 1;
      cfg.Storage = js_FileStorage;
      s = js_AddStream(&si, js_, &cfg, nullptr, &jerr);
      if (s == NATS_OK) {
        base::LogInfo(
            base::StrCat("events: created JetStream stream ", options_.stream, " for ", subjects));
      }
    }
    if (si != nullptr) jsStreamInfo_Destroy(si);
    if (s != NATS_OK) {
      LogOnce(base::StrCat("events: JetStream stream ", options_.stream, ": ", NatsError(s)));
      return false;
    }
    stream_ready_ = true;
    return true;
  }

  // At least once into the stream, exactly once stored: every attempt carries the same
  // Nats-Msg-Id, so a retry of a publish whose ack was lost is acked as a duplicate.
  void PublishJetStream(const EventMessage& m) {
    std::chrono::milliseconds wait(250);
    for (int attempt = 1; attempt <= options_.publish_attempts; ++attempt) {
      if (attempt > 1) {
        ++retries_;
        if (!Backoff(wait)) break;
        wait = std::min(wait * 2, std::chrono::milliseconds(4'000));
      }
      if (!Connected() || !EnsureStream()) continue;
      natsMsg* msg = MakeMsg(m);
      if (msg == nullptr) continue;
      jsPubOptions po;
      jsPubOptions_Init(&po);
      po.MsgId = m.id.c_str();
      po.MaxWait = options_.ack_timeout_ms;
      jsPubAck* ack = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      natsStatus s = js_PublishMsg(&ack, js_, msg, &po, &jerr);
      natsMsg_Destroy(msg);
      if (s == NATS_OK) {
        if (ack != nullptr && ack->Duplicate) {
          ++duplicates_;
          if (hooks_.duplicate) hooks_.duplicate();
        }
        if (ack != nullptr) jsPubAck_Destroy(ack);
        Published();
        return;
      }
      if (ack != nullptr) jsPubAck_Destroy(ack);
      // No responders: the stream is gone (or not created yet): look again next attempt.
      if (s == NATS_NO_RESPONDERS) stream_ready_ = false;
      LogOnce(base::StrCat("events: JetStream publish of ", m.type, " (attempt ", attempt,
                           "): ", NatsError(s)));
    }
    Drop("retries_exhausted");
  }

  // One log line per distinct message in a row, so a long outage does not flood the log.
  void LogOnce(std::string line) {
    if (line == last_log_) return;
    base::LogWarn(line);
    last_log_ = std::move(line);
  }

  const PublisherOptions options_;
  const PublisherHooks hooks_;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::thread worker_;
  bool stream_ready_ = false;  // the worker's, or Send's caller's
  std::string last_log_;       // the worker's, or Send's caller's
  std::atomic<bool> ever_connected_{false};
  std::atomic<bool> stopping_requested_{false};
  // Set by OnClosed (libnats' callback thread); CloseAndWait waits for it.
  std::mutex closed_mu_;
  std::condition_variable closed_cv_;
  bool closed_ = false;
  std::atomic<uint64_t> enqueued_{0}, published_{0}, dropped_{0}, duplicates_{0}, retries_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<EventMessage> queue_;
  bool stopping_ = false;
  Clock::time_point deadline_{};
};

}  // namespace

bool NatsSupported() { return true; }

absl::StatusOr<std::unique_ptr<Publisher>> StartNatsPublisher(const PublisherOptions& options,
                                                              PublisherHooks hooks) {
  if (options.url.empty()) {
    return absl::InvalidArgumentError("config key 'events.nats.url': must be set");
  }
  if (options.jetstream && options.stream.empty()) {
    return absl::InvalidArgumentError(
        "config key 'events.nats.stream': must be set when events.nats.jetstream is true");
  }
  auto publisher = std::make_unique<NatsPublisher>(options, std::move(hooks));
  absl::Status started = publisher->Start();
  if (!started.ok()) return started;
  return std::unique_ptr<Publisher>(std::move(publisher));
}

}  // namespace contextd::events
