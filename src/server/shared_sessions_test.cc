// Two real contextd processes on one real PostgreSQL (decision 0025): an Mcp-Session-Id issued by
// one is valid on the other. initialize on A, branches created on A, continued and returned on B;
// DELETE on B ends the session for A too; A's idle sweep does not end a session B keeps using;
// after kill -9 of A its session continues on B with its live branch; the session's trail is one
// tree on both (decision 0028), also after kill -9 of A. Plain HTTP/1.1 on
// 127.0.0.1 (Connection: close), the binary built beside this test. Skips when PostgreSQL cannot
// start (fails instead under CONTEXTD_REQUIRE_POSTGRES=1).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"
#include "store/backend.h"
#include "store/test_util.h"
#include "store/testing/pg_test_server.h"

namespace contextd::server {
namespace {

using Json = nlohmann::json;
using store::testing::PgTestServer;

constexpr char kTokenA[] = "tenant-a-token-0123456789";
constexpr char kTokenB[] = "tenant-b-token-0123456789";

std::string Binary() {
  if (const char* b = std::getenv("CONTEXTD_BINARY")) return b;
  const char* dir = std::getenv("CONTEXTD_BINARY_DIR");
  return std::string(dir != nullptr ? dir : ".") + "/src/cli/contextd";
}

// One contextd child process; its stderr is collected by a reader thread.
class Contextd {
 public:
  explicit Contextd(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 2);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      close(fds[0]);
      std::vector<char*> argv;
      std::string bin = Binary();
      argv.push_back(bin.data());
      std::vector<std::string> copy = args;
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(bin.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    fd_ = fds[0];
    reader_ = std::thread([this] {
      char buf[4096];
      for (;;) {
        ssize_t n = read(fd_, buf, sizeof buf);
        if (n <= 0) break;
        std::lock_guard<std::mutex> lock(mu_);
        log_.append(buf, static_cast<size_t>(n));
        cv_.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu_);
      eof_ = true;
      cv_.notify_all();
    });
  }
  ~Contextd() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) close(fd_);
  }
  // Waits (at most `timeout`) until the log matches `pattern`; returns the first group or "".
  std::string WaitFor(const std::string& pattern,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::regex re(pattern);
    std::smatch m;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return std::regex_search(log_, m, re) || eof_; });
    if (!std::regex_search(log_, m, re)) return "";
    return m.size() > 1 ? m[1].str() : m[0].str();
  }
  bool Logged(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    return log_.find(text) != std::string::npos;
  }
  std::string log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  int port() {
    if (port_ == 0) {
      std::string p = WaitFor("listening on http://127\\.0\\.0\\.1:([0-9]+)/mcp");
      port_ = p.empty() ? -1 : std::stoi(p);
    }
    return port_;
  }
  void Kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  int port_ = 0;
  bool reaped_ = false;
  std::thread reader_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string log_;
  bool eof_ = false;
};

struct Reply {
  int status = 0;
  std::string session_id;  // Mcp-Session-Id header
  std::string body;
  Json json() const { return Json::parse(body, nullptr, false); }
};

// One HTTP/1.1 request for `path` on a new connection (Connection: close), read to EOF.
Reply RequestPath(int port, const std::string& method, const std::string& path,
                  const std::string& token, const std::string& sid, const std::string& body) {
  Reply out;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return out;
  }
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                    "Accept: application/json, text/event-stream\r\n" +
                    "Content-Type: application/json\r\nAuthorization: Bearer " + token + "\r\n";
  if (!sid.empty()) req += "Mcp-Session-Id: " + sid + "\r\nMCP-Protocol-Version: 2025-06-18\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (size_t sent = 0; sent < req.size();) {
    ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buf[8192];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  auto end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || end == std::string::npos) return out;
  out.status = std::stoi(raw.substr(9, 3));
  std::string head = raw.substr(0, end);
  std::smatch m;
  if (std::regex_search(head, m, std::regex("[Mm]cp-[Ss]ession-[Ii]d: ([^\r\n]+)"))) {
    out.session_id = m[1].str();
  }
  out.body = raw.substr(end + 4);
  // An SSE answer: the JSON is the data of its last message event.
  if (head.find("text/event-stream") != std::string::npos) {
    std::string last;
    for (std::smatch d; std::regex_search(out.body, d, std::regex("data: ([^\n]+)"));) {
      last = d[1].str();
      out.body = d.suffix();
    }
    out.body = last;
  }
  return out;
}

// A request to /mcp.
Reply Request(int port, const std::string& method, const std::string& token, const std::string& sid,
              const std::string& body) {
  return RequestPath(port, method, "/mcp", token, sid, body);
}

// GET `path` of the trail viewer's API (/api/v1/...) as tenant acme: its JSON (null on failure).
Json ApiGet(int port, const std::string& path) {
  Reply r = RequestPath(port, "GET", path, kTokenA, "", "");
  EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  return r.json();
}

class SharedSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CONTEXTD_REQUIRE_PG_OR_SKIP();
    auto db = PgTestServer::Shared()->CreateDatabase();
    ASSERT_TRUE(db.ok()) << db.status();
    url_ = PgTestServer::Shared()->Url(*db);
    conninfo_ = PgTestServer::Shared()->Conninfo(*db);
    std::ofstream(tmp_.File("tokens")) << "acme:" << kTokenA << "\nglobex:" << kTokenB << "\n";
  }

  // `config`: a YAML file for --config ("" for none).
  std::unique_ptr<Contextd> Start(const std::string& name, int idle_seconds = 1800,
                                  const std::string& config = "") {
    std::vector<std::string> args{
        "serve",
        "--transport",
        "http",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        tmp_.File(name),
        "--auth-token-file",
        tmp_.File("tokens"),
        "--log-level",
        "info",
        "--set",
        "store.backend=postgres",
        "--set",
        "store.postgres.url=" + url_,
        "--set",
        "store.postgres.pool_size=2",
        "--set",
        "store.postgres.session_sync_ms=0",
        "--set",
        "context_folding.session_idle_timeout_seconds=" + std::to_string(idle_seconds)};
    if (!config.empty()) {
      args.push_back("--config");
      args.push_back(config);
    }
    auto c = std::make_unique<Contextd>(args);
    EXPECT_GT(c->port(), 0) << c->log();
    return c;
  }
#ifdef GATEWAY_TEST_UPSTREAM
  // A config whose one upstream, "t", is the gateway tests' MCP server (tool t__echo).
  std::string UpstreamConfig() {
    const std::string path = tmp_.File("upstream.yaml");
    std::ofstream(path) << "upstreams:\n  - name: t\n    stdio:\n      command: "
                        << GATEWAY_TEST_UPSTREAM << "\n";
    return path;
  }
#endif

  // initialize + notifications/initialized on `c`; the session id.
  std::string Initialize(Contextd& c, const char* token = kTokenA) {
    Json init = {{"jsonrpc", "2.0"},
                 {"id", 1},
                 {"method", "initialize"},
                 {"params",
                  {{"protocolVersion", "2025-06-18"},
                   {"capabilities", Json::object()},
                   {"clientInfo", {{"name", "shared-sessions-test"}, {"version", "1"}}}}}};
    Reply r = Request(c.port(), "POST", token, "", init.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(r.session_id.empty());
    Json note = {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}};
    EXPECT_EQ(Request(c.port(), "POST", token, r.session_id, note.dump()).status, 202);
    return r.session_id;
  }

  // tools/call `tool` on `c` in session `sid`: the HTTP reply.
  Reply Call(Contextd& c, const std::string& sid, const std::string& tool, Json args,
             const char* token = kTokenA) {
    Json call = {{"jsonrpc", "2.0"},
                 {"id", ++next_id_},
                 {"method", "tools/call"},
                 {"params", {{"name", tool}, {"arguments", std::move(args)}}}};
    return Request(c.port(), "POST", token, sid, call.dump());
  }
  // The structured result of a successful tool call (fails the test otherwise).
  Json Result(const Reply& r) {
    Json j = r.json();
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(j.contains("result")) << r.body;
    if (!j.contains("result")) return Json::object();
    EXPECT_FALSE(j["result"].value("isError", false)) << r.body;
    return j["result"].value("structuredContent", Json::object());
  }
  std::string CreateBranch(Contextd& c, const std::string& sid) {
    Json created = Result(Call(c, sid, "branch_create",
                               {{"description", "explore the lexer"},
                                {"prompt", "find where tokens overflow"},
                                {"timeout_seconds", 600}}));
    return created.value("branch_id", "");
  }
  std::string StoredStatus(const std::string& branch_id) {
    store::BackendOptions o;
    o.kind = store::BackendKind::kPostgres;
    o.postgres_conninfo = conninfo_;
    o.postgres_pool_size = 1;
    auto backend = store::OpenBackend(o);
    if (!backend.ok()) return "error: " + std::string(backend.status().message());
    auto s = (*backend)->OpenBranchStore();
    if (!s.ok()) return "error: " + std::string(s.status().message());
    auto b = (*s)->Get(branch_id);
    if (!b.ok() || !b->has_value()) return "missing";
    return std::string(folding::BranchStatusName((*b)->status));
  }

  store::TempDir tmp_;
  std::string url_;
  std::string conninfo_;
  int next_id_ = 10;
};

TEST_F(SharedSessionsTest, ASessionContinuesOnTheOtherInstanceAndItsDeleteEndsItEverywhere) {
  auto a = Start("a");
  auto b = Start("b");
  const std::string sid = Initialize(*a);
  ASSERT_FALSE(sid.empty());
  const std::string first = CreateBranch(*a, sid);
  ASSERT_FALSE(first.empty());

  // B never saw this session: it resumes it from the database, with its branch.
  Json status = Result(Call(*b, sid, "branch_status", Json::object()));
  EXPECT_EQ(status.value("active_branch_id", ""), first) << status.dump();
  EXPECT_TRUE(b->Logged("session " + sid + " (tenant acme) continued from the shared store"));
  Json returned = Result(
      Call(*b, sid, "branch_return", {{"branch_id", first}, {"message", "overflow in lex"}}));
  EXPECT_EQ(returned.value("branch_id", ""), first) << returned.dump();
  EXPECT_EQ(StoredStatus(first), "completed");
  // A follows: its cached branch is stale, it reloads.
  status = Result(Call(*a, sid, "branch_status", {{"branch_id", first}}));
  EXPECT_EQ(status["branches"][0].value("status", ""), "completed") << status.dump();

  // Another tenant's token does not reach the session; a made-up id neither.
  EXPECT_EQ(Call(*b, sid, "branch_status", Json::object(), kTokenB).status, 404);
  EXPECT_EQ(Call(*b, std::string(32, 'f'), "branch_status", Json::object()).status, 404);
  EXPECT_EQ(Call(*b, "not-a-session-id", "branch_status", Json::object()).status, 404);

  // A live branch, created on B; DELETE on B force-returns it and ends the session for A too.
  const std::string second = CreateBranch(*b, sid);
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(Request(b->port(), "DELETE", kTokenA, sid, "").status, 200);
  EXPECT_EQ(StoredStatus(second), "failed");
  EXPECT_EQ(Call(*a, sid, "branch_status", Json::object()).status, 404);
  EXPECT_EQ(Call(*b, sid, "branch_status", Json::object()).status, 404);
}

TEST_F(SharedSessionsTest, AnInstanceDoesNotEndASessionTheOtherKeptAlive) {
  auto a = Start("a", /*idle_seconds=*/2);
  auto b = Start("b", /*idle_seconds=*/2);
  const std::string sid = Initialize(*a);
  const std::string branch = CreateBranch(*a, sid);
  ASSERT_FALSE(branch.empty());
  // The client now talks to B only. A's sweep finds the session idle there, but B saw it
  // lately: A leaves it (and its branch) alone.
  const std::string left = "session " + sid + " idle here but seen elsewhere";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!a->Logged(left) && std::chrono::steady_clock::now() < deadline) {
    ASSERT_EQ(Call(*b, sid, "branch_status", Json::object()).status, 200);
    a->WaitFor(left, std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(a->Logged(left)) << a->log();
  EXPECT_EQ(StoredStatus(branch), "active");
  Json status = Result(Call(*b, sid, "branch_status", Json::object()));
  EXPECT_EQ(status.value("active_branch_id", ""), branch);
  // Nobody uses it any more: the first instance whose sweep finds it idle everywhere ends it
  // (either the one holding it, or the store-wide sweep of either).
  const std::string ended = "session ended (idle timeout): force-returned 1 branch";
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!a->Logged(ended) && !b->Logged(ended) && std::chrono::steady_clock::now() < until) {
    b->WaitFor("session ended \\(idle timeout\\)", std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(a->Logged(ended) != b->Logged(ended)) << a->log() << b->log();  // exactly one
  EXPECT_EQ(StoredStatus(branch), "failed");
}

TEST_F(SharedSessionsTest, AfterKill9ItsSessionContinuesOnTheOtherWithItsLiveBranch) {
  auto a = Start("a");
  auto b = Start("b");
  const std::string sid = Initialize(*a);
  const std::string branch = CreateBranch(*a, sid);
  ASSERT_FALSE(branch.empty());
  a->Kill9();
  Json status = Result(Call(*b, sid, "branch_status", Json::object()));
  EXPECT_EQ(status.value("active_branch_id", ""), branch) << status.dump();
  Json returned = Result(Call(*b, sid, "branch_return", {{"message", "finished on the survivor"}}));
  EXPECT_EQ(returned.value("branch_id", ""), branch);
  EXPECT_EQ(StoredStatus(branch), "completed");
}

TEST_F(SharedSessionsTest, ShutdownLeavesSessionsToTheOtherInstances) {
  auto a = Start("a");
  auto b = Start("b");
  const std::string sid = Initialize(*a);
  const std::string branch = CreateBranch(*a, sid);
  ASSERT_FALSE(branch.empty());
  a.reset();  // SIGTERM: a clean stop
  EXPECT_EQ(StoredStatus(branch), "active");
  Json status = Result(Call(*b, sid, "branch_status", Json::object()));
  EXPECT_EQ(status.value("active_branch_id", ""), branch) << status.dump();
}

#ifdef GATEWAY_TEST_UPSTREAM
// One trail per session (decision 0028): a branch opened on A with a proxied call in it, returned
// on B, is one folded branch with its events in B's context_view, trail_unfold and viewer API;
// after kill -9 of A, B still shows the same tree and appends to it.
TEST_F(SharedSessionsTest, ASessionsTrailIsOneTreeOnEveryInstanceAlsoAfterKill9) {
  const std::string config = UpstreamConfig();
  auto a = Start("a", 1800, config);
  auto b = Start("b", 1800, config);
  const std::string sid = Initialize(*a);
  const std::string branch = CreateBranch(*a, sid);
  ASSERT_FALSE(branch.empty());
  Reply echoed = Call(*a, sid, "t__echo", {{"text", "the lexer overflows at line 42"}});
  ASSERT_EQ(echoed.status, 200) << echoed.body;
  ASSERT_TRUE(echoed.json().contains("result")) << echoed.body;
  ASSERT_FALSE(echoed.json()["result"].value("isError", false)) << echoed.body;
  Result(Call(*b, sid, "branch_return", {{"branch_id", branch}, {"message", "overflow in lex"}}));

  // context_view on B: the branch A opened, folded, with the call A recorded.
  Json view = Result(Call(*b, sid, "context_view", Json::object()));
  EXPECT_EQ(view.value("scopes_folded", 0), 1) << view.dump();
  EXPECT_EQ(view.value("scopes_open", -1), 0) << view.dump();
  EXPECT_EQ(view.value("events", 0), 4) << view.dump();  // created; call, result; returned
  const std::string view_text = view.value("view", "");
  EXPECT_NE(view_text.find("= branch " + branch + " [folded: "), std::string::npos) << view_text;
  const std::string root = view.value("session_scope_id", "");
  ASSERT_FALSE(root.empty());

  // The viewer on B: one session, its scopes, the branch's events; the handle unfolds there.
  Json sessions = ApiGet(b->port(), "/api/v1/sessions");
  ASSERT_EQ(sessions["sessions"].size(), 1u) << sessions.dump();
  EXPECT_EQ(sessions["sessions"][0].value("root_id", ""), root);
  EXPECT_EQ(sessions["sessions"][0].value("session_id", ""), sid);
  EXPECT_EQ(sessions["sessions"][0].value("branches", 0), 1);
  Json scopes = ApiGet(b->port(), "/api/v1/sessions/" + root + "/scopes");
  ASSERT_EQ(scopes["scopes"].size(), 2u) << scopes.dump();
  EXPECT_EQ(scopes["scopes"][1].value("id", ""), branch);
  EXPECT_EQ(scopes["scopes"][1].value("status", ""), "folded");
  EXPECT_EQ(scopes["scopes"][1].value("summary", ""), "overflow in lex");
  Json events = ApiGet(b->port(), "/api/v1/scopes/" + branch + "/events");
  ASSERT_EQ(events["events"].size(), 3u) << events.dump();  // call, result, returned
  EXPECT_EQ(events["events"][1].value("kind", ""), "tool_result");
  const int64_t result_seq = events["events"][1].value("seq", int64_t{0});
  Json handle =
      Result(Call(*b, sid, "trail_unfold", {{"scope_id", branch}, {"event", result_seq}}));
  ASSERT_EQ(handle["events"].size(), 2u) << handle.dump();  // the result and its call
  EXPECT_EQ(handle["events"][0].value("kind", ""), "tool_call");
  EXPECT_NE(handle["events"][1].value("payload", "").find("line 42"), std::string::npos)
      << handle.dump();

  // A dies; B still shows that tree and appends to it (a call outside any branch: the root).
  a->Kill9();
  Reply later = Call(*b, sid, "t__echo", {{"text", "after the crash"}});
  ASSERT_EQ(later.status, 200) << later.body;
  view = Result(Call(*b, sid, "context_view", Json::object()));
  EXPECT_EQ(view.value("session_scope_id", ""), root);
  EXPECT_EQ(view.value("scopes_folded", 0), 1) << view.dump();
  EXPECT_EQ(view.value("events", 0), 6) << view.dump();
  EXPECT_NE(view.value("view", "").find("after the crash"), std::string::npos) << view.dump();
  sessions = ApiGet(b->port(), "/api/v1/sessions");
  ASSERT_EQ(sessions["sessions"].size(), 1u) << sessions.dump();
  EXPECT_EQ(sessions["sessions"][0].value("events", 0), 6);
}
#endif  // GATEWAY_TEST_UPSTREAM

}  // namespace
}  // namespace contextd::server
