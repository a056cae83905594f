// The NATS publisher against a real nats-server (skipped when the binary is missing).
#include <gtest/gtest.h>
#include <nats/nats.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "events/publisher.h"
#include "events/testing/nats_server.h"

namespace contextd::events {
namespace {

using testing::NatsServer;

bool WaitFor(const std::function<bool()>& done, int ms = 10'000) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

EventMessage Message(const std::string& id, const std::string& type = "branch.created") {
  return EventMessage{id, type, "contextd.t.p.s." + type, "{\"id\":\"" + id + "\"}"};
}

class NatsPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (NatsServer::Binary().empty()) {
      GTEST_SKIP() << "nats-server not installed (apt-get install nats-server, or run "
                      "scripts/install-deps.sh): the NATS publisher tests are skipped";
    }
  }

  std::unique_ptr<Publisher> Start(const NatsServer& server, bool jetstream,
                                   PublisherOptions o = {}) {
    o.url = server.url();
    o.jetstream = jetstream;
    if (jetstream) o.stream = "EVENTS";
    o.reconnect_wait_ms = 100;
    o.ack_timeout_ms = 500;
    PublisherHooks hooks;
    hooks.dropped = [this](std::string_view reason) {
      std::lock_guard<std::mutex> lock(mu_);
      ++drops_[std::string(reason)];
    };
    auto p = StartNatsPublisher(o, std::move(hooks));
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }

  int Drops(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    return drops_[reason];
  }

  std::mutex mu_;
  std::map<std::string, int> drops_;
};

// A plain subscriber on contextd.>.
struct Subscriber {
  explicit Subscriber(const std::string& url) {
    EXPECT_EQ(natsConnection_ConnectTo(&nc, url.c_str()), NATS_OK);
    EXPECT_EQ(natsConnection_SubscribeSync(&sub, nc, "contextd.>"), NATS_OK);
    natsConnection_Flush(nc);
  }
  ~Subscriber() {
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
  }
  // The next message's Nats-Msg-Id and subject, or {"", ""} after `ms`.
  std::pair<std::string, std::string> Next(int ms = 5'000) {
    natsMsg* msg = nullptr;
    if (natsSubscription_NextMsg(&msg, sub, ms) != NATS_OK) return {};
    const char* id = nullptr;
    natsMsgHeader_Get(msg, "Nats-Msg-Id", &id);
    std::pair<std::string, std::string> out{id != nullptr ? id : "", natsMsg_GetSubject(msg)};
    natsMsg_Destroy(msg);
    return out;
  }
  natsConnection* nc = nullptr;
  natsSubscription* sub = nullptr;
};

uint64_t StreamMessages(const std::string& url) {
  natsConnection* nc = nullptr;
  if (natsConnection_ConnectTo(&nc, url.c_str()) != NATS_OK) return 0;
  jsCtx* js = nullptr;
  natsConnection_JetStream(&js, nc, nullptr);
  jsStreamInfo* si = nullptr;
  uint64_t n = 0;
  if (js_GetStreamInfo(&si, js, "EVENTS", nullptr, nullptr) == NATS_OK) {
    n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
  }
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return n;
}

TEST_F(NatsPublisherTest, PlainPublishesEachEventWithItsIdAsNatsMsgId) {
  auto server = NatsServer::Start(false);
  ASSERT_NE(server, nullptr);
  Subscriber sub(server->url());
  auto p = Start(*server, false);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(WaitFor([&] { return p->state() == ConnectionState::kConnected; }));
  p->Enqueue(Message("ev_1"));
  p->Enqueue(Message("ev_2", "branch.folded"));
  EXPECT_EQ(sub.Next(),
            std::make_pair(std::string("ev_1"), std::string("contextd.t.p.s.branch.created")));
  EXPECT_EQ(sub.Next(),
            std::make_pair(std::string("ev_2"), std::string("contextd.t.p.s.branch.folded")));
  p->Stop();
  EXPECT_EQ(p->stats().published, 2u);
  EXPECT_EQ(p->stats().dropped, 0u);
  EXPECT_EQ(p->state(), ConnectionState::kClosed);
}

TEST_F(NatsPublisherTest, DownAtStartDropsAndCountsThenReconnects) {
  auto server = NatsServer::Start(false);
  ASSERT_NE(server, nullptr);
  server->Kill();
  auto p = Start(*server, false);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->state(), ConnectionState::kConnected);
  p->Enqueue(Message("ev_lost"));
  ASSERT_TRUE(WaitFor([&] { return Drops("disconnected") == 1; }));
  ASSERT_TRUE(server->Restart());
  ASSERT_TRUE(WaitFor([&] { return p->state() == ConnectionState::kConnected; }));
  Subscriber sub(server->url());
  p->Enqueue(Message("ev_after"));
  EXPECT_EQ(sub.Next().first, "ev_after");
  // An outage after a connection: reconnecting, then connected again.
  server->Kill();
  ASSERT_TRUE(WaitFor([&] { return p->state() == ConnectionState::kReconnecting; }));
  ASSERT_TRUE(server->Restart());
  ASSERT_TRUE(WaitFor([&] { return p->state() == ConnectionState::kConnected; }));
}

TEST_F(NatsPublisherTest, JetStreamStoresARepeatedEventOnce) {
  auto server = NatsServer::Start(true);
  ASSERT_NE(server, nullptr);
  auto p = Start(*server, true);
  ASSERT_NE(p, nullptr);
  p->Enqueue(Message("ev_1"));
  p->Enqueue(Message("ev_2"));
  p->Enqueue(Message("ev_1"));  // what a retry after a lost ack sends
  ASSERT_TRUE(WaitFor([&] { return p->stats().published == 3; }));
  EXPECT_EQ(p->stats().duplicates, 1u);
  EXPECT_EQ(StreamMessages(server->url()), 2u);
}

TEST_F(NatsPublisherTest, JetStreamRetriesAcrossAnOutage) {
  auto server = NatsServer::Start(true);
  ASSERT_NE(server, nullptr);
  auto p = Start(*server, true);
  ASSERT_NE(p, nullptr);
  p->Enqueue(Message("ev_1"));
  ASSERT_TRUE(WaitFor([&] { return p->stats().published == 1; }));
  server->Kill();
  p->Enqueue(Message("ev_2"));
  p->Enqueue(Message("ev_3"));
  ASSERT_TRUE(WaitFor([&] { return p->stats().retries > 0; }));
  ASSERT_TRUE(server->Restart());
  ASSERT_TRUE(WaitFor([&] { return p->stats().published == 3; }, 20'000));
  EXPECT_EQ(p->stats().dropped, 0u);
  EXPECT_EQ(StreamMessages(server->url()), 3u);
}

TEST_F(NatsPublisherTest, FullQueueAndShutdownDropsAreCountedAndStopIsBounded) {
  auto server = NatsServer::Start(true);
  ASSERT_NE(server, nullptr);
  server->Kill();
  PublisherOptions o;
  o.queue_capacity = 1;
  o.flush_timeout_ms = 300;
  auto p = Start(*server, true, o);
  ASSERT_NE(p, nullptr);
  p->Enqueue(Message("ev_1"));  // taken by the worker, which retries it
  ASSERT_TRUE(WaitFor([&] { return p->stats().queued == 0; }));
  p->Enqueue(Message("ev_2"));  // queued
  p->Enqueue(Message("ev_3"));  // full
  EXPECT_EQ(Drops("queue_full"), 1);
  auto before = std::chrono::steady_clock::now();
  p->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(3));
  EXPECT_EQ(Drops("retries_exhausted") + Drops("shutdown"), 2);
  p->Enqueue(Message("ev_4"));
  EXPECT_EQ(Drops("shutdown") + Drops("retries_exhausted"), 3);
}

}  // namespace
}  // namespace contextd::events
