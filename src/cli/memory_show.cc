#include "cli/memory_show.h"

#include <time.h>

#include <algorithm>
#include <cstdio>

#include "base/str_cat.h"

namespace contextd::cli {
namespace {

using Json = nlohmann::json;

constexpr char kConversationActor[] = "conversation:";

bool IsSignal(const memory::HistoryEntry& e) {
  return e.action == "feedback" || e.action == "outcome";
}

InjectionView ViewOf(const memory::HistoryEntry& e) {
  InjectionView v;
  v.injection = e;
  const std::string prefix = kConversationActor;
  if (e.actor.rfind(prefix, 0) == 0) {
    v.into_kind = "conversation";
    v.into_id = e.actor.substr(prefix.size());
  } else {
    v.into_kind = "branch";
    v.into_id = e.actor;
  }
  return v;
}

// "2026-12-07T05:50:40.123Z"
std::string Utc(int64_t at_ms) {
  time_t secs = static_cast<time_t>(at_ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(at_ms % 1000));
  return buf;
}

void PrintInjections(const std::vector<InjectionView>& injections, std::ostream& out) {
  out << "injections: " << (injections.empty() ? "none" : base::StrCat(injections.size())) << "\n";
  for (const InjectionView& v : injections) {
    out << "  " << Utc(v.injection.at_ms) << "  into " << v.into_kind << " " << v.into_id << "\n";
    if (v.followed_by.empty()) out << "    nothing followed\n";
    for (const auto& [e, how] : v.followed_by) {
      out << "    " << Utc(e.at_ms) << "  " << e.action << ": " << e.detail << "  (by " << e.actor
          << (how == "actor" ? ")" : "; credited by time)") << "\n";
    }
  }
}

}  // namespace

std::vector<InjectionView> InjectionsOf(const std::vector<memory::HistoryEntry>& history) {
  std::vector<memory::HistoryEntry> sorted = history;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.seq < b.seq; });
  std::vector<InjectionView> views;
  for (const memory::HistoryEntry& e : sorted) {
    if (e.action == "injected") {
      views.push_back(ViewOf(e));
      continue;
    }
    if (!IsSignal(e) || views.empty()) continue;
    auto same_actor = std::find_if(views.rbegin(), views.rend(), [&](const InjectionView& v) {
      return v.injection.actor == e.actor;
    });
    if (same_actor != views.rend()) {
      same_actor->followed_by.emplace_back(e, "actor");
    } else {
      views.back().followed_by.emplace_back(e, "time");
    }
  }
  return views;
}

Json HistoryEntryJson(const memory::HistoryEntry& e) {
  return Json{{"seq", e.seq},
              {"action", e.action},
              {"actor", e.actor},
              {"detail", e.detail},
              {"at_ms", e.at_ms}};
}

Json InjectionsJson(const std::vector<InjectionView>& injections) {
  Json out = Json::array();
  for (const InjectionView& v : injections) {
    Json followed = Json::array();
    for (const auto& [e, how] : v.followed_by) {
      Json f = HistoryEntryJson(e);
      f["matched_by"] = how;
      followed.push_back(std::move(f));
    }
    out.push_back(Json{{"seq", v.injection.seq},
                       {"at_ms", v.injection.at_ms},
                       {"actor", v.injection.actor},
                       {"detail", v.injection.detail},
                       {"into", Json{{"kind", v.into_kind}, {"id", v.into_id}}},
                       {"followed_by", std::move(followed)}});
  }
  return out;
}

std::string MemoryLine(const memory::MemoryItem& m) {
  char confidence[16];
  std::snprintf(confidence, sizeof confidence, "%.2f", m.Confidence());
  return base::StrCat(m.id, "  ", memory::StatusName(m.status), "  ",
                      memory::OutcomeName(m.outcome), "  ", memory::ScopeName(m.scope), "  ",
                      m.tenant, "/", m.project, "  conf ", confidence, "  uses ", m.use_count, "  ",
                      m.title);
}

void PrintMemoryShow(const memory::MemoryItem& m, const std::vector<memory::HistoryEntry>& history,
                     std::ostream& out) {
  out << MemoryLine(m) << "\n";
  out << "description: " << m.description << "\n";
  out << "content: " << m.content << "\n";
  if (!m.tags.empty()) {
    out << "tags:";
    for (const std::string& t : m.tags) out << " " << t;
    out << "\n";
  }
  if (!m.merged_into.empty()) out << "merged into: " << m.merged_into << "\n";
  out << "history:\n";
  for (const memory::HistoryEntry& e : history) {
    out << "  " << Utc(e.at_ms) << "  " << e.action << "  " << e.actor
        << (e.detail.empty() ? "" : "  " + e.detail) << "\n";
  }
  PrintInjections(InjectionsOf(history), out);
}

}  // namespace contextd::cli
