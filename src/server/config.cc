#include "server/config.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <map>
#include <type_traits>

#include "base/status_macros.h"
#include "base/str_cat.h"
#include "events/publisher.h"
#include "events/subject.h"
#include "model/model_api.h"
#include "yaml-cpp/yaml.h"

namespace contextd::server {
namespace {

using base::StrCat;

// One configurable key: how to set it from its string form(s).
struct KeySpec {
  bool is_list = false;
  std::function<absl::Status(ServerConfig*, const std::vector<std::string>&)> set;
};

absl::Status Bad(std::string_view key, std::string_view why) {
  return absl::InvalidArgumentError(StrCat("config key '", key, "': ", why));
}

template <typename T>
absl::Status ParseScalar(std::string_view key, const std::string& text, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    std::string v = text;
    for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (v == "true" || v == "1" || v == "yes" || v == "on") {
      *out = true;
    } else if (v == "false" || v == "0" || v == "no" || v == "off") {
      *out = false;
    } else {
      return Bad(key, StrCat("expected true or false, got '", text, "'"));
    }
    return absl::OkStatus();
  } else if constexpr (std::is_integral_v<T>) {
    T value{};
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      return Bad(key, StrCat("expected an integer, got '", text, "'"));
    }
    *out = value;
    return absl::OkStatus();
  } else if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    errno = 0;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || errno != 0) {
      return Bad(key, StrCat("expected a number, got '", text, "'"));
    }
    *out = static_cast<T>(value);
    return absl::OkStatus();
  } else {
    static_assert(std::is_same_v<T, std::string>, "unsupported config field type");
    *out = text;
    return absl::OkStatus();
  }
}

// Binds "key" to a scalar field reached through `field(config)`.
template <typename Getter>
KeySpec Scalar(std::string key, Getter field) {
  return KeySpec{false, [key, field](ServerConfig* c, const std::vector<std::string>& v) {
                   if (v.size() != 1) return Bad(key, "expected a single value");
                   return ParseScalar(key, v[0], field(c));
                 }};
}

KeySpec List(std::vector<std::string> ServerConfig::*member) {
  return KeySpec{true, [member](ServerConfig* c, const std::vector<std::string>& v) {
                   c->*member = v;
                   return absl::OkStatus();
                 }};
}

// model_gateway.providers.<name>.<key> and its alias model_gateway.<name>.<key>, the same setting.
void AddModelProviderKeys(const std::string& name, std::map<std::string, KeySpec>& m) {
  auto add = [&](const std::string& key, auto field) {
    for (const std::string& spelled :
         {ModelProviderKey(name, key), StrCat("model_gateway.", name, ".", key)}) {
      m[spelled] = Scalar(spelled, [name, field](ServerConfig* c) {
        return &(c->model_gateway.providers[name].*field);
      });
    }
  };
  add("base_url", &ModelProviderConfig::base_url);
  add("ca_file", &ModelProviderConfig::ca_file);
  add("api_key_env", &ModelProviderConfig::api_key_env);
  add("connect_timeout_ms", &ModelProviderConfig::connect_timeout_ms);
  add("response_timeout_seconds", &ModelProviderConfig::response_timeout_seconds);
  add("read_timeout_seconds", &ModelProviderConfig::read_timeout_seconds);
}

const std::map<std::string, KeySpec>& Registry() {
  static const auto* registry = [] {
    auto* r = new std::map<std::string, KeySpec>();
    auto& m = *r;
    m["server.transport"] =
        Scalar("server.transport", [](ServerConfig* c) { return &c->transport; });
    m["server.listen"] = Scalar("server.listen", [](ServerConfig* c) { return &c->listen; });
    m["server.data_dir"] = Scalar("server.data_dir", [](ServerConfig* c) { return &c->data_dir; });
    m["server.log_level"] =
        Scalar("server.log_level", [](ServerConfig* c) { return &c->log_level; });
    m["server.max_message_bytes"] =
        Scalar("server.max_message_bytes", [](ServerConfig* c) { return &c->max_message_bytes; });
    m["server.auth_token_file"] =
        Scalar("server.auth_token_file", [](ServerConfig* c) { return &c->auth_token_file; });
    m["server.http_threads"] =
        Scalar("server.http_threads", [](ServerConfig* c) { return &c->http_threads; });
    m["server.allowed_origins"] = List(&ServerConfig::allowed_origins);
    m["server.allowed_hosts"] = List(&ServerConfig::allowed_hosts);
    m["server.conformance_fixtures"] = Scalar(
        "server.conformance_fixtures", [](ServerConfig* c) { return &c->conformance_fixtures; });

#define CONTEXTD_FOLDING_KEY(name) \
  m["context_folding." #name] =    \
      Scalar("context_folding." #name, [](ServerConfig* c) { return &c->folding.name; })
    CONTEXTD_FOLDING_KEY(default_budget);
    CONTEXTD_FOLDING_KEY(max_budget);
    CONTEXTD_FOLDING_KEY(max_depth);
    CONTEXTD_FOLDING_KEY(default_timeout_seconds);
    CONTEXTD_FOLDING_KEY(max_timeout_seconds);
    CONTEXTD_FOLDING_KEY(injection_budget_ratio);
    CONTEXTD_FOLDING_KEY(memory_min_confidence);
    CONTEXTD_FOLDING_KEY(memory_max_items);
    CONTEXTD_FOLDING_KEY(max_concurrent_branches_per_session);
    CONTEXTD_FOLDING_KEY(max_concurrent_branches_per_instance);
    CONTEXTD_FOLDING_KEY(branch_creation_rate_limit);
    CONTEXTD_FOLDING_KEY(session_idle_timeout_seconds);
    CONTEXTD_FOLDING_KEY(branch_view);
    CONTEXTD_FOLDING_KEY(branch_view_keep_opening);
#undef CONTEXTD_FOLDING_KEY

    m["tokens.encoding"] =
        Scalar("tokens.encoding", [](ServerConfig* c) { return &c->token_encoding; });
    m["scrub.rules_file"] =
        Scalar("scrub.rules_file", [](ServerConfig* c) { return &c->scrub.rules_file; });
    m["scrub.extend_default"] =
        Scalar("scrub.extend_default", [](ServerConfig* c) { return &c->scrub.extend_default; });
    m["scrub.archive_originals"] = Scalar(
        "scrub.archive_originals", [](ServerConfig* c) { return &c->scrub.archive_originals; });
    m["scrub.key_file"] =
        Scalar("scrub.key_file", [](ServerConfig* c) { return &c->scrub.key_file; });
    m["scrub.decode_depth"] =
        Scalar("scrub.decode_depth", [](ServerConfig* c) { return &c->scrub.decode_depth; });
    m["trail.auto_scope_upstreams"] = Scalar("trail.auto_scope_upstreams", [](ServerConfig* c) {
      return &c->trail_auto_scope_upstreams;
    });
#define CONTEXTD_MODEL_KEY(key, name) \
  m[key] = Scalar(key, [](ServerConfig* c) { return &c->model_gateway.name; })
    CONTEXTD_MODEL_KEY("model_gateway.enabled", enabled);
    CONTEXTD_MODEL_KEY("model_gateway.max_body_bytes", max_body_bytes);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.enabled", auto_fold.enabled);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.trigger_tokens", auto_fold.trigger_tokens);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.keep", auto_fold.keep);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.min_result_tokens", auto_fold.min_result_tokens);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.clear_at_least", auto_fold.clear_at_least);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.reasoning_items_bound",
                       auto_fold.reasoning_items_bound);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.thinking", auto_fold.thinking);
    CONTEXTD_MODEL_KEY("model_gateway.auto_fold.expected_requests", auto_fold.expected_requests);
#undef CONTEXTD_MODEL_KEY
    for (const model::ModelProvider& provider : model::ModelProviders()) {
      AddModelProviderKeys(std::string(provider.name), m);
    }
#define CONTEXTD_MEMORY_KEY(key, name) \
  m[key] = Scalar(key, [](ServerConfig* c) { return &c->memory.name; })
    CONTEXTD_MEMORY_KEY("memory.enabled", enabled);
    CONTEXTD_MEMORY_KEY("memory.extract_memory", extract_memory);
    CONTEXTD_MEMORY_KEY("memory.extract_scope", extract_scope);
    CONTEXTD_MEMORY_KEY("memory.auto_confirm", auto_confirm);
    CONTEXTD_MEMORY_KEY("memory.org_across_tenants", org_across_tenants);
    CONTEXTD_MEMORY_KEY("memory.session_injection", session_injection);
    CONTEXTD_MEMORY_KEY("memory.session_injection_tokens", session_injection_tokens);
    CONTEXTD_MEMORY_KEY("memory.distiller.base_url", distiller.base_url);
    CONTEXTD_MEMORY_KEY("memory.distiller.model", distiller.model);
    CONTEXTD_MEMORY_KEY("memory.distiller.api_key_env", distiller.api_key_env);
    CONTEXTD_MEMORY_KEY("memory.distiller.timeout_ms", distiller.timeout_ms);
    CONTEXTD_MEMORY_KEY("memory.embeddings.base_url", embeddings.base_url);
    CONTEXTD_MEMORY_KEY("memory.embeddings.model", embeddings.model);
    CONTEXTD_MEMORY_KEY("memory.embeddings.api_key_env", embeddings.api_key_env);
    CONTEXTD_MEMORY_KEY("memory.embeddings.timeout_ms", embeddings.timeout_ms);
#undef CONTEXTD_MEMORY_KEY
#define CONTEXTD_NATS_KEY(name) \
  m["events.nats." #name] =     \
      Scalar("events.nats." #name, [](ServerConfig* c) { return &c->nats_events.name; })
    CONTEXTD_NATS_KEY(url);
    CONTEXTD_NATS_KEY(subject_prefix);
    CONTEXTD_NATS_KEY(jetstream);
    CONTEXTD_NATS_KEY(stream);
    CONTEXTD_NATS_KEY(credentials_file);
    CONTEXTD_NATS_KEY(tls_ca_file);
    CONTEXTD_NATS_KEY(queue_size);
    CONTEXTD_NATS_KEY(reconnect_wait_ms);
    CONTEXTD_NATS_KEY(outbox_max_age_s);
    CONTEXTD_NATS_KEY(outbox_max_rows);
#undef CONTEXTD_NATS_KEY
#define CONTEXTD_RETENTION_KEY(name) \
  m["retention." #name] =            \
      Scalar("retention." #name, [](ServerConfig* c) { return &c->retention.name; })
    CONTEXTD_RETENTION_KEY(trail_days);
    CONTEXTD_RETENTION_KEY(usage_detail_days);
    CONTEXTD_RETENTION_KEY(conversation_days);
    CONTEXTD_RETENTION_KEY(memory_history_days);
    CONTEXTD_RETENTION_KEY(sweep_interval_s);
    CONTEXTD_RETENTION_KEY(batch_rows);
#undef CONTEXTD_RETENTION_KEY
    m["store.backend"] = Scalar("store.backend", [](ServerConfig* c) { return &c->store.backend; });
    m["store.postgres.url"] =
        Scalar("store.postgres.url", [](ServerConfig* c) { return &c->store.postgres_url; });
    m["store.postgres.pool_size"] = Scalar(
        "store.postgres.pool_size", [](ServerConfig* c) { return &c->store.postgres_pool_size; });
    m["store.postgres.session_sync_ms"] =
        Scalar("store.postgres.session_sync_ms",
               [](ServerConfig* c) { return &c->store.postgres_session_sync_ms; });
    return r;
  }();
  return *registry;
}

absl::Status SetValues(const std::string& key, const std::vector<std::string>& values,
                       ServerConfig* config) {
  auto it = Registry().find(key);
  if (it == Registry().end()) {
    return absl::InvalidArgumentError(StrCat("unknown config key '", key, "'"));
  }
  return it->second.set(config, values);
}

}  // namespace

ModelGatewayConfig::ModelGatewayConfig() {
  for (const model::ModelProvider& provider : model::ModelProviders()) {
    providers[std::string(provider.name)].base_url = std::string(provider.default_base_url);
  }
}

std::string ModelProviderKey(std::string_view provider, std::string_view key) {
  return StrCat("model_gateway.providers.", provider, ".", key);
}

absl::Status BadModelProviderKey(std::string_view provider, std::string_view key,
                                 std::string_view why) {
  return absl::InvalidArgumentError(StrCat("config key '", ModelProviderKey(provider, key),
                                           "' (alias 'model_gateway.", provider, ".", key,
                                           "'): ", why));
}

std::vector<std::string> KnownConfigKeys() {
  std::vector<std::string> keys;
  for (const auto& [k, _] : Registry()) keys.push_back(k);
  return keys;
}

absl::Status SetConfigValue(std::string_view dotted_key, std::string_view value,
                            ServerConfig* config) {
  std::string key(dotted_key);
  auto it = Registry().find(key);
  if (it == Registry().end()) {
    return absl::InvalidArgumentError(StrCat("unknown config key '", key, "'"));
  }
  std::vector<std::string> values;
  if (it->second.is_list) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string_view::npos) comma = value.size();
      std::string part(value.substr(start, comma - start));
      part.erase(0, part.find_first_not_of(" \t"));
      part.erase(part.find_last_not_of(" \t") + 1);
      if (!part.empty()) values.push_back(std::move(part));
      start = comma + 1;
    }
  } else {
    values.emplace_back(value);
  }
  return it->second.set(config, values);
}

namespace {

// Parses one entry of the `upstreams:` list; `where` is e.g. "upstreams[0]" for errors.
absl::Status ParseUpstream(const YAML::Node& node, const std::string& where,
                           gateway::UpstreamConfig* out) {
  if (!node.IsMap()) return Bad(where, "must be a mapping with name and stdio or http");
  for (const auto& entry : node) {
    std::string key = entry.first.as<std::string>();
    const YAML::Node& value = entry.second;
    std::string at = StrCat(where, ".", key);
    if (key == "name") {
      if (!value.IsScalar()) return Bad(at, "must be a string");
      out->name = value.as<std::string>();
    } else if (key == "timeout_seconds") {
      int64_t seconds = 0;
      if (!value.IsScalar()) return Bad(at, "must be an integer");
      RETURN_IF_ERROR(ParseScalar(at, value.as<std::string>(), &seconds));
      if (seconds < 1 || seconds > 3600) return Bad(at, "must be between 1 and 3600");
      out->call_timeout = std::chrono::seconds(seconds);
    } else if (key == "stdio") {
      if (!value.IsMap()) return Bad(at, "must be a mapping {command, args, env, cwd}");
      gateway::StdioUpstream stdio;
      for (const auto& f : value) {
        std::string fkey = f.first.as<std::string>();
        std::string fat = StrCat(at, ".", fkey);
        if (fkey == "command" || fkey == "cwd") {
          if (!f.second.IsScalar()) return Bad(fat, "must be a string");
          (fkey == "command" ? stdio.command : stdio.cwd) = f.second.as<std::string>();
        } else if (fkey == "args") {
          if (!f.second.IsSequence()) return Bad(fat, "must be a list of strings");
          for (const auto& a : f.second) {
            if (!a.IsScalar()) return Bad(fat, "must be a list of strings");
            stdio.args.push_back(a.as<std::string>());
          }
        } else if (fkey == "env") {
          if (f.second.IsNull()) continue;
          if (!f.second.IsMap()) return Bad(fat, "must be a mapping of NAME: value");
          for (const auto& e : f.second) {
            if (!e.second.IsScalar()) return Bad(fat, "values must be strings");
            stdio.env[e.first.as<std::string>()] = e.second.as<std::string>();
          }
        } else {
          return absl::InvalidArgumentError(StrCat("unknown config key '", fat, "'"));
        }
      }
      out->stdio = std::move(stdio);
    } else if (key == "http") {
      if (!value.IsMap()) return Bad(at, "must be a mapping {url, headers, ca_file}");
      gateway::HttpUpstream http;
      for (const auto& f : value) {
        std::string fkey = f.first.as<std::string>();
        std::string fat = StrCat(at, ".", fkey);
        if (fkey == "url" || fkey == "ca_file") {
          if (!f.second.IsScalar()) return Bad(fat, "must be a string");
          (fkey == "url" ? http.url : http.ca_file) = f.second.as<std::string>();
        } else if (fkey == "headers") {
          if (f.second.IsNull()) continue;
          if (!f.second.IsMap()) return Bad(fat, "must be a mapping of Header: value");
          for (const auto& h : f.second) {
            if (!h.second.IsScalar()) return Bad(fat, "values must be strings");
            http.headers[h.first.as<std::string>()] = h.second.as<std::string>();
          }
        } else {
          return absl::InvalidArgumentError(StrCat("unknown config key '", fat, "'"));
        }
      }
      out->http = std::move(http);
    } else {
      return absl::InvalidArgumentError(StrCat("unknown config key '", at, "'"));
    }
  }
  absl::Status valid = gateway::ValidateUpstream(*out);
  if (!valid.ok()) return Bad(where, std::string(valid.message()));
  return absl::OkStatus();
}

// The entries of mapping `node` under `prefix` as dotted keys, nested mappings flattened (at most
// kMaxNesting deep; a mapping deeper than that is left as a value, which SetValues refuses).
void FlattenSection(const std::string& prefix, const YAML::Node& node, int depth,
                    std::vector<std::pair<std::string, YAML::Node>>& entries) {
  constexpr int kMaxNesting = 2;
  for (const auto& entry : node) {
    std::string key = StrCat(prefix, ".", entry.first.as<std::string>());
    if (entry.second.IsMap() && depth < kMaxNesting) {
      FlattenSection(key, entry.second, depth + 1, entries);
    } else {
      entries.emplace_back(key, entry.second);
    }
  }
}

absl::Status ParseUpstreams(const YAML::Node& node, std::vector<gateway::UpstreamConfig>* out) {
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) return Bad("upstreams", "must be a list of {name, stdio | http}");
  std::vector<gateway::UpstreamConfig> parsed;
  for (size_t i = 0; i < node.size(); ++i) {
    gateway::UpstreamConfig upstream;
    RETURN_IF_ERROR(ParseUpstream(node[i], StrCat("upstreams[", i, "]"), &upstream));
    for (const auto& other : parsed) {
      if (other.name == upstream.name) {
        return Bad(StrCat("upstreams[", i, "].name"),
                   StrCat("duplicate upstream '", upstream.name, "'"));
      }
    }
    parsed.push_back(std::move(upstream));
  }
  *out = std::move(parsed);
  return absl::OkStatus();
}

}  // namespace

absl::Status LoadConfigFile(const std::string& path, ServerConfig* config) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(StrCat("config file '", path, "' cannot be read"));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat("config file '", path, "': ", e.what()));
  }
  if (root.IsNull()) return absl::OkStatus();
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        StrCat("config file '", path, "': the top level must be a mapping of sections"));
  }
  try {
    for (const auto& section : root) {
      std::string section_name = section.first.as<std::string>();
      if (section_name == "upstreams") {
        absl::Status s = ParseUpstreams(section.second, &config->upstreams);
        if (!s.ok()) {
          return absl::InvalidArgumentError(StrCat("config file '", path, "': ", s.message()));
        }
        continue;
      }
      if (!section.second.IsMap()) {
        return absl::InvalidArgumentError(
            StrCat("config file '", path, "': section '", section_name, "' must be a mapping"));
      }
      // Nested mappings (model_gateway.providers.anthropic.base_url): flattened to dotted keys.
      std::vector<std::pair<std::string, YAML::Node>> entries;
      FlattenSection(section_name, section.second, 0, entries);
      for (const auto& entry : entries) {
        const std::string& key = entry.first;
        std::vector<std::string> values;
        if (entry.second.IsSequence()) {
          for (const auto& item : entry.second) {
            if (!item.IsScalar()) {
              return absl::InvalidArgumentError(
                  StrCat("config file '", path, "': key '", key, "' must be a list of scalars"));
            }
            values.push_back(item.as<std::string>());
          }
          auto it = Registry().find(key);
          if (it != Registry().end() && !it->second.is_list) {
            return absl::InvalidArgumentError(StrCat("config file '", path, "': key '", key,
                                                     "' takes a single value, not a list"));
          }
        } else if (entry.second.IsScalar()) {
          values.push_back(entry.second.as<std::string>());
        } else if (entry.second.IsNull()) {
          values.emplace_back();
        } else {
          return absl::InvalidArgumentError(
              StrCat("config file '", path, "': key '", key, "' must be a scalar or a list"));
        }
        absl::Status s = SetValues(key, values, config);
        if (!s.ok()) {
          return absl::InvalidArgumentError(StrCat("config file '", path, "': ", s.message()));
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(StrCat("config file '", path, "': ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status ApplyEnvironment(const std::function<const char*(const char*)>& getenv_fn,
                              const std::vector<std::string>& env_names, ServerConfig* config) {
  // Map CONTEXTD_SECTION_KEY back to section.key; sections may contain underscores
  // (context_folding), so match against the registry rather than splitting.
  std::map<std::string, std::string> env_to_key;
  for (const auto& [key, _] : Registry()) {
    std::string env = "CONTEXTD_" + key;
    for (char& ch : env) {
      ch = ch == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
    env_to_key[env] = key;
  }
  // Only variables under a config section's prefix are config (CONTEXTD_SERVER_, ...); others
  // such as CONTEXTD_JOBS belong to scripts and tests.
  std::vector<std::string> prefixes;
  for (const auto& [key, _] : Registry()) {
    std::string prefix = "CONTEXTD_" + key.substr(0, key.find('.') + 1);
    for (char& ch : prefix) {
      ch = ch == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    }
    prefixes.push_back(std::move(prefix));
  }
  for (const std::string& name : env_names) {
    bool in_section = false;
    for (const std::string& p : prefixes) in_section = in_section || name.rfind(p, 0) == 0;
    if (!in_section) continue;
    auto it = env_to_key.find(name);
    if (it == env_to_key.end()) {
      return absl::InvalidArgumentError(
          StrCat("environment variable ", name, " names no config key"));
    }
    const char* value = getenv_fn(name.c_str());
    if (value == nullptr) continue;
    absl::Status s = SetConfigValue(it->second, value, config);
    if (!s.ok()) {
      return absl::InvalidArgumentError(StrCat("environment variable ", name, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

namespace {

absl::Status ValidateNatsEvents(const NatsEventsConfig& nats) {
  if (nats.url.empty()) {
    if (nats.jetstream) return Bad("events.nats.jetstream", "needs events.nats.url");
    return absl::OkStatus();
  }
  size_t start = 0;
  while (start <= nats.url.size()) {
    size_t comma = nats.url.find(',', start);
    if (comma == std::string::npos) comma = nats.url.size();
    std::string_view one = std::string_view(nats.url).substr(start, comma - start);
    if (!(one.rfind("nats://", 0) == 0 || one.rfind("tls://", 0) == 0) || one.size() < 8 ||
        one.find_first_of(" \t") != std::string_view::npos) {
      return Bad("events.nats.url",
                 StrCat("expected nats://HOST:PORT or tls://HOST:PORT (comma-separated for a "
                        "cluster), got '",
                        events::RedactNatsUrl(nats.url), "'"));
    }
    start = comma + 1;
  }
  absl::Status prefix = events::ValidateSubjectPrefix(nats.subject_prefix);
  if (!prefix.ok()) return Bad("events.nats.subject_prefix", std::string(prefix.message()));
  if (nats.jetstream) {
    if (nats.stream.empty()) {
      return Bad("events.nats.stream", "must name a stream when events.nats.jetstream is true");
    }
    if (nats.stream.find_first_of(".*> \t/\\") != std::string::npos || nats.stream.size() > 64) {
      return Bad("events.nats.stream", StrCat("'", nats.stream,
                                              "' is not a stream name (at most 64 characters, no "
                                              "'.', '*', '>', '/', '\\' or whitespace)"));
    }
  }
  if (nats.queue_size < 1 || nats.queue_size > 1'000'000) {
    return Bad("events.nats.queue_size", "must be between 1 and 1000000");
  }
  if (nats.outbox_max_age_s < 60 || nats.outbox_max_age_s > 30 * 86'400) {
    return Bad("events.nats.outbox_max_age_s", "must be between 60 and 2592000 (30 days)");
  }
  if (nats.outbox_max_rows < 1'000 || nats.outbox_max_rows > 100'000'000) {
    return Bad("events.nats.outbox_max_rows", "must be between 1000 and 100000000");
  }
  if (nats.reconnect_wait_ms < 10 || nats.reconnect_wait_ms > 60'000) {
    return Bad("events.nats.reconnect_wait_ms", "must be between 10 and 60000");
  }
  for (const auto& [key, path] : {std::pair<const char*, const std::string*>{
                                      "events.nats.credentials_file", &nats.credentials_file},
                                  {"events.nats.tls_ca_file", &nats.tls_ca_file}}) {
    if (!path->empty() && ::access(path->c_str(), R_OK) != 0) {
      return Bad(key, StrCat("'", *path, "' cannot be read"));
    }
  }
  return absl::OkStatus();
}

// Every configured provider is one the model gateway forwards to, with a usable URL and timeouts.
absl::Status ValidateModelProviders(const ModelGatewayConfig& model) {
  for (const auto& [name, p] : model.providers) {
    if (model::FindProvider(name) == nullptr) {
      return Bad(StrCat("model_gateway.providers.", name),
                 "no API forwards to a provider of that name");
    }
    if (!(p.base_url.rfind("http://", 0) == 0 || p.base_url.rfind("https://", 0) == 0) ||
        p.base_url.find_first_of(" ?#") != std::string::npos) {
      return BadModelProviderKey(
          name, "base_url",
          StrCat("must be an http:// or https:// URL without query, got '", p.base_url, "'"));
    }
    if (p.connect_timeout_ms < 1) {
      return BadModelProviderKey(name, "connect_timeout_ms", "must be positive");
    }
    if (p.response_timeout_seconds < 1) {
      return BadModelProviderKey(name, "response_timeout_seconds", "must be positive");
    }
    if (p.read_timeout_seconds < 1) {
      return BadModelProviderKey(name, "read_timeout_seconds", "must be positive");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateConfig(const ServerConfig& config) {
  if (config.transport != "stdio" && config.transport != "http") {
    return Bad("server.transport", StrCat("must be stdio or http, got '", config.transport, "'"));
  }
  if (config.max_message_bytes < 1024 || config.max_message_bytes > (int64_t{1} << 30)) {
    return Bad("server.max_message_bytes", "must be between 1024 and 1073741824");
  }
  if (config.store.backend != "sqlite" && config.store.backend != "postgres") {
    return Bad("store.backend",
               StrCat("must be sqlite or postgres, got '", config.store.backend, "'"));
  }
  if (config.store.backend == "postgres" && config.store.postgres_url.empty()) {
    return Bad("store.postgres.url",
               "is required with store.backend postgres (a libpq URL such as "
               "postgresql://contextd@db.internal/contextd, or a conninfo string)");
  }
  if (config.store.postgres_pool_size < 1 || config.store.postgres_pool_size > 1000) {
    return Bad("store.postgres.pool_size", "must be between 1 and 1000");
  }
  if (config.store.postgres_session_sync_ms < 0 || config.store.postgres_session_sync_ms > 60'000) {
    return Bad("store.postgres.session_sync_ms", "must be between 0 and 60000");
  }
  if (config.http_threads < 1 || config.http_threads > 64) {
    return Bad("server.http_threads", "must be between 1 and 64");
  }
  if (config.token_encoding != "o200k_base" && config.token_encoding != "cl100k_base") {
    return Bad("tokens.encoding",
               StrCat("must be o200k_base or cl100k_base, got '", config.token_encoding, "'"));
  }
  static const char* const kLevels[] = {"trace",   "debug", "info", "warn",
                                        "warning", "error", "off"};
  bool level_ok = false;
  for (const char* l : kLevels) level_ok = level_ok || config.log_level == l;
  if (!level_ok) {
    return Bad("server.log_level", "must be one of trace, debug, info, warn, error, off");
  }
  if (config.scrub.decode_depth < 0 || config.scrub.decode_depth > scrub::kMaxDecodeDepth) {
    return Bad("scrub.decode_depth", StrCat("must be between 0 and ", scrub::kMaxDecodeDepth));
  }
  const ModelGatewayConfig& model = config.model_gateway;
  if (model.max_body_bytes < 1024 || model.max_body_bytes > (int64_t{1} << 30)) {
    return Bad("model_gateway.max_body_bytes", "must be between 1024 and 1073741824");
  }
  RETURN_IF_ERROR(ValidateModelProviders(model));
  const model::AutoFoldOptions& fold = model.auto_fold;
  if (fold.trigger_tokens < 1) {
    return Bad("model_gateway.auto_fold.trigger_tokens", "must be positive");
  }
  if (fold.keep < 0 || fold.keep > 1000) {
    return Bad("model_gateway.auto_fold.keep", "must be between 0 and 1000");
  }
  if (fold.min_result_tokens < 0) {
    return Bad("model_gateway.auto_fold.min_result_tokens", "must not be negative");
  }
  if (fold.clear_at_least < 1) {
    return Bad("model_gateway.auto_fold.clear_at_least", "must be positive");
  }
  if (fold.expected_requests < 0) {
    return Bad("model_gateway.auto_fold.expected_requests", "must not be negative");
  }
  if (!model::ParseAutoFoldThinking(fold.thinking)) {
    return Bad("model_gateway.auto_fold.thinking",
               StrCat("must be remove, wait or off, got '", fold.thinking, "'"));
  }
  const MemoryConfig& mem = config.memory;
  if (mem.session_injection_tokens < 0 || mem.session_injection_tokens > 100'000) {
    return Bad("memory.session_injection_tokens",
               StrCat("must be 0..100000 (0: no lessons at a task's start), got ",
                      mem.session_injection_tokens));
  }
  if (mem.extract_scope != "project" && mem.extract_scope != "team" && mem.extract_scope != "org") {
    return Bad("memory.extract_scope",
               StrCat("must be project, team or org, got '", mem.extract_scope, "'"));
  }
  for (const auto& [name, endpoint] :
       {std::pair<const char*, const MemoryEndpointConfig*>{"distiller", &mem.distiller},
        {"embeddings", &mem.embeddings}}) {
    const std::string& url = endpoint->base_url;
    if (url.empty()) continue;
    if (!(url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) ||
        url.find_first_of(" ?#") != std::string::npos) {
      return Bad(StrCat("memory.", name, ".base_url"),
                 StrCat("must be an http:// or https:// URL without query, got '", url, "'"));
    }
    if (endpoint->model.empty()) {
      return Bad(StrCat("memory.", name, ".model"), "must be set when base_url is");
    }
    if (endpoint->timeout_ms < 1)
      return Bad(StrCat("memory.", name, ".timeout_ms"), "must be positive");
  }
  RETURN_IF_ERROR(ValidateNatsEvents(config.nats_events));
  const RetentionConfig& keep = config.retention;
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"trail_days", keep.trail_days},
                                    {"usage_detail_days", keep.usage_detail_days},
                                    {"conversation_days", keep.conversation_days},
                                    {"memory_history_days", keep.memory_history_days},
                                    {"sweep_interval_s", keep.sweep_interval_s}}) {
    if (value < 0 || value > 36'500) {
      return Bad(StrCat("retention.", name), "must be between 0 (forever / never) and 36500");
    }
  }
  if (keep.batch_rows < 1 || keep.batch_rows > 100'000) {
    return Bad("retention.batch_rows", "must be between 1 and 100000");
  }
  absl::Status folding = config.folding.Validate();
  if (!folding.ok()) return folding;
  return absl::OkStatus();
}

std::string ResolveDataDir(const ServerConfig& config) {
  if (!config.data_dir.empty()) return config.data_dir;
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/contextd";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.local/share/contextd";
  return "./contextd-data";
}

store::BackendOptions ServerBackendOptions(const ServerConfig& config) {
  store::BackendOptions o;
  o.kind = config.store.backend == "postgres" ? store::BackendKind::kPostgres
                                              : store::BackendKind::kSqlite;
  o.sqlite_path = ResolveDataDir(config) + "/contextd.db";
  o.postgres_conninfo = config.store.postgres_url;
  o.postgres_pool_size = static_cast<int>(config.store.postgres_pool_size);
  return o;
}

}  // namespace contextd::server
