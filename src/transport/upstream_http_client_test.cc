// UpstreamHttpChannel against scripted servers on 127.0.0.1 port 0: https with certificates made
// in the test (trusted through ca_file, untrusted, wrong name) and the standalone GET stream
// (events, reconnect with Last-Event-ID after a drop, 405, 404), and pooled keep-alive connections.
#include "transport/upstream_http_client.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "gtest/gtest.h"
#include "transport/http_url.h"
#include "transport/testing/fake_mcp_http_server.h"
#include "transport/testing/http_script_server.h"

namespace contextd::transport {
namespace {

using namespace std::chrono_literals;
using testing::FakeMcpHttpServer;
using testing::TempDir;

constexpr char kInitialize[] =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})";
constexpr char kInitialized[] = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";

// Collects what a channel reports.
class Recorder {
 public:
  UpstreamCallbacks Callbacks() {
    UpstreamCallbacks callbacks;
    callbacks.on_line = [this](std::string line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::move(line));
      cv_.notify_all();
    };
    callbacks.on_closed = [this](std::string reason) {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = std::move(reason);
      cv_.notify_all();
    };
    return callbacks;
  }
  // Waits (bounded) for the next line; "" on timeout.
  std::string NextLine(std::chrono::milliseconds wait = 10s) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, wait, [&] { return !lines_.empty(); })) return "";
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    return line;
  }
  // Waits (bounded) for on_closed; its reason, or "" on timeout.
  std::string Closed(std::chrono::milliseconds wait = 10s) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [&] { return !closed_.empty(); });
    return closed_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
  std::string closed_;
};

std::unique_ptr<UpstreamHttpChannel> Open(const std::string& url, Recorder& recorder,
                                          const std::string& ca_file = "",
                                          UpstreamHttpOptions options = {}) {
  options.url = url;
  options.ca_file = ca_file;
  options.log_name = "t";
  if (options.stream_retry_initial == UpstreamHttpOptions{}.stream_retry_initial) {
    options.stream_retry_initial = 1ms;
  }
  auto channel = UpstreamHttpChannel::Start(options, recorder.Callbacks());
  EXPECT_TRUE(channel.ok()) << channel.status();
  return channel.ok() ? std::move(channel).value() : nullptr;
}

TEST(ParseHttpUrl, AcceptsHttpAndHttpsWithDefaultPorts) {
  auto plain = ParseHttpUrl("http://example.test/mcp");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->port, "80");
  auto tls = ParseHttpUrl("https://[::1]/x");
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->host, "::1");
  EXPECT_EQ(tls->port, "443");
  EXPECT_EQ(tls->target, "/x");
  EXPECT_FALSE(ParseHttpUrl("ftp://example.test/").ok());
  EXPECT_FALSE(ParseHttpUrl("https://").ok());
}

TEST(UpstreamHttpChannel, HttpsWithTheCertificateTrustedThroughCaFile) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteSelfSignedCertificate(dir.path(), "server", "IP:127.0.0.1").ok());
  auto server = FakeMcpHttpServer::Start({dir.path() + "/server.crt", dir.path() + "/server.key"});
  ASSERT_TRUE(server.ok()) << server.status();
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder, dir.path() + "/server.crt");
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  std::string line = recorder.NextLine();
  EXPECT_NE(line.find("\"protocolVersion\":\"2025-11-25\""), std::string::npos) << line;
  channel->Close();
}

TEST(UpstreamHttpChannel, UntrustedCertificateEndsTheChannelWithATlsReason) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteSelfSignedCertificate(dir.path(), "server", "IP:127.0.0.1").ok());
  auto server = FakeMcpHttpServer::Start({dir.path() + "/server.crt", dir.path() + "/server.key"});
  ASSERT_TRUE(server.ok()) << server.status();
  std::string port = (*server)->url().substr(std::string("https://127.0.0.1:").size());
  port = port.substr(0, port.find('/'));
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder);  // the system trust store
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  EXPECT_EQ(recorder.Closed(), "TLS handshake with 127.0.0.1:" + port +
                                   " failed: certificate verify failed: self-signed certificate");
  EXPECT_FALSE(channel->Send(kInitialize).ok());
  EXPECT_EQ((*server)->posts(), 0);
  channel->Close();
}

TEST(UpstreamHttpChannel, CertificateForAnotherNameIsRejected) {
  TempDir dir;
  ASSERT_TRUE(testing::WriteSelfSignedCertificate(dir.path(), "other", "DNS:other.test").ok());
  auto server = FakeMcpHttpServer::Start({dir.path() + "/other.crt", dir.path() + "/other.key"});
  ASSERT_TRUE(server.ok()) << server.status();
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder, dir.path() + "/other.crt");
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  std::string reason = recorder.Closed();
  EXPECT_NE(reason.find("certificate verify failed: IP address mismatch"), std::string::npos)
      << reason;
  channel->Close();
}

TEST(UpstreamHttpChannel, UnreadableCaFileFailsAtStart) {
  UpstreamHttpOptions options;
  options.url = "https://127.0.0.1:1/mcp";
  options.ca_file = "/nonexistent/ca.pem";
  auto channel = UpstreamHttpChannel::Start(options, {});
  ASSERT_FALSE(channel.ok());
  EXPECT_NE(channel.status().message().find("CA file /nonexistent/ca.pem"), std::string::npos)
      << channel.status();
}

TEST(UpstreamHttpChannel, GetStreamDeliversEventsAndResumesWithLastEventIdAfterADrop) {
  auto server = FakeMcpHttpServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  // First stream: an event with id 7 and a cut-off one (no blank line) whose id must not count,
  // then the connection drops. Second: the next event, held open.
  (*server)->QueueGet({200,
                       ": hello\nretry: 1\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n"
                       "id: 8\ndata: {\"jsonrpc\":",
                       false});
  (*server)->QueueGet(
      {200, "id: 9\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"b\"}\r\n\r\n", true});
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder);
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  ASSERT_NE(recorder.NextLine().find("protocolVersion"), std::string::npos);
  ASSERT_TRUE(channel->Send(kInitialized).ok());
  EXPECT_EQ(recorder.NextLine(), R"({"jsonrpc":"2.0","method":"a"})");
  EXPECT_EQ(recorder.NextLine(), "{\"jsonrpc\":\"2.0\",\n\"method\":\"b\"}");
  ASSERT_TRUE((*server)->WaitForGets(2, 10s));
  EXPECT_EQ((*server)->get_last_event_ids(), (std::vector<std::string>{"", "7"}));
  // Close ends the held stream at once.
  auto start = std::chrono::steady_clock::now();
  channel->Close();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(recorder.Closed(0ms), "") << "an owner's Close is not reported";
}

TEST(UpstreamHttpChannel, GetStreamAnswered405IsNotRetried) {
  auto server = FakeMcpHttpServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder);
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  recorder.NextLine();
  ASSERT_TRUE(channel->Send(kInitialized).ok());
  ASSERT_TRUE((*server)->WaitForGets(1, 10s));
  // Requests keep working; with a 1 ms retry delay a retried GET would show up meanwhile.
  for (int i = 2; i < 12; ++i) {
    ASSERT_TRUE(
        channel->Send(R"({"jsonrpc":"2.0","id":)" + std::to_string(i) + R"(,"method":"ping"})")
            .ok());
    EXPECT_NE(recorder.NextLine().find("\"result\""), std::string::npos);
  }
  EXPECT_EQ((*server)->get_last_event_ids().size(), 1u);
  EXPECT_EQ(recorder.Closed(0ms), "");
  channel->Close();
}

TEST(UpstreamHttpChannel, GetStreamAnswered404EndsTheChannel) {
  auto server = FakeMcpHttpServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->QueueGet({404, "", false});
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder);
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  recorder.NextLine();
  ASSERT_TRUE(channel->Send(kInitialized).ok());
  EXPECT_EQ(recorder.Closed(), "upstream session expired (HTTP 404 on the GET stream)");
  channel->Close();
}

TEST(UpstreamHttpChannel, GetStreamRetriesAfterAConflictWithBackoff) {
  auto server = FakeMcpHttpServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->QueueGet({409, "", false});
  (*server)->QueueGet({503, "", false});
  (*server)->QueueGet({200, "data: {\"jsonrpc\":\"2.0\",\"method\":\"c\"}\n\n", true});
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder);
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  recorder.NextLine();
  ASSERT_TRUE(channel->Send(kInitialized).ok());
  EXPECT_EQ(recorder.NextLine(), R"({"jsonrpc":"2.0","method":"c"})");
  EXPECT_EQ((*server)->get_last_event_ids().size(), 3u);
  channel->Close();
}

TEST(UpstreamHttpChannel, AnSseAnswerIsBoundedPerEventNotInTotal) {
  auto server = FakeMcpHttpServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  UpstreamHttpOptions options;
  options.max_message_bytes = 200;
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder, "", options);
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  ASSERT_NE(recorder.NextLine().find("protocolVersion"), std::string::npos);
  // Ten progress events of about 100 bytes: 1 KB in all, each under the limit.
  std::string progress;
  for (int i = 1; i <= 10; ++i) {
    progress +=
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":"
        "{\"progressToken\":\"t\",\"progress\":" +
        std::to_string(i) + ",\"message\":\"step\"}}\n\n";
  }
  (*server)->AnswerPostsWithSse(progress);
  ASSERT_TRUE(channel->Send(R"({"jsonrpc":"2.0","id":2,"method":"tools/call"})").ok());
  for (int i = 1; i <= 10; ++i) {
    EXPECT_NE(recorder.NextLine().find("\"progress\":" + std::to_string(i)), std::string::npos);
  }
  std::string answer = recorder.NextLine();
  EXPECT_NE(answer.find("\"id\":2"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"result\""), std::string::npos) << answer;
  // One event over the limit is dropped, and its request fails at once with the reason.
  (*server)->AnswerPostsWithSse("data: " + std::string(300, 'x') + "\n\n");
  ASSERT_TRUE(channel->Send(R"({"jsonrpc":"2.0","id":3,"method":"tools/call"})").ok());
  EXPECT_NE(recorder.NextLine().find("\"id\":3"), std::string::npos);  // the answer (under 200 B)
  std::string failed = recorder.NextLine();
  EXPECT_NE(failed.find("larger than 200 bytes"), std::string::npos) << failed;
  channel->Close();
}

TEST(UpstreamHttpChannel, GetStreamRetryFromTheServerCannotGoBelowTheInitialDelay) {
  auto server = FakeMcpHttpServer::Start({});
  ASSERT_TRUE(server.ok()) << server.status();
  // "retry: 0", then the stream ends: the reconnect must still wait the initial delay.
  (*server)->QueueGet({200, "retry: 0\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n", false});
  UpstreamHttpOptions options;
  options.stream_retry_initial = 300ms;
  Recorder recorder;
  auto channel = Open((*server)->url(), recorder, "", options);
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  recorder.NextLine();
  ASSERT_TRUE(channel->Send(kInitialized).ok());
  EXPECT_EQ(recorder.NextLine(), R"({"jsonrpc":"2.0","method":"a"})");
  const auto first = std::chrono::steady_clock::now();
  ASSERT_TRUE((*server)->WaitForGets(2, 10s));
  EXPECT_GE(std::chrono::steady_clock::now() - first, 250ms);
  channel->Close();
}

TEST(UpstreamHttpChannel, AToolCallOnAStalePooledConnectionFailsWithoutBeingSentTwice) {
  // Keep-alive: the first connection answers initialize, then reads the tools/call and closes
  // without an answer (as a server closing an idle connection might). The call is not sent again
  // (it may have run), it fails at once, and the channel goes on over a new connection.
  std::mutex mu;
  std::vector<std::string> bodies;  // every request body the server read, in order
  testing::ScriptServer server([&](testing::ServerConn& conn) {
    testing::http::request<testing::http::string_body> request;
    while (conn.Read(request)) {
      {
        std::lock_guard<std::mutex> lock(mu);
        bodies.push_back(request.body());
      }
      if (conn.index() == 0 && request.body().find("tools/call") != std::string::npos) {
        conn.Close();
        return;
      }
      const std::string id = request.body().find("\"id\":1,") != std::string::npos ? "1" : "3";
      const std::string body = R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{}})";
      conn.Write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                 std::to_string(body.size()) + "\r\n\r\n" + body);
    }
  });
  Recorder recorder;
  auto channel = Open(server.url("/mcp"), recorder);
  ASSERT_NE(channel, nullptr);
  ASSERT_TRUE(channel->Send(kInitialize).ok());
  EXPECT_EQ(recorder.NextLine(), R"({"jsonrpc":"2.0","id":1,"result":{}})");
  ASSERT_TRUE(channel->Send(R"({"jsonrpc":"2.0","id":2,"method":"tools/call"})").ok());
  std::string failed = recorder.NextLine();
  EXPECT_NE(failed.find(R"("id":2)"), std::string::npos) << failed;
  EXPECT_NE(failed.find("upstream connection failed"), std::string::npos) << failed;
  ASSERT_TRUE(channel->Send(R"({"jsonrpc":"2.0","id":3,"method":"ping"})").ok());
  EXPECT_EQ(recorder.NextLine(), R"({"jsonrpc":"2.0","id":3,"result":{}})");
  EXPECT_EQ(recorder.Closed(0ms), "");
  channel->Close();
  EXPECT_EQ(server.connections(), 2);
  std::lock_guard<std::mutex> lock(mu);
  auto tool_call = [](const std::string& b) { return b.find("tools/call") != std::string::npos; };
  EXPECT_EQ(std::count_if(bodies.begin(), bodies.end(), tool_call), 1);
}

}  // namespace
}  // namespace contextd::transport
