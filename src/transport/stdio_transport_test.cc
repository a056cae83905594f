#include "transport/stdio_transport.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "protocol/jsonrpc.h"
#include "transport/testing/echo_session.h"

namespace contextd::transport {
namespace {

using protocol::Json;
using testing::EchoSessionFactory;

// ServeStdio on a thread, fed and read through real pipes.
class StdioHarness {
 public:
  explicit StdioHarness(bool async = false, StdioOptions options = {})
      : factory_(async), options_(options) {
    EXPECT_EQ(pipe(in_), 0);
    EXPECT_EQ(pipe(out_), 0);
    server_ = std::thread([this] {
      status_ = ServeStdio(factory_, in_[0], out_[1], options_);
      close(out_[1]);
      done_ = true;
    });
  }
  ~StdioHarness() {
    CloseInput();
    if (server_.joinable()) server_.join();
    close(in_[0]);
    if (out_[0] >= 0) close(out_[0]);
  }

  void Write(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = write(in_[1], bytes.data() + off, bytes.size() - off);
      ASSERT_GT(n, 0);
      off += static_cast<size_t>(n);
    }
  }
  void CloseInput() {
    if (in_[1] >= 0) close(in_[1]);
    in_[1] = -1;
  }
  void CloseOutputReader() {
    close(out_[0]);
    out_[0] = -1;
  }
  // Next output line (without "\n"), or "<eof>".
  std::string ReadLine() {
    for (;;) {
      size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      char tmp[65536];
      ssize_t n = read(out_[0], tmp, sizeof(tmp));
      if (n <= 0) return "<eof>";
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }
  Json ReadJson() { return Json::parse(ReadLine()); }
  // Waits for ServeStdio to return.
  absl::Status Join() {
    server_.join();
    return status_;
  }
  EchoSessionFactory& factory() { return factory_; }

 private:
  EchoSessionFactory factory_;
  StdioOptions options_;
  int in_[2] = {-1, -1};
  int out_[2] = {-1, -1};
  std::thread server_;
  absl::Status status_;
  std::atomic<bool> done_{false};
  std::string buf_;
};

std::string Req(int id, const std::string& method = "ping", const std::string& params = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
         R"(","params":)" + params + "}";
}

TEST(StdioTransportTest, AnswersRequestsAndCreatesOneStdioSession) {
  StdioHarness h;
  h.Write(Req(1, "initialize", R"({"protocolVersion":"2025-03-26"})") + "\n");
  Json r = h.ReadJson();
  EXPECT_EQ(r["id"], 1);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-03-26");
  h.Write(R"({"jsonrpc":"2.0","id":"x","method":"ping","params":{"a":1}})"
          "\r\n");
  r = h.ReadJson();
  EXPECT_EQ(r["id"], "x");
  EXPECT_EQ(r["result"]["echo"]["a"], 1);
  h.CloseInput();
  EXPECT_EQ(h.ReadLine(), "<eof>");
  EXPECT_TRUE(h.Join().ok());
  ASSERT_EQ(h.factory().infos().size(), 1u);
  EXPECT_EQ(h.factory().infos()[0].session_id, "stdio");
  EXPECT_EQ(h.factory().infos()[0].tenant, "local");
  EXPECT_EQ(h.factory().infos()[0].transport, "stdio");
  EXPECT_EQ(h.factory().close_reasons(), std::vector<std::string>{"stdin closed"});
}

void PipelineTest(bool async) {
  StdioHarness h(async);
  constexpr int kN = 20000;
  std::thread writer([&] {
    std::string all;
    for (int i = 0; i < kN; ++i) all += Req(i) + "\n";
    h.Write(all);
    h.CloseInput();
  });
  std::vector<bool> seen(kN, false);
  int count = 0;
  for (;;) {
    std::string line = h.ReadLine();
    if (line == "<eof>") break;
    Json r = Json::parse(line);
    int id = r["id"].get<int>();
    ASSERT_FALSE(seen[id]);
    seen[id] = true;
    ++count;
  }
  writer.join();
  EXPECT_EQ(count, kN);  // every answer arrives before the EOF-triggered close
  EXPECT_TRUE(h.Join().ok());
}

TEST(StdioTransportTest, PipelinedRequestsAllAnsweredSync) { PipelineTest(false); }
TEST(StdioTransportTest, PipelinedRequestsAllAnsweredAsyncEngine) { PipelineTest(true); }

TEST(StdioTransportTest, BatchAnsweredAsOneArrayLine) {
  StdioHarness h(/*async=*/true);
  h.Write("[" + Req(1) + R"(,{"jsonrpc":"2.0","method":"notifications/x"},)" + Req(2) + "]\n");
  Json r = h.ReadJson();
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.size(), 2u);
  std::set<int> ids = {r[0]["id"].get<int>(), r[1]["id"].get<int>()};
  EXPECT_EQ(ids, (std::set<int>{1, 2}));
  // A batch of notifications only gets nothing; the next line proves it.
  h.Write(R"([{"jsonrpc":"2.0","method":"notifications/a"}])"
          "\n" +
          Req(3) + "\n");
  EXPECT_EQ(h.ReadJson()["id"], 3);
}

TEST(StdioTransportTest, BatchWithInvalidItemsAndDuplicateIds) {
  StdioHarness h;
  h.Write("[" + Req(1) + ",42," + Req(1) + "]\n");
  Json r = h.ReadJson();
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.size(), 3u);
  int errors = 0, results = 0;
  for (const auto& m : r) {
    if (m.contains("error")) {
      ++errors;
      EXPECT_EQ(m["error"]["code"], protocol::kInvalidRequest);
    } else {
      ++results;
      EXPECT_EQ(m["id"], 1);
    }
  }
  EXPECT_EQ(errors, 2);
  EXPECT_EQ(results, 1);
}

TEST(StdioTransportTest, BadInputGetsErrorsAndTheStreamContinues) {
  StdioOptions opts;
  opts.max_message_bytes = 1024;
  StdioHarness h(false, opts);
  h.Write("this is not json\n");
  Json r = h.ReadJson();
  EXPECT_EQ(r["error"]["code"], protocol::kParseError);
  EXPECT_TRUE(r["id"].is_null());
  h.Write("[]\n");
  EXPECT_EQ(h.ReadJson()["error"]["code"], protocol::kInvalidRequest);
  h.Write("\"str\"\n");
  EXPECT_EQ(h.ReadJson()["error"]["code"], protocol::kInvalidRequest);
  h.Write(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"
          "\n");
  EXPECT_EQ(h.ReadJson()["error"]["code"], protocol::kInvalidRequest);
  h.Write(std::string(R"({"jsonrpc":"2.0","id":5,"method":"ping","params":{"s":")") + "\xff\xfe" +
          "\"}}\n");
  EXPECT_EQ(h.ReadJson()["error"]["code"], protocol::kParseError);
  // Oversize: one error, then the next message is served.
  h.Write(std::string(5000, 'x'));
  h.Write(std::string(5000, 'y') + "\n" + Req(9) + "\n");
  r = h.ReadJson();
  EXPECT_EQ(r["error"]["code"], protocol::kInvalidRequest);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("1024"), std::string::npos);
  EXPECT_EQ(h.ReadJson()["id"], 9);
}

TEST(StdioTransportTest, RelatedNotificationPrecedesResponse) {
  StdioHarness h(/*async=*/true);
  h.Write(Req(4, "tools/call", R"({"notify":true})") + "\n");
  Json n = h.ReadJson();
  EXPECT_EQ(n["method"], "notifications/message");
  EXPECT_EQ(h.ReadJson()["id"], 4);
}

TEST(StdioTransportTest, FinalLineWithoutNewlineIsServedAtEof) {
  StdioHarness h;
  h.Write(Req(7));
  h.CloseInput();
  EXPECT_EQ(h.ReadJson()["id"], 7);
  EXPECT_EQ(h.ReadLine(), "<eof>");
  EXPECT_TRUE(h.Join().ok());
}

TEST(StdioTransportTest, EofWithUnansweredRequestClosesAfterDrainTimeout) {
  StdioOptions opts;
  opts.eof_drain_timeout = std::chrono::milliseconds(20);
  StdioHarness h(false, opts);
  h.Write(Req(1, "ping", R"({"hold":true})") + "\n");
  h.CloseInput();
  EXPECT_EQ(h.ReadLine(), "<eof>");
  EXPECT_TRUE(h.Join().ok());
  EXPECT_EQ(h.factory().close_reasons(), std::vector<std::string>{"stdin closed"});
}

TEST(StdioTransportTest, ClientClosingOutputDoesNotKillTheServer) {
  StdioHarness h;
  h.CloseOutputReader();
  for (int i = 0; i < 100; ++i) h.Write(Req(i) + "\n");
  h.CloseInput();
  EXPECT_TRUE(h.Join().ok());
}

TEST(StdioTransportTest, ForwardsNotificationsAndResponsesToTheSession) {
  StdioHarness h;
  h.Write(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
          "\n"
          R"({"jsonrpc":"2.0","id":"s1","result":{}})"
          "\n" +
          Req(1) + "\n");
  EXPECT_EQ(h.ReadJson()["id"], 1);
  auto got = h.factory().received_non_requests();
  EXPECT_EQ(
      got, (std::vector<std::string>{"notification:notifications/initialized", "response:\"s1\""}));
}

}  // namespace
}  // namespace contextd::transport
