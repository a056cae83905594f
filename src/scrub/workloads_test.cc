// Regression test on real agent tool output: every tool result (and every assistant shell command)
// of the recorded runs in ../shared/workloads/*.jsonl (see its README.md) is scanned with the
// default rules, and must have no finding: these runs hold no secrets, so any finding is a false
// redaction of code, test output or a command. Skipped when the workloads are not present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scrub/rule_scrubber.h"

namespace contextd::scrub {
namespace {

namespace fs = std::filesystem;

// One text to scan and where it comes from ("file:line run-id step N").
struct Sample {
  std::string where;
  std::string text;
};

struct Workloads {
  std::vector<Sample> tool_results;
  std::vector<Sample> commands;
  std::string skip_reason;  // non-empty: nothing loaded
};

const Workloads& LoadWorkloads() {
  static const Workloads* w = [] {
    auto* out = new Workloads;
    const char* src = std::getenv("CONTEXTD_SOURCE_DIR");
    if (src == nullptr) {
      out->skip_reason = "CONTEXTD_SOURCE_DIR not set";
      return out;
    }
    const fs::path dir = fs::path(src) / ".." / "shared" / "workloads";
    std::error_code ec;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".jsonl") files.push_back(it->path());
    }
    if (files.empty()) {
      out->skip_reason = dir.string() + ": no *.jsonl workloads";
      return out;
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        if (line.empty()) continue;
        auto run = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (run.is_discarded() || !run.contains("steps") || !run["steps"].is_array()) {
          ADD_FAILURE() << f << ":" << n << ": not a run object";
          continue;
        }
        const std::string id = run.value("id", std::string("?"));
        const auto& steps = run["steps"];
        for (size_t i = 0; i < steps.size(); ++i) {
          const auto& step = steps[i];
          const std::string where = f.filename().string() + ":" + std::to_string(n) + " " + id +
                                    " step " + std::to_string(i);
          if (step.value("role", "") == "tool" && step.contains("content") &&
              step["content"].is_string()) {
            out->tool_results.push_back({where, step["content"].get<std::string>()});
          }
          if (step.value("role", "") == "assistant" && step.contains("args") &&
              step["args"].is_object() && step["args"].contains("command") &&
              step["args"]["command"].is_string()) {
            out->commands.push_back({where, step["args"]["command"].get<std::string>()});
          }
        }
      }
    }
    return out;
  }();
  return *w;
}

const RuleScrubber& Defaults() {
  static const std::shared_ptr<const RuleScrubber> s = [] {
    auto b = BuildScrubber(ScrubConfig{});
    EXPECT_TRUE(b.ok()) << b.status();
    return *b;
  }();
  return *s;
}

// Reports every finding in `samples` (rule id, the secret and some context) and checks that
// scrubbing leaves each text unchanged.
void ExpectNoFindings(const std::vector<Sample>& samples) {
  size_t findings = 0;
  for (const Sample& s : samples) {
    const std::vector<Finding> found = Defaults().Scan(s.text);
    findings += found.size();
    for (const Finding& f : found) {
      const size_t from = f.match_start > 60 ? f.match_start - 60 : 0;
      const size_t to = std::min(s.text.size(), f.match_end + 60);
      ADD_FAILURE() << s.where << " line " << f.line << ": " << f.rule_id << " redacts '"
                    << s.text.substr(f.start, f.end - f.start) << "' in:\n"
                    << s.text.substr(from, to - from);
    }
    if (found.empty()) {
      EXPECT_EQ(Defaults().Scrub(s.text), s.text) << s.where;
    }
  }
  EXPECT_EQ(findings, 0u);
}

TEST(ScrubWorkloadsTest, ToolResultsHaveNoFindings) {
  const Workloads& w = LoadWorkloads();
  if (!w.skip_reason.empty()) GTEST_SKIP() << w.skip_reason;
  EXPECT_GT(w.tool_results.size(), 0u);
  ExpectNoFindings(w.tool_results);
}

TEST(ScrubWorkloadsTest, AssistantCommandsHaveNoFindings) {
  const Workloads& w = LoadWorkloads();
  if (!w.skip_reason.empty()) GTEST_SKIP() << w.skip_reason;
  EXPECT_GT(w.commands.size(), 0u);
  ExpectNoFindings(w.commands);
}

}  // namespace
}  // namespace contextd::scrub
