// UpstreamClient on its own: requests to a real child process, failure modes.
#include "gateway/upstream_client.h"

#include <future>

#include "gtest/gtest.h"

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
    client = std::make_shared<UpstreamClient>(executor, config, listener, UpstreamClient::Backoff{});
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

}  // namespace
}  // namespace contextd::gateway
