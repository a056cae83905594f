// UpstreamClient on its own: requests to a real child process, failure modes.
#include "gateway/upstream_client.h"

#include <cstdlib>
#include <filesystem>
#include <future>
#include <thread>

#include "gtest/gtest.h"
#include "transport/testing/fake_mcp_http_server.h"

namespace contextd::gateway {
namespace {

using namespace std::chrono_literals;

TEST(UpstreamClient, MissingProgramFailsRequestsAtOnceWithUnavailable) {
  base::ThreadExecutor executor;
  UpstreamConfig config;
  config.name = "gone";
  config.stdio = StdioUpstream{"/nonexistent/upstream-binary", {}, {}, ""};
  std::shared_ptr<UpstreamClient> client;
  std::promise<absl::Status> result;
  executor.RunSync([&] {
    client = std::make_shared<UpstreamClient>(executor, config, UpstreamClient::Listener{},
                                              UpstreamClient::Backoff{1000ms, 1000ms});
    client->Start();
    EXPECT_FALSE(client->ready());
    client->Request("tools/call", protocol::Json::object(),
                    [&](absl::StatusOr<protocol::Json> r) { result.set_value(r.status()); });
  });
  absl::Status s = result.get_future().get();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("upstream gone unavailable: cannot start"), std::string::npos) << s;
  executor.RunSync([&] {
    client->Stop();
    client.reset();
  });
}

TEST(UpstreamClient, InitializesAndListsTheCatalog) {
  base::ThreadExecutor executor;
  UpstreamConfig config;
  config.name = "t";
  config.stdio = StdioUpstream{GATEWAY_TEST_UPSTREAM, {}, {}, ""};
  std::promise<void> ready;
  std::shared_ptr<UpstreamClient> client;
  executor.RunSync([&] {
    UpstreamClient::Listener listener;
    listener.on_catalog = [&] { ready.set_value(); };
    client =
        std::make_shared<UpstreamClient>(executor, config, listener, UpstreamClient::Backoff{});
    client->Start();
  });
  ASSERT_EQ(ready.get_future().wait_for(15s), std::future_status::ready);
  executor.RunSync([&] {
    EXPECT_TRUE(client->ready());
    EXPECT_GE(client->catalog().tools.size(), 9u);
    EXPECT_EQ(client->catalog().resources.size(), 1u);
    client->Stop();
    EXPECT_FALSE(client->ready());
    client.reset();
  });
}

// An answer that names a member twice is refused (decision 0029): the request fails at once with
// the path, not at its timeout.
TEST(UpstreamClient, AnswerWithDuplicateKeyFailsTheRequestAtOnce) {
  base::ThreadExecutor executor;
  UpstreamConfig config;
  config.name = "t";
  config.stdio = StdioUpstream{GATEWAY_TEST_UPSTREAM, {}, {}, ""};
  config.call_timeout = 600s;
  std::promise<void> ready;
  std::promise<absl::Status> result;
  std::shared_ptr<UpstreamClient> client;
  executor.RunSync([&] {
    UpstreamClient::Listener listener;
    listener.on_catalog = [&] { ready.set_value(); };
    client =
        std::make_shared<UpstreamClient>(executor, config, listener, UpstreamClient::Backoff{});
    client->Start();
  });
  ASSERT_EQ(ready.get_future().wait_for(15s), std::future_status::ready);
  executor.RunSync([&] {
    client->Request("tools/call",
                    protocol::Json{{"name", "dupe"}, {"arguments", protocol::Json::object()}},
                    [&](absl::StatusOr<protocol::Json> r) { result.set_value(r.status()); });
  });
  auto done = result.get_future();
  ASSERT_EQ(done.wait_for(15s), std::future_status::ready);
  absl::Status s = done.get();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("result.content.0: duplicate key \"text\""), std::string::npos) << s;
  EXPECT_EQ(s.message().find("AKIA"), std::string::npos) << s;
  executor.RunSync([&] {
    client->Stop();
    client.reset();
  });
}

// An https upstream (a scripted server with a certificate made here): trusted through ca_file
// it becomes ready; with the system trust store, requests fail with the TLS reason.
TEST(UpstreamClient, HttpsUpstreamVerifiesTheServerCertificate) {
  std::string dir = (std::filesystem::temp_directory_path() / "ctxd_up_tls_XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  ASSERT_TRUE(transport::testing::WriteSelfSignedCertificate(dir, "server", "IP:127.0.0.1").ok());
  auto server =
      transport::testing::FakeMcpHttpServer::Start({dir + "/server.crt", dir + "/server.key"});
  ASSERT_TRUE(server.ok()) << server.status();
  base::ThreadExecutor executor;
  auto run = [&](const std::string& name, const std::string& ca_file) -> absl::Status {
    UpstreamConfig config;
    config.name = name;
    config.http = HttpUpstream{(*server)->url(), {}, ca_file};
    std::shared_ptr<UpstreamClient> client;
    std::promise<absl::Status> result;
    executor.RunSync([&] {
      client = std::make_shared<UpstreamClient>(executor, config, UpstreamClient::Listener{},
                                                UpstreamClient::Backoff{60000ms, 60000ms});
      client->Start();
    });
    // Ready, or down after the failed handshake: the client has no event for the latter, so
    // its state is polled on the executor (bounded).
    auto deadline = std::chrono::steady_clock::now() + 15s;
    bool settled = false;
    while (!settled && std::chrono::steady_clock::now() < deadline) {
      executor.RunSync([&] { settled = client->settled(); });
      std::this_thread::yield();
    }
    EXPECT_TRUE(settled);
    executor.RunSync([&] {
      client->Request("ping", protocol::Json::object(),
                      [&](absl::StatusOr<protocol::Json> r) { result.set_value(r.status()); });
    });
    absl::Status status = result.get_future().get();
    executor.RunSync([&] {
      client->Stop();
      client.reset();
    });
    return status;
  };
  EXPECT_TRUE(run("trusted", dir + "/server.crt").ok());
  absl::Status untrusted = run("untrusted", "");
  EXPECT_EQ(untrusted.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      untrusted.message().rfind("upstream untrusted unavailable: TLS handshake with 127.0.0.1:", 0),
      0u)
      << untrusted;
  EXPECT_NE(untrusted.message().find("certificate verify failed: self-signed certificate"),
            std::string::npos)
      << untrusted;
  executor.Stop();
  std::filesystem::remove_all(dir);
}

// Garbage on an HTTP upstream's GET stream (unparseable events, a response nobody asked for, a
// server request with no call in flight) is logged or refused; the client stays usable.
TEST(UpstreamClient, BadMessagesOnTheGetStreamAreSurvived) {
  auto server = transport::testing::FakeMcpHttpServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->QueueGet({200,
                       "data: {not json\n\ndata: [1,2\n\ndata: 42\n\n"
                       "data: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n\n"
                       "data: {\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"roots/list\"}\n\n",
                       true});
  base::ThreadExecutor executor;
  UpstreamConfig config;
  config.name = "h";
  config.http = HttpUpstream{(*server)->url(), {}, ""};
  std::shared_ptr<UpstreamClient> client;
  std::promise<void> ready;
  executor.RunSync([&] {
    UpstreamClient::Listener listener;
    listener.on_catalog = [&] { ready.set_value(); };
    client =
        std::make_shared<UpstreamClient>(executor, config, listener, UpstreamClient::Backoff{});
    client->Start();
  });
  ASSERT_EQ(ready.get_future().wait_for(15s), std::future_status::ready);
  // initialize, initialized, then the refusal of roots/list: the stream's last event was
  // handled (after the garbage before it).
  ASSERT_TRUE((*server)->WaitForPosts(3, 15s));
  std::promise<absl::Status> pinged;
  executor.RunSync([&] {
    client->Request("ping", protocol::Json::object(),
                    [&](absl::StatusOr<protocol::Json> r) { pinged.set_value(r.status()); });
  });
  EXPECT_TRUE(pinged.get_future().get().ok());
  executor.RunSync([&] {
    EXPECT_TRUE(client->ready());
    client->Stop();
    client.reset();
  });
  executor.Stop();
}

}  // namespace
}  // namespace contextd::gateway
