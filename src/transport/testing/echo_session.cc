#include "transport/testing/echo_session.h"

#include <utility>

namespace contextd::transport::testing {

using protocol::Json;

class EchoSession final : public protocol::Session,
                          public std::enable_shared_from_this<EchoSession> {
 public:
  EchoSession(EchoSessionFactory* factory, std::shared_ptr<protocol::MessageSink> sink)
      : factory_(factory), sink_(std::move(sink)) {}

  void Receive(protocol::Message message) override {
    factory_->Run([self = shared_from_this(), m = std::move(message)]() mutable {
      self->Handle(std::move(m));
    });
  }

  std::string protocol_version() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return version_;
  }

  void Close(std::string_view reason) override {
    if (closed_.exchange(true)) return;
    std::lock_guard<std::mutex> lock(factory_->mu_);
    factory_->close_reasons_.emplace_back(reason);
  }

  // The echo engine keeps nothing durable: the end is confirmed at once, unless the factory holds
  // confirmations (HoldCloseConfirmations) to let a test see what waits for one.
  void CloseThen(std::string_view reason, std::function<void(const absl::Status&)> done) override {
    Close(reason);
    {
      std::lock_guard<std::mutex> lock(factory_->mu_);
      if (factory_->hold_close_confirmations_) {
        factory_->held_confirmations_.push_back(std::move(done));
        return;
      }
    }
    factory_->Run([done = std::move(done)] { done(absl::OkStatus()); });
  }

 private:
  void Handle(protocol::Message m) {
    if (m.kind != protocol::MessageKind::kRequest) {
      std::lock_guard<std::mutex> lock(factory_->mu_);
      factory_->received_.push_back(m.method.empty() ? "response:" + m.id.dump()
                                                     : "notification:" + m.method);
      return;
    }
    const Json& p = m.params;
    const bool obj = p.is_object();
    if (obj && p.value("notify", false)) {
      sink_->Send(protocol::MakeNotification("notifications/message",
                                             {{"level", "info"}, {"data", "working"}}),
                  m.id);
    }
    if (obj && p.value("standalone", false)) {
      sink_->Send(protocol::MakeNotification("notifications/message",
                                             {{"level", "info"}, {"data", "standalone"}}),
                  nullptr);
    }
    if (obj && p.value("close_stream", false)) sink_->CloseStream(m.id);
    Json result;
    if (m.method == "initialize") {
      std::string v = obj && p.contains("protocolVersion") && p["protocolVersion"].is_string()
                          ? p["protocolVersion"].get<std::string>()
                          : "2025-11-25";
      {
        std::lock_guard<std::mutex> lock(mu_);
        version_ = v;
      }
      result = {{"protocolVersion", v},
                {"capabilities", {{"tools", Json::object()}}},
                {"serverInfo", {{"name", "echo"}, {"version", "0"}}}};
    } else if (m.method == "tools/call") {
      std::string text = obj && p.contains("arguments") ? p["arguments"].dump() : "{}";
      result = {{"content", Json::array({{{"type", "text"}, {"text", std::move(text)}}})}};
    } else {
      result = {{"echo", p}};
    }
    Json answer = protocol::MakeResult(m.id, std::move(result));
    if (obj && p.value("hold", false)) {
      std::lock_guard<std::mutex> lock(factory_->mu_);
      factory_->held_.push_back(
          [sink = sink_, a = std::move(answer), id = m.id] { sink->Send(a, id); });
      factory_->held_changed_.notify_all();
      return;
    }
    sink_->Send(answer, m.id);
  }

  EchoSessionFactory* factory_;
  std::shared_ptr<protocol::MessageSink> sink_;
  mutable std::mutex mu_;
  std::string version_;
  std::atomic<bool> closed_{false};
};

EchoSessionFactory::EchoSessionFactory(bool async) {
  if (async) engine_ = std::make_unique<base::ThreadExecutor>();
}

EchoSessionFactory::~EchoSessionFactory() {
  if (engine_) engine_->Stop();
}

void EchoSessionFactory::Run(std::function<void()> task) {
  if (engine_) {
    engine_->Post(std::move(task));
  } else {
    task();
  }
}

std::shared_ptr<protocol::Session> EchoSessionFactory::CreateSession(
    protocol::SessionInfo info, std::shared_ptr<protocol::MessageSink> sink) {
  created_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    infos_.push_back(info);
    sinks_.push_back(sink);
  }
  return std::make_shared<EchoSession>(this, std::move(sink));
}

void EchoSessionFactory::ReleaseHeld() {
  std::vector<std::function<void()>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held.swap(held_);
  }
  for (auto& f : held) Run(std::move(f));
}

bool EchoSessionFactory::WaitHeld(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return held_changed_.wait_for(lock, timeout, [&] { return held_.size() >= n; });
}

void EchoSessionFactory::Broadcast(const Json& message) {
  std::vector<std::shared_ptr<protocol::MessageSink>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : sinks_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->Send(message, nullptr);
}

void EchoSessionFactory::HoldCloseConfirmations() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_close_confirmations_ = true;
}

int EchoSessionFactory::ConfirmHeldCloses(const absl::Status& outcome) {
  std::vector<std::function<void(const absl::Status&)>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held.swap(held_confirmations_);
  }
  for (auto& done : held) done(outcome);
  return static_cast<int>(held.size());
}

std::vector<std::string> EchoSessionFactory::close_reasons() const {
  std::lock_guard<std::mutex> lock(mu_);
  return close_reasons_;
}

std::vector<std::string> EchoSessionFactory::received_non_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

std::vector<protocol::SessionInfo> EchoSessionFactory::infos() const {
  std::lock_guard<std::mutex> lock(mu_);
  return infos_;
}

}  // namespace contextd::transport::testing
