#include "cli/memory_cli.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include "base/clock.h"
#include "base/foreign_text.h"
#include "base/status_macros.h"
#include "base/str_cat.h"
#include "cli/memory_show.h"
#include "cli/store_cli.h"
#include "memory/memory_bank.h"
#include "nlohmann/json.hpp"
#include "scrub/private_spans.h"
#include "scrub/rule_scrubber.h"
#include "server/config.h"

namespace contextd::cli {
namespace {

using Json = nlohmann::json;

// A JSONL line longer than this is refused (an item's texts are at most a few KB).
constexpr size_t kMaxLineBytes = 1 << 20;

struct Bank {
  std::unique_ptr<memory::MemoryStore> store;
  std::shared_ptr<const scrub::RuleScrubber> scrubber;
  std::unique_ptr<memory::MemoryBank> bank;
};

// The configured store: PostgreSQL (never migrated here: `contextd migrate` first), or the
// SQLite file of the data dir (created by an import).
absl::StatusOr<std::unique_ptr<memory::MemoryStore>> OpenStore(const MemoryCommand& command,
                                                               bool create) {
  ASSIGN_OR_RETURN(std::unique_ptr<store::Backend> backend,
                   OpenCommandBackend(command.store, command.data_dir, create));
  return backend->OpenMemoryStore();
}

absl::StatusOr<Bank> OpenBank(const MemoryCommand& command, bool create) {
  Bank b;
  ASSIGN_OR_RETURN(b.store, OpenStore(command, create));
  scrub::ScrubConfig scrub_config;
  scrub_config.rules_file = command.rules_file;
  ASSIGN_OR_RETURN(b.scrubber, scrub::BuildScrubber(scrub_config));
  memory::MemoryBank::Parts parts;
  parts.store = b.store.get();
  parts.clock = &base::RealClock::Get();
  // As the server's: private spans withheld, then secrets scrubbed (an imported bank too).
  parts.sanitize = [scrubber = b.scrubber](std::string_view t) {
    return scrubber->Scrub(scrub::WithholdPrivate(t));
  };
  // Only retrieval for a branch counts tokens, which the CLI never does.
  parts.count_tokens = [](std::string_view t) { return static_cast<int64_t>(t.size() / 4); };
  memory::BankOptions options;
  options.org_across_tenants = command.org_across_tenants;
  b.bank = std::make_unique<memory::MemoryBank>(std::move(parts), options);
  return b;
}

Json ToJson(const memory::MemoryItem& m) {
  Json j = Json::object();
  j["id"] = m.id;
  j["tenant"] = m.tenant;
  j["project"] = m.project;
  j["scope"] = memory::ScopeName(m.scope);
  j["status"] = memory::StatusName(m.status);
  j["outcome"] = memory::OutcomeName(m.outcome);
  j["title"] = m.title;
  j["description"] = m.description;
  j["content"] = m.content;
  j["tags"] = m.tags;
  j["source"] = Json{{"branch_id", m.source.branch_id},
                     {"description", m.source.description},
                     {"prompt", m.source.prompt}};
  j["origin"] = m.origin;
  j["created_at_ms"] = m.created_at_ms;
  j["updated_at_ms"] = m.updated_at_ms;
  j["use_count"] = m.use_count;
  j["helpful_count"] = m.helpful_count;
  j["unhelpful_count"] = m.unhelpful_count;
  j["success_count"] = m.success_count;
  j["failure_count"] = m.failure_count;
  j["merged_into"] = m.merged_into;
  j["confidence"] = m.Confidence();
  return j;
}

// One exported line back into an item. InvalidArgument naming the field.
absl::StatusOr<memory::MemoryItem> FromJson(const Json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("not a JSON object");
  memory::MemoryItem m;
  auto text = [&](const char* key, std::string* out, bool required) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      return required ? absl::InvalidArgumentError(base::StrCat(key, ": missing"))
                      : absl::OkStatus();
    }
    if (!it->is_string()) return absl::InvalidArgumentError(base::StrCat(key, ": not a string"));
    *out = it->get<std::string>();
    return absl::OkStatus();
  };
  auto count = [&](const char* key, int64_t* out) -> absl::Status {
    auto it = j.find(key);
    if (it == j.end()) return absl::OkStatus();
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      return absl::InvalidArgumentError(base::StrCat(key, ": not a count"));
    }
    *out = it->get<int64_t>();
    return absl::OkStatus();
  };
  std::string scope = "project", status = "active", outcome = "success";
  RETURN_IF_ERROR(text("id", &m.id, true));
  RETURN_IF_ERROR(text("tenant", &m.tenant, true));
  RETURN_IF_ERROR(text("project", &m.project, true));
  RETURN_IF_ERROR(text("title", &m.title, true));
  RETURN_IF_ERROR(text("description", &m.description, true));
  RETURN_IF_ERROR(text("content", &m.content, true));
  RETURN_IF_ERROR(text("scope", &scope, false));
  RETURN_IF_ERROR(text("status", &status, false));
  RETURN_IF_ERROR(text("outcome", &outcome, false));
  RETURN_IF_ERROR(text("origin", &m.origin, false));
  RETURN_IF_ERROR(text("merged_into", &m.merged_into, false));
  ASSIGN_OR_RETURN(m.scope, memory::ParseScope(scope));
  ASSIGN_OR_RETURN(m.status, memory::ParseStatus(status));
  ASSIGN_OR_RETURN(m.outcome, memory::ParseOutcome(outcome));
  if (auto tags = j.find("tags"); tags != j.end()) {
    if (!tags->is_array()) return absl::InvalidArgumentError("tags: not an array");
    for (const Json& t : *tags) {
      if (!t.is_string()) return absl::InvalidArgumentError("tags: not all strings");
      m.tags.push_back(t.get<std::string>());
    }
  }
  if (auto src = j.find("source"); src != j.end() && !src->is_null()) {
    if (!src->is_object()) return absl::InvalidArgumentError("source: not an object");
    for (auto [key, out] : {std::pair<const char*, std::string*>{"branch_id", &m.source.branch_id},
                            {"description", &m.source.description},
                            {"prompt", &m.source.prompt}}) {
      auto it = src->find(key);
      if (it == src->end() || it->is_null()) continue;
      if (!it->is_string()) {
        return absl::InvalidArgumentError(base::StrCat("source.", key, ": not a string"));
      }
      *out = it->get<std::string>();
    }
  }
  RETURN_IF_ERROR(count("created_at_ms", &m.created_at_ms));
  RETURN_IF_ERROR(count("use_count", &m.use_count));
  RETURN_IF_ERROR(count("helpful_count", &m.helpful_count));
  RETURN_IF_ERROR(count("unhelpful_count", &m.unhelpful_count));
  RETURN_IF_ERROR(count("success_count", &m.success_count));
  RETURN_IF_ERROR(count("failure_count", &m.failure_count));
  return m;
}

int Import(const MemoryCommand& c, memory::MemoryBank& bank, std::istream& in, std::ostream& out,
           std::ostream& err) {
  std::ifstream file;
  std::istream* src = &in;
  if (c.arg != "-") {
    file.open(c.arg);
    if (!file) {
      err << "contextd: cannot read " << c.arg << "\n";
      return 2;
    }
    src = &file;
  }
  int64_t imported = 0, refused = 0, number = 0;
  std::string line;
  // Reads one line, keeping at most kMaxLineBytes of it (the rest is skipped, never held).
  auto next_line = [&](bool* too_long) -> bool {
    line.clear();
    *too_long = false;
    std::streambuf* buf = src->rdbuf();
    int ch;
    bool any = false;
    while ((ch = buf->sbumpc()) != std::char_traits<char>::eof()) {
      any = true;
      if (ch == '\n') return true;
      if (line.size() < kMaxLineBytes) {
        line.push_back(static_cast<char>(ch));
      } else {
        *too_long = true;
      }
    }
    return any;
  };
  bool too_long = false;
  while (next_line(&too_long)) {
    ++number;
    if (!too_long && line.find_first_not_of(" \t\r") == std::string::npos) continue;
    absl::Status st;
    if (too_long) {
      st = absl::InvalidArgumentError(base::StrCat("line longer than ", kMaxLineBytes, " bytes"));
    } else {
      Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) {
        st = absl::InvalidArgumentError("not JSON");
      } else {
        auto item = FromJson(j);
        st = item.ok() ? bank.Import(*std::move(item), "cli") : item.status();
      }
    }
    if (st.ok()) {
      ++imported;
    } else {
      ++refused;
      err << "line " << number << ": " << st.message() << "\n";
    }
  }
  out << "imported " << imported << ", refused " << refused << "\n";
  return refused > 0 ? 1 : 0;
}

}  // namespace

int RunMemoryCommand(const MemoryCommand& c, std::istream& in, std::ostream& out,
                     std::ostream& err) {
  auto opened = OpenBank(c, /*create=*/c.command == "import");
  if (!opened.ok()) {
    err << "contextd: " << opened.status().message() << "\n";
    return 2;
  }
  memory::MemoryBank& bank = *opened->bank;
  memory::MemoryStore& store = *opened->store;
  auto fail = [&err](const absl::Status& s) {
    err << "contextd: " << s.message() << "\n";
    return 2;
  };
  memory::Caller caller{c.tenant, c.project, "cli"};
  if (c.command == "list" || c.command == "export") {
    memory::ListFilter filter;
    if (!c.all_tenants) {
      filter.tenant = c.tenant;
      filter.project = c.project;
    }
    if (!c.status.empty()) {
      auto status = memory::ParseStatus(c.status);
      if (!status.ok()) return fail(status.status());
      filter.status = *status;
    }
    const bool is_export = c.command == "export";
    int64_t left = is_export ? INT64_MAX : c.limit;
    filter.limit = 500;
    while (left > 0) {
      filter.limit = static_cast<int>(std::min<int64_t>(500, left));
      auto page = store.List(filter);
      if (!page.ok()) return fail(page.status());
      for (const memory::MemoryItem& m : *page) {
        out << (is_export ? base::DumpJson(ToJson(m)) : MemoryLine(m)) << "\n";
      }
      left -= static_cast<int64_t>(page->size());
      if (static_cast<int>(page->size()) < filter.limit) break;
      filter.after_id = page->back().id;
    }
    return 0;
  }
  if (c.command == "show") {
    auto item = store.Get(c.arg);
    if (!item.ok()) return fail(item.status());
    if (!item->has_value())
      return fail(absl::NotFoundError(base::StrCat("memory ", c.arg, " not found")));
    auto history = store.History(c.arg);
    if (!history.ok()) return fail(history.status());
    if (!c.json) {
      PrintMemoryShow(**item, *history, out);
      return 0;
    }
    Json j = ToJson(**item);
    Json h = Json::array();
    for (const memory::HistoryEntry& e : *history) h.push_back(HistoryEntryJson(e));
    j["history"] = std::move(h);
    j["injections"] = InjectionsJson(InjectionsOf(*history));
    out << base::DumpJson(j, 2) << "\n";
    return 0;
  }
  if (c.command == "search") {
    auto hits = bank.Search(caller, c.arg, static_cast<int>(std::clamp<int64_t>(c.limit, 1, 50)),
                            std::nullopt);
    if (!hits.ok()) return fail(hits.status());
    for (const memory::SearchHit& h : *hits) out << MemoryLine(h.item) << "\n";
    if (hits->empty()) out << "no memories match\n";
    return 0;
  }
  if (c.command == "retire") {
    // The CLI acts as the item's own tenant and project: it is the operator's tool.
    auto item = store.Get(c.arg);
    if (!item.ok()) return fail(item.status());
    if (!item->has_value())
      return fail(absl::NotFoundError(base::StrCat("memory ", c.arg, " not found")));
    memory::Caller owner{(*item)->tenant, (*item)->project, "cli"};
    auto retired =
        bank.Retire(owner, c.arg, c.reason.empty() ? "retired by the operator" : c.reason);
    if (!retired.ok()) return fail(retired.status());
    out << MemoryLine(*retired) << "\n";
    return 0;
  }
  if (c.command == "import") return Import(c, bank, in, out, err);
  return fail(absl::InvalidArgumentError(base::StrCat("unknown memory command ", c.command)));
}

}  // namespace contextd::cli
