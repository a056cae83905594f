#include "transport/upstream_stdio_client.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "gtest/gtest.h"

namespace contextd::transport {
namespace {

// Collects what a channel's reader thread reports.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> lines;
  std::string closed;
  bool is_closed = false;

  UpstreamStdioCallbacks Callbacks() {
    return {[this](std::string line) {
              std::lock_guard<std::mutex> lock(mu);
              lines.push_back(std::move(line));
              cv.notify_all();
            },
            [this](std::string reason) {
              std::lock_guard<std::mutex> lock(mu);
              closed = std::move(reason);
              is_closed = true;
              cv.notify_all();
            }};
  }
  // Waits (bounded) for the next line; "" on timeout.
  std::string NextLine() {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return !lines.empty(); })) return "";
    std::string l = lines.front();
    lines.pop_front();
    return l;
  }
  bool WaitClosed() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return is_closed; });
  }
};

TEST(UpstreamStdioChannel, RoundTripsLinesThroughAChild) {
  Inbox inbox;
  auto channel =
      UpstreamStdioChannel::Start({"cat", {}, {}, "", 1 << 20, "cat"}, inbox.Callbacks());
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_GT((*channel)->pid(), 0);
  ASSERT_TRUE((*channel)->Send(R"({"jsonrpc":"2.0","method":"x"})").ok());
  ASSERT_TRUE((*channel)->Send("second").ok());
  EXPECT_EQ(inbox.NextLine(), R"({"jsonrpc":"2.0","method":"x"})");
  EXPECT_EQ(inbox.NextLine(), "second");
  (*channel)->Close();
  EXPECT_TRUE(inbox.WaitClosed());
  EXPECT_FALSE((*channel)->Send("after close").ok());
}

TEST(UpstreamStdioChannel, PassesEnvironmentAndWorkingDirectory) {
  Inbox inbox;
  auto channel = UpstreamStdioChannel::Start({"sh",
                                              {"-c", "echo \"$GW_TEST_VAR:$(pwd)\""},
                                              {{"GW_TEST_VAR", "hello"}},
                                              "/tmp",
                                              1 << 20,
                                              "sh"},
                                             inbox.Callbacks());
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_EQ(inbox.NextLine(), "hello:/tmp");
  EXPECT_TRUE(inbox.WaitClosed());
  EXPECT_EQ(inbox.closed, "exited with status 0");
}

TEST(UpstreamStdioChannel, ChildInheritsOnlyItsThreeStandardDescriptors) {
  int leaked = ::open("/dev/null", O_RDONLY);  // not close-on-exec
  ASSERT_GE(leaked, 0);
  Inbox inbox;
  auto channel = UpstreamStdioChannel::Start(
      {"sh", {"-c", "ls /proc/self/fd | wc -l"}, {}, "", 1 << 20, "sh"}, inbox.Callbacks());
  ::close(leaked);
  ASSERT_TRUE(channel.ok());
  // 0, 1, 2 and the directory `ls` itself opens.
  EXPECT_EQ(inbox.NextLine(), "4");
}

TEST(UpstreamStdioChannel, MissingProgramIsNotFound) {
  Inbox inbox;
  auto channel = UpstreamStdioChannel::Start(
      {"/nonexistent/contextd-upstream", {}, {}, "", 1 << 20, "x"}, inbox.Callbacks());
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kNotFound);
}

TEST(UpstreamStdioChannel, ReportsHowTheChildEnded) {
  Inbox inbox;
  auto channel = UpstreamStdioChannel::Start(
      {"sh", {"-c", "echo bye >&2; exit 3"}, {}, "", 1 << 20, "sh"}, inbox.Callbacks());
  ASSERT_TRUE(channel.ok());
  ASSERT_TRUE(inbox.WaitClosed());
  EXPECT_EQ(inbox.closed, "exited with status 3");
}

TEST(UpstreamStdioChannel, CloseKillsAChildThatIgnoresStdinAndSigterm) {
  Inbox inbox;
  auto channel = UpstreamStdioChannel::Start(
      {"sh", {"-c", "trap '' TERM; while true; do sleep 1; done"}, {}, "", 1 << 20, "sh"},
      inbox.Callbacks());
  ASSERT_TRUE(channel.ok());
  pid_t pid = (*channel)->pid();
  auto start = std::chrono::steady_clock::now();
  (*channel)->Close(100);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: no such process
}

TEST(UpstreamStdioChannel, DropsOverlongLinesAndKeepsGoing) {
  Inbox inbox;
  auto channel = UpstreamStdioChannel::Start({"cat", {}, {}, "", 16, "cat"}, inbox.Callbacks());
  ASSERT_TRUE(channel.ok());
  ASSERT_TRUE((*channel)->Send(std::string(100, 'x')).ok());
  ASSERT_TRUE((*channel)->Send("short").ok());
  EXPECT_EQ(inbox.NextLine(), "short");
}

}  // namespace
}  // namespace contextd::transport
