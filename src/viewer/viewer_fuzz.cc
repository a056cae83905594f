// Fuzz target for the viewer's routes (viewer::UiRoutes: /ui, /ui/..., /api/v1/... and the live
// stream) behind the real listener on 127.0.0.1: the input's first line is the request target,
// each further line a raw header line. "@R" stands for the root id of the one session in the
// SQLite store (a temp dir), "@B" for its branch's scope. Every answer in JSON must be valid
// UTF-8 JSON, a live stream's first data line too, and the server must answer /healthz after
// every input.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/executor.h"
#include "base/foreign_text.h"
#include "nlohmann/json.hpp"
#include "store/backend.h"
#include "store/test_util.h"
#include "transport/http_server.h"
#include "transport/testing/echo_session.h"
#include "transport/testing/raw_http_client.h"
#include "viewer/trail_api.h"
#include "viewer/ui_routes.h"

namespace {

using namespace contextd;  // NOLINT: a fuzz target's one entry point
using transport::testing::RawClient;
using transport::testing::Response;

struct World {
  store::TempDir dir;
  base::FakeClock clock;
  std::unique_ptr<store::Backend> backend;
  std::unique_ptr<folding::BranchStore> branches;
  std::unique_ptr<trail::TrailStore> store;
  std::unique_ptr<trail::Trail> trail;
  std::unique_ptr<viewer::TrailApi> api;
  base::ThreadExecutor executor;
  std::unique_ptr<transport::HttpServer> server;
  std::string root;
};

World* MakeWorld() {
  auto* w = new World();  // lives for the process: the listener's threads outlive any input
  store::BackendOptions options;
  options.sqlite_path = w->dir.File("contextd.db");
  auto backend = store::OpenBackend(options);
  if (!backend.ok()) std::abort();
  w->backend = std::move(*backend);
  auto b = w->backend->OpenBranchStore();
  auto t = w->backend->OpenTrailStore();
  if (!b.ok() || !t.ok()) std::abort();
  w->branches = std::move(*b);
  w->store = std::move(*t);
  w->trail = std::make_unique<trail::Trail>(*w->store, w->clock);
  w->api = std::make_unique<viewer::TrailApi>(*w->trail, *w->store, *w->branches);
  w->executor.RunSync([w] {
    trail::SessionRef s{"local", "proj", "s1"};
    auto root = w->trail->RootScope(s);
    if (!root.ok()) std::abort();
    w->root = *root;
    if (!w->trail->OnBranchCreated(s, "br_f", "", "fuzz", "go", 5).ok()) std::abort();
    if (!w->trail->RecordToolCall(s, "br_f", "fs__read", "{}", "text", 2, 10, false).ok()) {
      std::abort();
    }
  });
  transport::HttpServerOptions o;
  viewer::UiOptions ui;
  ui.poll_interval = std::chrono::milliseconds(50);
  o.routes = viewer::UiRoutes(*w->api, w->executor, ui);
  auto s = transport::HttpServer::Start(
      std::move(o), std::make_shared<transport::testing::EchoSessionFactory>(true));
  if (!s.ok()) std::abort();
  w->server = std::move(*s);
  return w;
}

std::string Expand(std::string_view in, const std::string& root) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') continue;  // lines end at '\n' only: the request stays complete
    if (in[i] == '@' && i + 1 < in.size() && (in[i + 1] == 'R' || in[i + 1] == 'B')) {
      out += in[i + 1] == 'R' ? root : std::string("br_f");
      ++i;
    } else {
      out += in[i];
    }
  }
  return out;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

void CheckJson(std::string_view text) {
  if (!base::IsValidUtf8(text)) std::abort();
  if (nlohmann::json::parse(text, nullptr, false).is_discarded()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = MakeWorld();
  const std::string port = std::to_string(world->server->port());
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t nl = bytes.find('\n');
  std::string target = Expand(bytes.substr(0, nl), world->root);
  if (target.empty() || target.find(' ') != std::string::npos) target = "/api/v1/" + target;
  std::string headers;
  while (nl != std::string_view::npos) {
    size_t next = bytes.find('\n', nl + 1);
    std::string line = Expand(bytes.substr(nl + 1, next - nl - 1), world->root);
    nl = next;
    // A declared body the request does not carry would only make the listener wait.
    if (StartsWithIgnoreCase(line, "content-length") ||
        StartsWithIgnoreCase(line, "transfer-encoding") || line.empty()) {
      continue;
    }
    headers += line + "\r\n";
  }
  RawClient c(world->server->port());
  if (!c.connected()) std::abort();
  c.Send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n" + headers + "\r\n");
  std::string path = target.substr(0, target.find('?'));
  if (path == "/api/v1/sessions/" + world->root + "/stream") {
    Response head = c.ReadHead();
    if (head.ok && head.header("content-type") == "text/event-stream") {
      for (int i = 0; i < 3; ++i) {
        std::string event = c.ReadEvent();
        size_t at = event.find("data: ");
        if (at != std::string::npos) {
          CheckJson(event.substr(at + 6, event.find('\n', at) - at - 6));
          break;
        }
      }
    }
  } else {
    Response r = c.ReadResponse();
    if (r.ok && r.header("content-type") == "application/json") CheckJson(r.body);
  }
  c.Close();
  // The server goes on.
  RawClient health(world->server->port());
  health.Send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n\r\n");
  if (health.ReadResponse().status != 200) std::abort();
  return 0;
}
