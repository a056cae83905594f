// What `contextd memory show ID` prints: the item, its history, and where it was injected (a
// branch, or a model conversation: actor "conversation:<id>") with the feedback and outcome
// entries that followed each injection. Pure functions over what the store returned;
// thread-safe.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memory/memory_item.h"
#include "nlohmann/json.hpp"

namespace contextd::cli {

// One injection of an item and what is credited to it.
struct InjectionView {
  memory::HistoryEntry injection;
  std::string into_kind;  // "conversation" (actor "conversation:<id>") or "branch"
  std::string into_id;    // the conversation or branch id
  // The feedback and outcome entries credited to this injection, in history order, each with
  // how: "actor" (the entry's actor is the injection's) or "time" (no injection had its actor:
  // it is credited to the latest injection before it).
  std::vector<std::pair<memory::HistoryEntry, std::string>> followed_by;
};

// The injections of `history` (any order; read in seq order), oldest first. A feedback or
// outcome entry goes to the latest earlier injection with the same actor, else to the latest
// earlier injection; one before any injection goes to none.
std::vector<InjectionView> InjectionsOf(const std::vector<memory::HistoryEntry>& history);

// One history entry as JSON: {seq, action, actor, detail, at_ms}.
nlohmann::json HistoryEntryJson(const memory::HistoryEntry& e);

// The injections as JSON: [{seq, at_ms, actor, detail, into: {kind, id}, followed_by: [{seq,
// action, actor, detail, at_ms, matched_by}]}].
nlohmann::json InjectionsJson(const std::vector<InjectionView>& injections);

// The one-line summary `memory list` and `search` print.
std::string MemoryLine(const memory::MemoryItem& m);

// The text of `memory show`: the summary line, the texts, the history and the injections.
void PrintMemoryShow(const memory::MemoryItem& m, const std::vector<memory::HistoryEntry>& history,
                     std::ostream& out);

}  // namespace contextd::cli
