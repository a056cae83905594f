#include "model/usage_parser.h"

#include <algorithm>

#include "nlohmann/json.hpp"

namespace contextd::model {
namespace {

void Take(const nlohmann::json& usage, std::string_view key, int64_t& into) {
  auto it = usage.find(std::string(key));
  if (it != usage.end() && it->is_number_integer()) into = it->get<int64_t>();
}

}  // namespace

UsageParser::UsageParser(bool event_stream, const UsageFields& fields)
    : event_stream_(event_stream),
      fields_(fields),
      on_event_([this](std::string data) { Event(data); }) {}

void UsageParser::Feed(std::string_view bytes) {
  if (event_stream_) {
    events_.Feed(bytes, on_event_);
    return;
  }
  if (overflow_) return;
  if (pending_.size() + bytes.size() > kMaxKept) {
    overflow_ = true;
    pending_.clear();
    return;
  }
  pending_.append(bytes);
}

void UsageParser::Finish() {
  if (event_stream_) {
    events_.Finish(on_event_);
    return;
  }
  if (!overflow_) Json(pending_);
  pending_.clear();
}

void UsageParser::Event(std::string_view data) {
  // Most events (text deltas) carry no usage: they are not parsed.
  if (data.find("\"usage\"") == std::string_view::npos) return;
  Json(data);
}

void UsageParser::Json(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return;
  const nlohmann::json* usage = nullptr;
  if (auto it = j.find("usage"); it != j.end() && it->is_object()) {
    usage = &*it;
  } else if (!fields_.holder.empty()) {
    // Messages: message_start's `message`; Responses: a response event's `response`.
    if (auto m = j.find(std::string(fields_.holder)); m != j.end() && m->is_object()) {
      if (auto u = m->find("usage"); u != m->end() && u->is_object()) usage = &*u;
    }
  }
  if (usage == nullptr) return;
  usage_.seen = true;
  if (!fields_.cached_details.empty()) {
    int64_t prompt = 0;
    int64_t cached = 0;
    Take(*usage, fields_.input, prompt);
    Take(*usage, fields_.output, usage_.output_tokens);
    if (auto details = usage->find(std::string(fields_.cached_details));
        details != usage->end() && details->is_object()) {
      Take(*details, "cached_tokens", cached);
    }
    // Counts a peer sent: kept within [0, prompt] so that the difference cannot overflow.
    prompt = std::max<int64_t>(0, prompt);
    cached = std::clamp<int64_t>(cached, 0, prompt);
    usage_.cache_read_input_tokens = cached;
    usage_.input_tokens = prompt - cached;
    return;
  }
  Take(*usage, fields_.input, usage_.input_tokens);
  Take(*usage, "cache_read_input_tokens", usage_.cache_read_input_tokens);
  Take(*usage, "cache_creation_input_tokens", usage_.cache_creation_input_tokens);
  Take(*usage, fields_.output, usage_.output_tokens);
}

}  // namespace contextd::model
