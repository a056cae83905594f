#include "cli/status_cli.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "cli/connect_codex.h"
#include "nlohmann/json.hpp"

namespace contextd::cli {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// The gateway's metrics (see the model room) and the HTTP listener's (transport room).
constexpr char kModelRequests[] = "contextd_model_requests_total";
constexpr char kModelLast[] = "contextd_model_last_request_timestamp_seconds";
constexpr char kSessionsOpen[] = "contextd_http_sessions_open";
constexpr char kResponses[] = "contextd_http_responses_total";
constexpr char kToolCalls[] = "contextd_tool_call_seconds_count";

struct BaseUrl {
  std::string host;  // without brackets
  std::string port;
  std::string prefix;  // path before /healthz, without trailing '/'
  std::string text;    // as given, without trailing '/'
};

absl::StatusOr<BaseUrl> ParseBaseUrl(std::string url) {
  while (url.size() > 1 && url.back() == '/') url.pop_back();
  BaseUrl b;
  b.text = url;
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    return absl::InvalidArgumentError(base::StrCat(
        "--url must be http://HOST[:PORT] (https is not supported here), got '", url, "'"));
  }
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  b.prefix = slash == std::string::npos ? "" : rest.substr(slash);
  std::string port = "80";
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos)
      return absl::InvalidArgumentError(base::StrCat("bad --url '", url, "'"));
    b.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':')
      port = authority.substr(close + 2);
  } else {
    size_t colon = authority.rfind(':');
    b.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (b.host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos) {
    return absl::InvalidArgumentError(base::StrCat("bad --url '", url, "'"));
  }
  b.port = port;
  return b;
}

struct GetResult {
  int status = 0;
  std::string body;
};

// GET base.prefix + path, 5 s overall. Unavailable when the server cannot be reached.
absl::StatusOr<GetResult> HttpGet(const BaseUrl& base, const std::string& path,
                                  const std::string& token) {
  try {
    boost::asio::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(5));
    auto endpoints = resolver.resolve(base.host, base.port);
    stream.connect(endpoints);
    http::request<http::empty_body> req{http::verb::get, base.prefix + path, 11};
    bool v6 = base.host.find(':') != std::string::npos;
    req.set(http::field::host,
            base::StrCat(v6 ? "[" : "", base.host, v6 ? "]" : "", ":", base.port));
    req.set(http::field::user_agent, "contextd-status");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(16u << 20);
    http::read(stream, buffer, parser);
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    return GetResult{static_cast<int>(parser.get().result_int()), parser.get().body()};
  } catch (const std::exception& e) {
    return absl::UnavailableError(base::StrCat("GET ", base.text, path, ": ", e.what()));
  }
}

absl::StatusOr<std::string> ReadFirstToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(base::StrCat("token file '", path, "' cannot be read"));
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    size_t b = line.find_last_not_of(" \t\r");
    std::string l = line.substr(a, b - a + 1);
    // As `serve --auth-token-file`: an optional "tenant:" prefix.
    size_t colon = l.find(':');
    return colon == std::string::npos ? l : l.substr(colon + 1);
  }
  return absl::InvalidArgumentError(base::StrCat("token file '", path, "' has no token"));
}

bool ParseValue(std::string_view s, double* v) {
  if (s == "NaN") {
    *v = std::nan("");
    return true;
  }
  if (s == "+Inf" || s == "Inf") {
    *v = HUGE_VAL;
    return true;
  }
  if (s == "-Inf") {
    *v = -HUGE_VAL;
    return true;
  }
  std::string t(s);
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(t.c_str(), &end);
  return !t.empty() && end == t.c_str() + t.size();
}

bool ParseLine(std::string_view line, MetricSample* out) {
  size_t i = 0;
  auto is_name = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  while (i < line.size() && is_name(line[i], i == 0)) ++i;
  if (i == 0) return false;
  out->name = std::string(line.substr(0, i));
  out->labels.clear();
  auto skip_space = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  };
  skip_space();
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (true) {
      skip_space();
      if (i < line.size() && line[i] == '}') {
        ++i;
        break;
      }
      size_t start = i;
      while (i < line.size() && is_name(line[i], i == start)) ++i;
      if (i == start) return false;
      std::string label(line.substr(start, i - start));
      skip_space();
      if (i >= line.size() || line[i] != '=') return false;
      ++i;
      skip_space();
      if (i >= line.size() || line[i] != '"') return false;
      ++i;
      std::string value;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size()) {
          char e = line[i++];
          value.push_back(e == 'n' ? '\n' : e);
        } else {
          value.push_back(c);
        }
      }
      if (!closed) return false;
      out->labels[label] = std::move(value);
      skip_space();
      if (i < line.size() && line[i] == ',') ++i;
    }
  }
  skip_space();
  size_t start = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  return ParseValue(line.substr(start, i - start), &out->value);
}

double Sum(const std::vector<MetricSample>& samples, std::string_view name,
           const std::map<std::string, std::string>& match = {}, bool* found = nullptr) {
  double total = 0;
  for (const MetricSample& s : samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      ok = ok && it != s.labels.end() && it->second == v;
    }
    if (!ok) continue;
    total += s.value;
    if (found != nullptr) *found = true;
  }
  return total;
}

std::string Count(double v) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(0) << v;
  return o.str();
}

void ReportModel(const std::vector<MetricSample>& samples, const BaseUrl& base, double now,
                 std::ostream& out) {
  // The folded APIs, by their `api` label (a sample without one is an Anthropic one).
  struct Api {
    const char* label;
    const char* name;
  };
  std::vector<Api> apis = {{"anthropic", "the Anthropic API"},
                           {"openai_chat", "OpenAI Chat Completions"},
                           {"openai_responses", "OpenAI Responses"},
                           {"openai", "the OpenAI API (passed through)"}};
  // An API this table does not name yet (a new row of the model gateway's) by its label.
  std::set<std::string> others;
  for (const MetricSample& s : samples) {
    auto api = s.labels.find("api");
    if (s.name != kModelRequests || api == s.labels.end()) continue;
    bool known = false;
    for (const Api& a : apis) known = known || api->second == a.label;
    if (!known) others.insert(api->second);
  }
  for (const std::string& label : others) apis.push_back({label.c_str(), label.c_str()});
  bool any = false;
  for (const Api& a : apis) {
    std::map<std::string, double> by_status;
    double total = 0;
    for (const MetricSample& s : samples) {
      if (s.name != kModelRequests) continue;
      auto api = s.labels.find("api");
      if ((api == s.labels.end() ? std::string("anthropic") : api->second) != a.label) continue;
      auto st = s.labels.find("status");
      by_status[st == s.labels.end() ? "?" : st->second] += s.value;
      total += s.value;
    }
    if (total <= 0) continue;
    any = true;
    out << "model: " << Count(total) << " request(s) to " << a.name << " (";
    bool first = true;
    for (const auto& [status, n] : by_status) {
      out << (first ? "" : ", ") << "status " << status << ": " << Count(n);
      first = false;
    }
    out << ")";
    bool has_last = false;
    double last = Sum(samples, kModelLast, {{"api", a.label}}, &has_last);
    if (has_last && last > 0) {
      double ago = now - last;
      out << ", last " << (ago < 0 ? 0 : static_cast<long long>(ago)) << " s ago";
    }
    out << "\n";
  }
  if (!any) {
    out << "model: no model requests yet: is ANTHROPIC_BASE_URL=" << base.text
        << " set for the agent? run `contextd connect claude-code` (or `contextd connect codex`)\n";
  }
}

// "12 s ago", "5 min ago", "3 h ago", "2 d ago".
std::string Ago(double now, int64_t at_ms) {
  const auto s = static_cast<long long>(std::max(0.0, now - static_cast<double>(at_ms) / 1000));
  if (s < 120) return base::StrCat(s, " s ago");
  if (s < 7200) return base::StrCat(s / 60, " min ago");
  if (s < 172800) return base::StrCat(s / 3600, " h ago");
  return base::StrCat(s / 86400, " d ago");
}

// `text` cut to `width` bytes, the cut marked with "..".
std::string Fit(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 2) + "..";
}

int64_t IntOf(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// The model conversations' folds, from GET /api/v1/conversations. Prints nothing when the server
// has no such endpoint (an older contextd), refuses it, or has no conversation to show: the rest
// of the report stands on its own.
void ReportConversations(const BaseUrl& base, const std::string& token, int limit, double now,
                         std::ostream& out) {
  if (limit <= 0) return;
  auto got = HttpGet(base, base::StrCat("/api/v1/conversations?limit=", limit), token);
  if (!got.ok() || got->status != 200) return;
  nlohmann::json body = nlohmann::json::parse(got->body, nullptr, false);
  if (!body.is_object() || !body.contains("conversations") || !body["conversations"].is_array() ||
      body["conversations"].empty()) {
    return;
  }
  out << "model conversations (most recent first):\n";
  out << "  " << std::left << std::setw(28) << "conversation" << std::right << std::setw(9)
      << "requests" << std::setw(7) << "folds" << std::setw(9) << "skipped" << std::setw(10)
      << "isolated" << std::setw(15) << "tokens saved"
      << "  last request\n";
  for (const nlohmann::json& c : body["conversations"]) {
    if (!c.is_object()) continue;
    const std::string id = c.contains("conversation") && c["conversation"].is_string()
                               ? c["conversation"].get<std::string>()
                               : "?";
    const int64_t before = IntOf(c, "tokens_before");
    const int64_t saved = before - IntOf(c, "tokens_after");
    std::string saved_text = base::StrCat(saved);
    if (before > 0) {
      saved_text += base::StrCat(" (", saved * 100 / before, "%)");
    }
    out << "  " << std::left << std::setw(28) << Fit(id, 28) << std::right << std::setw(9)
        << IntOf(c, "requests") << std::setw(7) << IntOf(c, "folds_made") << std::setw(9)
        << IntOf(c, "folds_skipped") << std::setw(10) << IntOf(c, "isolated_requests")
        << std::setw(15) << saved_text << "  " << Ago(now, IntOf(c, "last_at_ms"));
    auto reasons = c.find("folds_skipped_by_reason");
    if (reasons != c.end() && reasons->is_object() && !reasons->empty()) {
      out << "  skipped:";
      bool first = true;
      for (const auto& [reason, n] : reasons->items()) {
        out << (first ? " " : ", ") << reason << " "
            << (n.is_number_integer() ? n.get<int64_t>() : 0);
        first = false;
      }
    }
    out << "\n";
  }
}

std::string Mark(const std::optional<std::string>& have, const std::string& want) {
  if (!have) return "not set";
  std::string h = *have;
  while (h.size() > 1 && h.back() == '/') h.pop_back();
  return base::StrCat(*have, h == want ? " (this server)" : " (another server)");
}

// Whether an X-Contextd-Project value names the directory Claude Code runs in, i.e. the project
// of its MCP session (whose root is that directory): both are canonicalized as the server does.
std::string ProjectMark(const std::optional<std::string>& have, const std::string& cwd) {
  if (!have) return "not set (model requests in project default)";
  if (have->empty() || have->front() != '/')
    return base::StrCat(*have, " (an explicit project id)");
  std::error_code ec1, ec2;
  const bool same =
      std::filesystem::weakly_canonical(*have, ec1) == std::filesystem::weakly_canonical(cwd, ec2);
  return base::StrCat(*have, same && !ec1 && !ec2 ? " (this directory)" : " (another directory)");
}

void ReportClaudeCode(const BaseUrl& base, const AgentEnvironment& env, std::ostream& out) {
  out << "Claude Code configuration:\n";
  bool pointed = false;
  for (ClaudeCodeScope scope : {ClaudeCodeScope::kProject, ClaudeCodeScope::kUser}) {
    auto c = ReadClaudeCodeConnection(scope, "", env);
    const char* name = scope == ClaudeCodeScope::kProject ? "project" : "user";
    if (!c.ok()) {
      out << "  " << name << ": " << c.status().message() << "\n";
      continue;
    }
    out << "  " << name << ": " << c->files.mcp_file
        << " mcpServers.contextd: " << Mark(c->mcp_url, base.text + "/mcp") << "\n";
    out << "  " << name << ": " << c->files.settings_file
        << " env.ANTHROPIC_BASE_URL: " << Mark(c->base_url, base.text) << "\n";
    if (scope == ClaudeCodeScope::kProject || c->project_header) {
      out << "  " << name << ": " << c->files.settings_file << " env.ANTHROPIC_CUSTOM_HEADERS "
          << kProjectHeader << ": " << ProjectMark(c->project_header, env.cwd) << "\n";
    }
    pointed |= c->base_url.has_value() || c->mcp_url.has_value();
  }
  if (!pointed) {
    out << "  not connected: run `contextd connect claude-code` (this project) or "
           "`contextd connect claude-code --user`\n";
  }
}

void ReportCodex(const BaseUrl& base, const AgentEnvironment& env, std::ostream& out) {
  out << "Codex configuration:\n";
  auto c = ReadCodexConnection(env);
  if (!c.ok()) {
    out << "  " << c.status().message() << "\n";
    return;
  }
  out << "  " << c->config_file
      << " mcp_servers.contextd.url: " << Mark(c->mcp_url, base.text + "/mcp") << "\n";
  out << "  " << c->config_file
      << " model_providers.contextd.base_url: " << Mark(c->base_url, base.text + "/v1") << "\n";
  out << "  " << c->config_file << " model_provider: " << c->model_provider.value_or("not set")
      << (c->model_provider == "contextd" ? "" : " (model requests do not go through contextd)")
      << "\n";
  if (!c->mcp_url && !c->base_url) out << "  not connected: run `contextd connect codex`\n";
}

}  // namespace

std::vector<MetricSample> ParsePrometheusText(std::string_view text) {
  std::vector<MetricSample> samples;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    MetricSample s;
    if (ParseLine(line, &s)) samples.push_back(std::move(s));
  }
  return samples;
}

int RunStatusCommand(const StatusCommand& command, const AgentEnvironment& env, std::ostream& out,
                     std::ostream& err) {
  auto base = ParseBaseUrl(command.url);
  if (!base.ok()) {
    err << "contextd status: " << base.status().message() << "\n";
    return 2;
  }
  std::string token;
  if (!command.token_file.empty()) {
    auto t = ReadFirstToken(command.token_file);
    if (!t.ok()) {
      err << "contextd status: " << t.status().message() << "\n";
      return 2;
    }
    token = *t;
  }
  auto health = HttpGet(*base, "/healthz", "");
  if (!health.ok()) {
    err << "contextd status: contextd is not reachable at " << base->text << " ("
        << health.status().message() << "); start it with `contextd serve`\n";
    return 1;
  }
  // 200 ready; 503 up but a configured dependency (database, NATS) is down: its checks say which.
  nlohmann::json health_body = nlohmann::json::parse(health->body, nullptr, false);
  const bool readiness = health_body.is_object() && health_body.contains("checks");
  if (health->status != 200 && !(health->status == 503 && readiness)) {
    err << "contextd status: " << base->text << "/healthz answered " << health->status
        << ": is this contextd?\n";
    return 1;
  }
  out << "server: " << (health->status == 200 ? "up" : "up, not ready") << " at " << base->text;
  if (health_body.is_object() && health_body.contains("version") &&
      health_body["version"].is_string()) {
    out << " (version " << health_body["version"].get<std::string>() << ")";
  }
  out << "\n";
  // What is not ready, when something is.
  if (health->status == 503 && readiness && health_body["checks"].is_object()) {
    for (const auto& [name, check] : health_body["checks"].items()) {
      if (!check.is_object()) continue;
      out << "  " << name << ": " << check.value("status", std::string("?"));
      if (check.contains("error") && check["error"].is_string()) {
        out << " (" << check["error"].get<std::string>() << ")";
      }
      out << "\n";
    }
  }
  bool not_ready = health->status == 503;

  auto metrics = HttpGet(*base, "/metrics", token);
  int code = 0;
  if (!metrics.ok()) {
    err << "contextd status: " << metrics.status().message() << "\n";
    code = 1;
  } else if (metrics->status == 401) {
    err << "contextd status: " << base->text << "/metrics needs a bearer token: pass "
        << (command.token_file.empty() ? "--token-file FILE (the server's --auth-token-file)"
                                       : "a token the server accepts (this one was refused)")
        << "\n";
    code = 1;
  } else if (metrics->status != 200) {
    err << "contextd status: " << base->text << "/metrics answered " << metrics->status << "\n";
    code = 1;
  } else {
    std::vector<MetricSample> samples = ParsePrometheusText(metrics->body);
    double sessions = Sum(samples, kSessionsOpen);
    double mcp_requests = Sum(samples, kResponses, {{"route", "mcp"}});
    double tool_calls = Sum(samples, kToolCalls);
    out << "mcp: " << Count(sessions) << " open session(s), " << Count(mcp_requests)
        << " request(s) answered, " << Count(tool_calls) << " tool call(s)";
    if (mcp_requests <= 0) out << ": no agent has connected yet";
    out << "\n";
    double now =
        command.now
            ? command.now()
            : std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                  .count();
    ReportModel(samples, *base, now, out);
    ReportConversations(*base, token, command.conversations, now, out);
  }
  ReportClaudeCode(*base, env, out);
  ReportCodex(*base, env, out);
  return not_ready && code == 0 ? 1 : code;
}

}  // namespace contextd::cli
