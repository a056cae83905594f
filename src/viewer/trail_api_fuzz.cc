// Fuzz target for the trail API's request parsing: the input is a path (after "/api/v1/") and a
// query string, split at the first '\n', fed to TrailApi::Get over a real SQLite store in a temp
// dir that holds one session with a folded branch. "@R" in the input stands for that session's
// root id and "@B" for the branch's scope id, so that inputs reach real data. Whatever the bytes,
// the answer must be a known status with a body that is valid UTF-8 JSON (an object); nothing may
// throw or crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/foreign_text.h"
#include "nlohmann/json.hpp"
#include "store/backend.h"
#include "store/test_util.h"
#include "viewer/trail_api.h"

namespace {

using namespace contextd;  // NOLINT: a fuzz target's one entry point

struct World {
  store::TempDir dir;
  base::FakeClock clock;
  std::unique_ptr<store::Backend> backend;
  std::unique_ptr<folding::BranchStore> branches;
  std::unique_ptr<trail::TrailStore> store;
  std::unique_ptr<trail::Trail> trail;
  std::unique_ptr<viewer::TrailApi> api;
  std::string root;
};

World* MakeWorld() {
  auto* w = new World();  // lives for the process: the store's threads outlive any input
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
  trail::SessionRef s{"local", "proj", "s1"};
  auto root = w->trail->RootScope(s);
  if (!root.ok()) std::abort();
  w->root = *root;
  folding::Branch br;
  br.id = "br_f";
  br.session = folding::SessionKey{"local", "proj", "s1"};
  br.description = "fuzz \xE2\x9C\x93";
  br.status = folding::BranchStatus::kCompleted;
  br.budget_allocated = 1000;
  br.tokens_used = 10;
  folding::BranchWrite write;
  write.inserts = {br};
  if (!w->branches->Commit(write).ok()) std::abort();
  if (!w->trail->OnBranchCreated(s, br.id, "", br.description, "go", 5).ok()) std::abort();
  if (!w->trail->RecordToolCall(s, br.id, "fs__read", "{}", "text", 2, 10, false).ok()) {
    std::abort();
  }
  if (!w->trail->OnBranchFolded(br.id, "summary", 4, false, "").ok()) std::abort();
  return w;
}

std::string Expand(std::string_view in, const std::string& root) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '@' && i + 1 < in.size() && (in[i + 1] == 'R' || in[i + 1] == 'B')) {
      out += in[i + 1] == 'R' ? root : std::string("br_f");
      ++i;
    } else {
      out += in[i];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = MakeWorld();
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  size_t nl = bytes.find('\n');
  std::string path = "/api/v1/" + Expand(bytes.substr(0, nl), world->root);
  std::string query = nl == std::string_view::npos ? "" : Expand(bytes.substr(nl + 1), world->root);
  viewer::ApiResponse r = world->api->Get("local", path, query);
  if (r.status != 200 && r.status != 400 && r.status != 404 && r.status != 500) std::abort();
  if (!base::IsValidUtf8(r.body)) std::abort();
  nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
  if (!body.is_object()) std::abort();
  if (r.status != 200 && !body.contains("error")) std::abort();
  return 0;
}
