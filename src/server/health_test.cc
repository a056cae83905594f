#include "server/health.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace contextd::server {
namespace {

TEST(Health, DisabledNatsIsReady) {
  HealthMember nats = NatsHealth(nullptr, false);
  EXPECT_TRUE(nats.ok);
  auto answer = RenderHealth({nats}, "0.1.0");
  EXPECT_TRUE(answer.ready);
  auto j = nlohmann::json::parse(answer.json);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["version"], "0.1.0");
  EXPECT_EQ(j["checks"]["nats"]["status"], "disabled");
}

TEST(Health, AMemberDownMakesItUnavailable) {
  auto answer = RenderHealth({HealthMember{"database", true, R"({"status":"ok"})"},
                              HealthMember{"nats", false, R"({"status":"reconnecting"})"}},
                             "0.1.0");
  EXPECT_FALSE(answer.ready);
  auto j = nlohmann::json::parse(answer.json);
  EXPECT_EQ(j["status"], "unavailable");
  EXPECT_EQ(j["checks"]["database"]["status"], "ok");
  EXPECT_EQ(j["checks"]["nats"]["status"], "reconnecting");
}

TEST(Health, DatabaseAnswersItsSchemaVersion) {
  store::BackendOptions options;
  options.sqlite_path = ":memory:";
  options.one_shot = true;
  auto backend = store::OpenBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  HealthMember m = DatabaseHealth(**backend);
  EXPECT_TRUE(m.ok);
  auto j = nlohmann::json::parse(m.detail_json);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["backend"], "sqlite");
  EXPECT_GT(j["schema_version"].get<int>(), 0);
}

}  // namespace
}  // namespace contextd::server
