#include "server/config.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "gtest/gtest.h"

namespace contextd::server {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()));
  std::ofstream(path) << text;
  return path.string();
}

TEST(ConfigTest, DefaultsValidate) {
  ServerConfig c;
  EXPECT_TRUE(ValidateConfig(c).ok());
  EXPECT_EQ(c.folding.max_depth, 3);
  EXPECT_EQ(c.listen, "127.0.0.1:9090");
}

TEST(ConfigTest, YamlSetsKnownKeys) {
  std::string path = WriteTemp("cfg_ok", R"(
server:
  transport: stdio
  allowed_origins: [http://localhost:3000, https://example.test]
context_folding:
  max_depth: 4
  branch_creation_rate_limit: 10/minute
  injection_budget_ratio: 0.2
tokens:
  encoding: cl100k_base
scrub:
  extend_default: false
)");
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  EXPECT_EQ(c.transport, "stdio");
  EXPECT_EQ(c.allowed_origins.size(), 2u);
  EXPECT_EQ(c.folding.max_depth, 4);
  EXPECT_EQ(c.folding.branch_creation_rate_limit, "10/minute");
  EXPECT_DOUBLE_EQ(c.folding.injection_budget_ratio, 0.2);
  EXPECT_EQ(c.token_encoding, "cl100k_base");
  EXPECT_FALSE(c.scrub.extend_default);
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, NatsEventsFromYaml) {
  std::string path = WriteTemp("cfg_nats", R"(
events:
  nats:
    url: nats://127.0.0.1:4222
    jetstream: true
    stream: CONTEXTD
    subject_prefix: acme.contextd
)");
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  EXPECT_EQ(c.nats_events.url, "nats://127.0.0.1:4222");
  EXPECT_TRUE(c.nats_events.jetstream);
  EXPECT_EQ(c.nats_events.stream, "CONTEXTD");
  EXPECT_EQ(c.nats_events.subject_prefix, "acme.contextd");
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, RetentionFromYamlEnvironmentAndValidation) {
  std::string path = WriteTemp("cfg_retention", R"(
retention:
  trail_days: 7
  usage_detail_days: 0
  sweep_interval_s: 600
)");
  ServerConfig c;
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  EXPECT_EQ(c.retention.trail_days, 7);
  EXPECT_EQ(c.retention.usage_detail_days, 0);
  EXPECT_EQ(c.retention.conversation_days, 90);  // default kept
  EXPECT_EQ(c.retention.sweep_interval_s, 600);
  ASSERT_TRUE(SetConfigValue("retention.batch_rows", "50", &c).ok());
  EXPECT_EQ(c.retention.batch_rows, 50);
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.retention.memory_history_days = -1;
  absl::Status bad = ValidateConfig(c);
  EXPECT_NE(bad.message().find("retention.memory_history_days"), std::string::npos) << bad;
  c.retention.memory_history_days = 1;
  c.retention.batch_rows = 0;
  EXPECT_NE(ValidateConfig(c).message().find("retention.batch_rows"), std::string::npos);
}

TEST(ConfigTest, NatsEventsValidationNamesTheKey) {
  auto bad = [](const std::function<void(NatsEventsConfig&)>& edit) {
    ServerConfig c;
    c.nats_events.url = "nats://127.0.0.1:4222";
    edit(c.nats_events);
    absl::Status s = ValidateConfig(c);
    return s.ok() ? std::string() : std::string(s.message());
  };
  EXPECT_EQ(bad([](NatsEventsConfig&) {}), "");
  EXPECT_NE(bad([](NatsEventsConfig& n) { n.url = "http://x:1"; }).find("events.nats.url"),
            std::string::npos);
  EXPECT_EQ(bad([](NatsEventsConfig& n) { n.url = "nats://a:1,tls://b:2"; }), "");
  EXPECT_NE(bad([](NatsEventsConfig& n) { n.jetstream = true; }).find("events.nats.stream"),
            std::string::npos);
  EXPECT_NE(bad([](NatsEventsConfig& n) {
              n.jetstream = true;
              n.stream = "a.b";
            }).find("events.nats.stream"),
            std::string::npos);
  EXPECT_NE(
      bad([](NatsEventsConfig& n) { n.subject_prefix = "a.>"; }).find("events.nats.subject_prefix"),
      std::string::npos);
  EXPECT_NE(bad([](NatsEventsConfig& n) { n.queue_size = 0; }).find("events.nats.queue_size"),
            std::string::npos);
  EXPECT_NE(bad([](NatsEventsConfig& n) {
              n.credentials_file = "/nonexistent/x.creds";
            }).find("events.nats.credentials_file"),
            std::string::npos);
  ServerConfig off;
  off.nats_events.jetstream = true;
  EXPECT_NE(std::string(ValidateConfig(off).message()).find("events.nats.jetstream"),
            std::string::npos);
}

TEST(ConfigTest, UnknownKeyNamesTheKey) {
  std::string path = WriteTemp("cfg_unknown", "context_folding:\n  max_dept: 4\n");
  ServerConfig c;
  absl::Status s = LoadConfigFile(path, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("context_folding.max_dept"), std::string::npos) << s;
}

TEST(ConfigTest, BadValueNamesTheKey) {
  std::string path = WriteTemp("cfg_bad", "context_folding:\n  max_depth: three\n");
  ServerConfig c;
  absl::Status s = LoadConfigFile(path, &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("context_folding.max_depth"), std::string::npos) << s;
}

TEST(ConfigTest, ValidationNamesTheKey) {
  ServerConfig c;
  c.folding.max_depth = 0;
  absl::Status s = ValidateConfig(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("max_depth"), std::string::npos) << s;
  ServerConfig d;
  d.token_encoding = "p50k";
  EXPECT_NE(ValidateConfig(d).message().find("tokens.encoding"), std::string::npos);
}

TEST(ConfigTest, MalformedYamlIsAnError) {
  std::string path = WriteTemp("cfg_malformed", "server: [unclosed\n");
  ServerConfig c;
  EXPECT_EQ(LoadConfigFile(path, &c).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LoadConfigFile("/nonexistent/contextd.yaml", &c).code(), absl::StatusCode::kNotFound);
}

TEST(ConfigTest, EnvironmentOverridesAndRejectsUnknown) {
  std::map<std::string, std::string> env = {{"CONTEXTD_CONTEXT_FOLDING_MAX_DEPTH", "5"},
                                            {"CONTEXTD_SERVER_LISTEN", "127.0.0.1:0"},
                                            {"PATH", "/bin"}};
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ServerConfig c;
  ASSERT_TRUE(ApplyEnvironment(
                  get, {"CONTEXTD_CONTEXT_FOLDING_MAX_DEPTH", "CONTEXTD_SERVER_LISTEN", "PATH"}, &c)
                  .ok());
  EXPECT_EQ(c.folding.max_depth, 5);
  EXPECT_EQ(c.listen, "127.0.0.1:0");
  env["CONTEXTD_CONTEXT_FOLDING_MAX_DEPHT"] = "1";
  absl::Status s = ApplyEnvironment(get, {"CONTEXTD_CONTEXT_FOLDING_MAX_DEPHT"}, &c);
  EXPECT_NE(s.message().find("CONTEXTD_CONTEXT_FOLDING_MAX_DEPHT"), std::string::npos);
  env["CONTEXTD_JOBS"] = "2";  // not under a config section: not config
  EXPECT_TRUE(ApplyEnvironment(get, {"CONTEXTD_JOBS"}, &c).ok());
}

TEST(ConfigTest, StoreBackendKeysAndTheirRules) {
  ServerConfig c;
  EXPECT_EQ(c.store.backend, "sqlite");
  EXPECT_TRUE(ValidateConfig(c).ok());
  ASSERT_TRUE(SetConfigValue("store.backend", "postgres", &c).ok());
  absl::Status s = ValidateConfig(c);
  EXPECT_NE(s.message().find("store.postgres.url"), std::string::npos) << s;
  std::map<std::string, std::string> env = {
      {"CONTEXTD_STORE_POSTGRES_URL", "postgresql://ctx:pw@db/contextd"},
      {"CONTEXTD_STORE_POSTGRES_POOL_SIZE", "3"}};
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ASSERT_TRUE(ApplyEnvironment(
                  get, {"CONTEXTD_STORE_POSTGRES_URL", "CONTEXTD_STORE_POSTGRES_POOL_SIZE"}, &c)
                  .ok());
  EXPECT_EQ(c.store.postgres_url, "postgresql://ctx:pw@db/contextd");
  EXPECT_EQ(c.store.postgres_pool_size, 3);
  EXPECT_TRUE(ValidateConfig(c).ok());
  ASSERT_TRUE(SetConfigValue("store.postgres.pool_size", "0", &c).ok());
  EXPECT_FALSE(ValidateConfig(c).ok());
  ASSERT_TRUE(SetConfigValue("store.backend", "mysql", &c).ok());
  s = ValidateConfig(c);
  EXPECT_NE(s.message().find("sqlite or postgres"), std::string::npos) << s;
}

TEST(ConfigTest, SetConfigValueListsAndScalars) {
  ServerConfig c;
  ASSERT_TRUE(SetConfigValue("server.allowed_hosts", "a.test, b.test", &c).ok());
  EXPECT_EQ(c.allowed_hosts, (std::vector<std::string>{"a.test", "b.test"}));
  EXPECT_FALSE(SetConfigValue("scrub.extend_default", "maybe", &c).ok());
  EXPECT_FALSE(SetConfigValue("nope.key", "1", &c).ok());
}

TEST(ConfigTest, ScrubDecodeDepth) {
  ServerConfig c;
  EXPECT_EQ(c.scrub.decode_depth, 2);  // on by default
  std::string path = WriteTemp("cfg_decode", "scrub:\n  decode_depth: 0\n");
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  EXPECT_EQ(c.scrub.decode_depth, 0);
  EXPECT_TRUE(ValidateConfig(c).ok());
  ASSERT_TRUE(SetConfigValue("scrub.decode_depth", "9", &c).ok());
  absl::Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("scrub.decode_depth"), std::string::npos) << s;
  EXPECT_FALSE(SetConfigValue("scrub.decode_depth", "two", &c).ok());
}

TEST(ConfigTest, TrailAutoScopeUpstreamsInEveryLayer) {
  ServerConfig c;
  EXPECT_FALSE(c.trail_auto_scope_upstreams);  // off by default
  std::string path = WriteTemp("cfg_trail", "trail:\n  auto_scope_upstreams: true\n");
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  EXPECT_TRUE(c.trail_auto_scope_upstreams);
  absl::Status bad =
      LoadConfigFile(WriteTemp("cfg_trail_bad", "trail:\n  auto_scope_upstreams: sometimes\n"), &c);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("trail.auto_scope_upstreams"), std::string::npos) << bad;
  absl::Status unknown =
      LoadConfigFile(WriteTemp("cfg_trail_unknown", "trail:\n  auto_scope: true\n"), &c);
  EXPECT_NE(unknown.message().find("trail.auto_scope"), std::string::npos) << unknown;

  std::map<std::string, std::string> env = {{"CONTEXTD_TRAIL_AUTO_SCOPE_UPSTREAMS", "false"},
                                            {"CONTEXTD_TRAIL_AUTOSCOPE", "1"}};
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ASSERT_TRUE(ApplyEnvironment(get, {"CONTEXTD_TRAIL_AUTO_SCOPE_UPSTREAMS"}, &c).ok());
  EXPECT_FALSE(c.trail_auto_scope_upstreams);
  absl::Status typo = ApplyEnvironment(get, {"CONTEXTD_TRAIL_AUTOSCOPE"}, &c);
  EXPECT_NE(typo.message().find("CONTEXTD_TRAIL_AUTOSCOPE"), std::string::npos) << typo;

  ASSERT_TRUE(SetConfigValue("trail.auto_scope_upstreams", "on", &c).ok());
  EXPECT_TRUE(c.trail_auto_scope_upstreams);
  absl::Status set_bad = SetConfigValue("trail.auto_scope_upstreams", "2", &c);
  EXPECT_NE(set_bad.message().find("trail.auto_scope_upstreams"), std::string::npos) << set_bad;
  auto keys = KnownConfigKeys();
  EXPECT_NE(std::find(keys.begin(), keys.end(), "trail.auto_scope_upstreams"), keys.end());
}

TEST(ConfigTest, ModelGatewayOpenAIInEveryLayer) {
  ServerConfig c;
  EXPECT_EQ(c.model_gateway.providers["openai"].base_url, "https://api.openai.com/v1");
  std::string path = WriteTemp("cfg_openai", R"(
model_gateway:
  anthropic:
    base_url: http://127.0.0.1:1
  openai:
    base_url: http://127.0.0.1:8000/v1
    ca_file: /tmp/ca.pem
    response_timeout_seconds: 30
)");
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  EXPECT_EQ(c.model_gateway.providers["anthropic"].base_url, "http://127.0.0.1:1");
  EXPECT_EQ(c.model_gateway.providers["openai"].base_url, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(c.model_gateway.providers["openai"].ca_file, "/tmp/ca.pem");
  EXPECT_EQ(c.model_gateway.providers["openai"].response_timeout_seconds, 30);
  EXPECT_TRUE(ValidateConfig(c).ok());

  std::map<std::string, std::string> env = {
      {"CONTEXTD_MODEL_GATEWAY_OPENAI_BASE_URL", "http://localhost:11434/v1"},
      {"CONTEXTD_MODEL_GATEWAY_OPENAI_READ_TIMEOUT_SECONDS", "5"}};
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ASSERT_TRUE(ApplyEnvironment(get,
                               {"CONTEXTD_MODEL_GATEWAY_OPENAI_BASE_URL",
                                "CONTEXTD_MODEL_GATEWAY_OPENAI_READ_TIMEOUT_SECONDS"},
                               &c)
                  .ok());
  EXPECT_EQ(c.model_gateway.providers["openai"].base_url, "http://localhost:11434/v1");
  EXPECT_EQ(c.model_gateway.providers["openai"].read_timeout_seconds, 5);

  ASSERT_TRUE(SetConfigValue("model_gateway.openai.base_url", "ftp://x", &c).ok());
  absl::Status bad = ValidateConfig(c);
  EXPECT_NE(bad.message().find("model_gateway.openai.base_url"), std::string::npos) << bad;
  c.model_gateway.providers["openai"].base_url = "https://api.openai.com/v1";
  c.model_gateway.providers["openai"].connect_timeout_ms = 0;
  EXPECT_NE(ValidateConfig(c).message().find("model_gateway.openai.connect_timeout_ms"),
            std::string::npos);
}

TEST(ConfigTest, ModelGatewayProvidersAndTheirAliases) {
  ServerConfig c;
  EXPECT_EQ(c.model_gateway.providers["anthropic"].base_url, "https://api.anthropic.com");
  EXPECT_EQ(c.model_gateway.providers.size(), 2u);
  std::string path = WriteTemp("cfg_providers", R"(
model_gateway:
  providers:
    anthropic:
      base_url: http://127.0.0.1:2
      api_key_env: TEAM_KEY
      connect_timeout_ms: 250
    openai:
      ca_file: /tmp/openai-ca.pem
      read_timeout_seconds: 7
)");
  ASSERT_TRUE(LoadConfigFile(path, &c).ok());
  const ModelProviderConfig& anthropic = c.model_gateway.providers["anthropic"];
  EXPECT_EQ(anthropic.base_url, "http://127.0.0.1:2");
  EXPECT_EQ(anthropic.api_key_env, "TEAM_KEY");
  EXPECT_EQ(anthropic.connect_timeout_ms, 250);
  EXPECT_EQ(anthropic.response_timeout_seconds, 600);
  EXPECT_EQ(c.model_gateway.providers["openai"].base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c.model_gateway.providers["openai"].ca_file, "/tmp/openai-ca.pem");
  EXPECT_EQ(c.model_gateway.providers["openai"].read_timeout_seconds, 7);
  EXPECT_TRUE(ValidateConfig(c).ok());

  // The alias and the key are one setting: whichever comes last wins, in every layer.
  ASSERT_TRUE(SetConfigValue("model_gateway.anthropic.base_url", "http://127.0.0.1:3", &c).ok());
  EXPECT_EQ(anthropic.base_url, "http://127.0.0.1:3");
  std::map<std::string, std::string> env = {
      {"CONTEXTD_MODEL_GATEWAY_PROVIDERS_OPENAI_RESPONSE_TIMEOUT_SECONDS", "9"},
      {"CONTEXTD_MODEL_GATEWAY_ANTHROPIC_READ_TIMEOUT_SECONDS", "11"}};
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ASSERT_TRUE(ApplyEnvironment(get,
                               {"CONTEXTD_MODEL_GATEWAY_PROVIDERS_OPENAI_RESPONSE_TIMEOUT_SECONDS",
                                "CONTEXTD_MODEL_GATEWAY_ANTHROPIC_READ_TIMEOUT_SECONDS"},
                               &c)
                  .ok());
  EXPECT_EQ(c.model_gateway.providers["openai"].response_timeout_seconds, 9);
  EXPECT_EQ(anthropic.read_timeout_seconds, 11);
  auto keys = KnownConfigKeys();
  for (const char* key :
       {"model_gateway.providers.openai.base_url", "model_gateway.providers.anthropic.api_key_env",
        "model_gateway.openai.read_timeout_seconds"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
  }

  // A validation error names the key and its alias.
  ASSERT_TRUE(SetConfigValue("model_gateway.providers.openai.read_timeout_seconds", "0", &c).ok());
  absl::Status bad = ValidateConfig(c);
  EXPECT_NE(bad.message().find("'model_gateway.providers.openai.read_timeout_seconds' (alias "
                               "'model_gateway.openai.read_timeout_seconds')"),
            std::string::npos)
      << bad;
  // Only the providers the APIs forward to are keys.
  EXPECT_FALSE(SetConfigValue("model_gateway.providers.gemini.base_url", "http://x", &c).ok());
  std::string unknown = WriteTemp("cfg_unknown_provider", R"(
model_gateway:
  providers:
    gemini:
      base_url: http://127.0.0.1:4
)");
  absl::Status refused = LoadConfigFile(unknown, &c);
  EXPECT_NE(refused.message().find("model_gateway.providers.gemini.base_url"), std::string::npos)
      << refused;
}

TEST(ConfigTest, UpstreamsParse) {
  std::string path = WriteTemp("cfg_up", R"(
upstreams:
  - name: fs
    stdio: {command: node, args: [server.js, /srv/repo], env: {A: b}, cwd: /srv}
    timeout_seconds: 5
  - name: tracker
    http: {url: "http://127.0.0.1:8080/mcp", headers: {Authorization: "Bearer x"}}
  - name: secure
    http: {url: "https://mcp.example.test/mcp", ca_file: /etc/contextd/ca.pem}
)");
  ServerConfig c;
  absl::Status s = LoadConfigFile(path, &c);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(c.upstreams.size(), 3u);
  EXPECT_EQ(c.upstreams[2].http->ca_file, "/etc/contextd/ca.pem");
  EXPECT_EQ(c.upstreams[0].name, "fs");
  EXPECT_EQ(c.upstreams[0].stdio->args, (std::vector<std::string>{"server.js", "/srv/repo"}));
  EXPECT_EQ(c.upstreams[0].stdio->env.at("A"), "b");
  EXPECT_EQ(c.upstreams[0].call_timeout, std::chrono::seconds(5));
  EXPECT_EQ(c.upstreams[1].http->headers.at("Authorization"), "Bearer x");
}

TEST(ConfigTest, UpstreamErrorsNameTheKey) {
  ServerConfig c;
  absl::Status s = LoadConfigFile(
      WriteTemp("cfg_up_bad", "upstreams:\n  - name: fs\n    stdio: {comand: node}\n"), &c);
  EXPECT_NE(s.message().find("upstreams[0].stdio.comand"), std::string::npos) << s;
  s = LoadConfigFile(WriteTemp("cfg_up_both", "upstreams:\n  - name: fs\n"), &c);
  EXPECT_NE(s.message().find("upstreams[0]"), std::string::npos) << s;
  s = LoadConfigFile(WriteTemp("cfg_up_dup",
                               "upstreams:\n  - {name: a, stdio: {command: x}}\n"
                               "  - {name: a, stdio: {command: y}}\n"),
                     &c);
  EXPECT_NE(s.message().find("duplicate"), std::string::npos) << s;
}

}  // namespace
}  // namespace contextd::server
