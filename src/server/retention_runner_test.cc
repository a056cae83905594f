// RetentionRunner on a real SQLite file, with a fake clock: the model gateway's ContextManager
// over the real conversation store, moved past the retention windows and swept. A conversation
// resumed long after its first decisions, but seen within the window, sends the provider the same
// bytes as before the sweep, even after a restart under rules that no longer redact; one unseen
// for the window loses its decisions; the sweep is counted in /metrics.
#include "server/retention_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <memory>
#include <string>

#include "base/clock.h"
#include "model/context_manager.h"
#include "nlohmann/json.hpp"
#include "scrub/scrubber.h"
#include "store/backend.h"
#include "store/test_util.h"
#include "tokens/token_counter.h"

namespace contextd::server {
namespace {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::Not;

// Redacts every "<word><digits>".
class WordScrubber : public scrub::Scrubber {
 public:
  explicit WordScrubber(std::string word) : word_(std::move(word)) {}
  std::string Scrub(std::string_view text) const override {
    std::string out(text);
    size_t at = 0;
    while ((at = out.find(word_, at)) != std::string::npos) {
      size_t end = at + word_.size();
      while (end < out.size() && isdigit(static_cast<unsigned char>(out[end]))) ++end;
      out.replace(at, end - at, "[REDACTED]");
      at += 10;
    }
    return out;
  }

 private:
  std::string word_;
};

class ByteCounter : public tokens::TokenCounter {
 public:
  size_t Count(std::string_view text) const override { return (text.size() + 3) / 4; }
  std::string_view name() const override { return "bytes/4"; }
};

// A Messages conversation growing as a client resends it.
class Conversation {
 public:
  Conversation() { Add("user", json::array({{{"type", "text"}, {"text", "task"}}})); }
  void Add(const std::string& role, json content) {
    messages_.push_back({{"role", role}, {"content", std::move(content)}});
  }
  void Turn(const std::string& id, const std::string& result) {
    Add("assistant",
        json::array(
            {{{"type", "tool_use"}, {"id", id}, {"name", "Read"}, {"input", json::object()}}}));
    Add("user", json::array({{{"type", "tool_result"}, {"tool_use_id", id}, {"content", result}}}));
  }
  std::string Body() const {
    json body = {{"model", "m"}, {"max_tokens", 10}, {"system", "sys"}, {"messages", messages_}};
    return body.dump();
  }

 private:
  json messages_ = json::array();
};

struct Gateway {
  Gateway(model::ConversationStore& store, const scrub::Scrubber& scrubber)
      : manager(model::ContextManagerOptions{}, store, scrubber, counter, nullptr) {}
  // What the provider receives for the conversation's current request at `now_ms`.
  std::string Forward(const std::string& session, const Conversation& c, int64_t now_ms) {
    auto request = manager.Parse(model::ModelApi::kAnthropicMessages, "local", session, c.Body());
    EXPECT_TRUE(request.ok()) << request.status();
    auto applied = manager.Apply("local", session, *request, now_ms);
    EXPECT_TRUE(applied.ok()) << applied.status();
    if (!applied.ok()) return "";
    manager.SaveFrontier(*applied);
    return applied->body;
  }
  ByteCounter counter;
  model::ContextManager manager;
};

TEST(RetentionRunnerTest, AResumedConversationKeepsItsBytesAndAnUnseenOneIsSwept) {
  store::TempDir tmp;
  const std::string path = tmp.File("contextd.db");
  store::BackendOptions options;
  options.sqlite_path = path;
  auto backend = store::OpenBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto store = (*backend)->OpenConversationStore();
  ASSERT_TRUE(store.ok()) << store.status();
  base::FakeClock clock;
  WordScrubber old_rules("SECRET");
  Conversation resumed, forgotten;
  resumed.Turn("t1", "key SECRET123 in config");
  forgotten.Turn("t1", "key SECRET456 in config");
  std::string first;
  {
    Gateway gw(**store, old_rules);
    first = gw.Forward("resumed", resumed, clock.WallMillis());
    EXPECT_THAT(first, HasSubstr("key [REDACTED] in config"));
    EXPECT_THAT(gw.Forward("forgotten", forgotten, clock.WallMillis()),
                HasSubstr("key [REDACTED] in config"));
    clock.Advance(std::chrono::hours(24 * 80));  // day 80: the user comes back to one of them
    resumed.Turn("t2", "more output");
    gw.Forward("resumed", resumed, clock.WallMillis());
  }
  // Day 100: "resumed" was last seen 20 days ago, "forgotten" 100 days ago.
  clock.Advance(std::chrono::hours(24 * 20));
  Metrics metrics;
  auto retention = (*backend)->OpenRetentionStore();
  ASSERT_TRUE(retention.ok()) << retention.status();
  RetentionConfig config;  // the defaults: decisions kept 90 days after last seen
  store::RetentionPolicy policy = RetentionPolicyFrom(config);
  policy.pause_us = 0;
  RetentionRunner runner(std::move(*retention), policy, clock, &metrics);
  auto report = runner.RunOnce();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->threads.rows, 1);
  EXPECT_GE(report->rewrites.rows, 1);
  const std::string rendered = metrics.Render();
  EXPECT_THAT(rendered, HasSubstr("contextd_retention_swept_rows_total{kind=\"threads\"} 1"));
  EXPECT_THAT(rendered, HasSubstr("contextd_retention_sweeps_total{outcome=\"ok\"} 1"));
  EXPECT_THAT(rendered, HasSubstr("contextd_retention_kept_rows{kind=\"threads\"} 1"));

  // A restart (nothing cached) under rules that no longer redact: the resumed conversation's
  // prefix is the bytes it was sent with; the forgotten one is decided anew.
  WordScrubber new_rules("NOTHING");
  Gateway restarted(**store, new_rules);
  resumed.Turn("t3", "later output");
  const std::string again = restarted.Forward("resumed", resumed, clock.WallMillis());
  const std::string prefix = first.substr(0, first.find("key [REDACTED] in config"));
  EXPECT_EQ(again.substr(0, prefix.size()), prefix);
  EXPECT_THAT(again, HasSubstr("key [REDACTED] in config"));
  EXPECT_THAT(again, Not(HasSubstr("SECRET123")));
  forgotten.Turn("t2", "more");
  EXPECT_THAT(restarted.Forward("forgotten", forgotten, clock.WallMillis()),
              HasSubstr("SECRET456"));
}

TEST(RetentionRunnerTest, PolicyFromConfigInDays) {
  RetentionConfig c;
  c.trail_days = 7;
  c.usage_detail_days = 0;
  c.batch_rows = 100;
  store::RetentionPolicy p = RetentionPolicyFrom(c);
  EXPECT_EQ(p.trail_ms, 7 * store::kDayMs);
  EXPECT_EQ(p.usage_detail_ms, 0);  // forever
  EXPECT_EQ(p.conversation_ms, 90 * store::kDayMs);
  EXPECT_EQ(p.memory_history_ms, 180 * store::kDayMs);
  EXPECT_EQ(p.batch_rows, 100);
}

}  // namespace
}  // namespace contextd::server
