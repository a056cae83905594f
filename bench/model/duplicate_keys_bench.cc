// The cost of one reading of every JSON document (decision 0029) on a real request: a Messages
// body of several MB built from the recorded trajectories (../shared/workloads: every run's task,
// commands and tool outputs as one long conversation, as a long session resends it), parsed by
// the span parser with the duplicate-key check in its walk (as AnthropicRequest::Parse calls it),
// and scanned by the separate linear detector (base::FindDuplicateJsonKey, used for MCP payloads).
// Reports MB/s (bytes_per_second). Not part of ctest. Run:
//   build/release/bench/model/duplicate_keys_bench [--benchmark_repetitions=5]
// CONTEXTD_WORKLOADS overrides the workloads directory.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/json_keys.h"
#include "model/anthropic_request.h"
#include "model/raw_json.h"
#include "nlohmann/json.hpp"

namespace {

using Json = nlohmann::json;

std::string WorkloadsDir() {
  if (const char* env = std::getenv("CONTEXTD_WORKLOADS"); env != nullptr && *env != '\0') {
    return env;
  }
  return std::string(CONTEXTD_SOURCE_DIR) + "/../shared/workloads";
}

// A Messages body: one conversation through every step of every recorded run.
std::string BuildBody() {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(WorkloadsDir(), ec)) {
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  Json messages = Json::array();
  int call = 0;
  auto user_blocks = [&]() -> Json& {
    if (messages.empty() || messages.back()["role"] != "user") {
      messages.push_back({{"role", "user"}, {"content", Json::array()}});
    }
    return messages.back()["content"];
  };
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      Json run = Json::parse(line, nullptr, false);
      if (!run.is_object()) continue;
      user_blocks().push_back({{"type", "text"}, {"text", run.value("task", "")}});
      for (const Json& step : run.value("steps", Json::array())) {
        const std::string text = step.value("content", "");
        if (step.value("role", "") == "assistant") {
          Json content = Json::array({{{"type", "text"}, {"text", text}}});
          content.push_back({{"type", "tool_use"},
                             {"id", "toolu_" + std::to_string(++call)},
                             {"name", "bash"},
                             {"input", step.value("args", Json::object())}});
          messages.push_back({{"role", "assistant"}, {"content", std::move(content)}});
        } else {
          user_blocks().push_back({{"type", "tool_result"},
                                   {"tool_use_id", "toolu_" + std::to_string(call)},
                                   {"content", Json::array({{{"type", "text"}, {"text", text}}})}});
        }
      }
    }
  }
  Json body = {{"model", "claude-sonnet-4-5"},
               {"max_tokens", 32000},
               {"system", "You are a software engineer working in a repository."},
               {"tools", Json::array({{{"name", "bash"},
                                       {"description", "Run a shell command."},
                                       {"input_schema",
                                        {{"type", "object"},
                                         {"properties", {{"command", {{"type", "string"}}}}},
                                         {"required", Json::array({"command"})}}}}})},
               {"messages", std::move(messages)},
               {"stream", true}};
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

const std::string& Body() {
  static const std::string body = [] {
    std::string b = BuildBody();
    std::fprintf(stderr, "duplicate_keys_bench: a Messages body of %.2f MB\n",
                 static_cast<double>(b.size()) / 1e6);
    return b;
  }();
  return body;
}

// AnthropicRequest::Parse's call: messages navigated deeply, the rest validated and spanned.
void BM_SpanParseWithCheck(benchmark::State& state) {
  const std::string& body = Body();
  if (body.size() < 1000) {
    state.SkipWithError("no workloads");
    return;
  }
  static const contextd::model::RecordPolicy policy = [](int depth, std::string_view key,
                                                         int limit) {
    if (depth == 0) return key == "\"messages\"" ? limit : 3;
    if (depth == 4 && key != "\"content\"") return 5;
    return limit;
  };
  for (auto _ : state) {
    auto root = contextd::model::ParseRawJson(body, 6, 256, &policy);
    if (!root.ok()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(root);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_SpanParseWithCheck)->Unit(benchmark::kMillisecond);

// The whole of the request's parse (span parse with the check, then the transcript index), as
// the gateway runs it for a conversation it has not seen (the copy of the body is not timed).
void BM_AnthropicRequestParse(benchmark::State& state) {
  const std::string& body = Body();
  for (auto _ : state) {
    state.PauseTiming();
    std::string copy = body;
    state.ResumeTiming();
    auto request = contextd::model::AnthropicRequest::Parse(std::move(copy));
    if (!request.ok()) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(request);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_AnthropicRequestParse)->Unit(benchmark::kMillisecond);

// The separate linear scan over the same bytes.
void BM_SeparateScan(benchmark::State& state) {
  const std::string& body = Body();
  for (auto _ : state) {
    auto dup = contextd::base::FindDuplicateJsonKey(body);
    if (dup) state.SkipWithError("unexpected duplicate");
    benchmark::DoNotOptimize(dup);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_SeparateScan)->Unit(benchmark::kMillisecond);

// nlohmann's DOM parse of the same bytes, for scale.
void BM_NlohmannParse(benchmark::State& state) {
  const std::string& body = Body();
  for (auto _ : state) {
    Json j = Json::parse(body, nullptr, false);
    benchmark::DoNotOptimize(j);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_NlohmannParse)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
