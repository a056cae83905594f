// scrub_eval: runs contextd's scrubber (default rules, or --rules FILE) over the corpus written by
// tests/scrub/gen_corpus.py: findings for every labelled file, then single-thread throughput of
// Scrub() on clean/ and dense/. Output JSON is scored by score.py (see run.sh).
// With --workloads DIR, also the throughput of Scrub() on every tool result of the recorded agent
// runs in DIR/*.jsonl (one call per tool result, as the server makes them) and the findings there
// (real tool output without secrets: every finding is a false positive).
// Usage: scrub_eval CORPUS_DIR OUT_JSON [--rules FILE [--with-defaults]] [--min-seconds S]
//                   [--workloads DIR]
// (--rules reads FILE as `contextd scrub --rules` does: alone unless it extends the built-in rules
// or --with-defaults is given.)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "scrub/rule_scrubber.h"

namespace fs = std::filesystem;
using contextd::scrub::RuleScrubber;

static std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

static double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

static std::vector<std::string> ReadDir(const fs::path& dir) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir)) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> texts;
  for (const auto& p : paths) texts.push_back(ReadFile(p));
  return texts;
}

// The "content" of every step with role "tool" in DIR/*.jsonl (see ../shared/workloads/README.md).
static std::vector<std::string> ReadToolResults(const fs::path& dir) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".jsonl") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> texts;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::string line;
    while (std::getline(in, line)) {
      auto run = nlohmann::json::parse(line, nullptr, false);
      if (run.is_discarded() || !run.contains("steps") || !run["steps"].is_array()) continue;
      for (const auto& step : run["steps"]) {
        if (step.value("role", "") == "tool" && step.contains("content") &&
            step["content"].is_string()) {
          texts.push_back(step["content"].get<std::string>());
        }
      }
    }
  }
  return texts;
}

static nlohmann::json Throughput(const RuleScrubber& s, const std::vector<std::string>& texts,
                                 double min_seconds) {
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  // One untimed round warms RE2's lazily built DFAs (a long-running server keeps them warm).
  for (const auto& t : texts) s.Scrub(t);
  size_t total = 0, out_bytes = 0;
  int rounds = 0;
  auto t0 = std::chrono::steady_clock::now();
  double c0 = ThreadCpuSeconds();
  double secs = 0;
  do {
    for (const auto& t : texts) out_bytes += s.Scrub(t).size();
    total += bytes;
    ++rounds;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (secs < min_seconds);
  double cpu = ThreadCpuSeconds() - c0;
  // mb_per_s uses CPU time of this (single) thread, so that load from other processes on the
  // machine does not count; wall_mb_per_s is reported too.
  return {{"bytes", total},
          {"wall_seconds", secs},
          {"cpu_seconds", cpu},
          {"rounds", rounds},
          {"mb_per_s", total / 1e6 / cpu},
          {"wall_mb_per_s", total / 1e6 / secs},
          {"output_bytes", out_bytes}};
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: scrub_eval CORPUS_DIR OUT_JSON [--rules FILE [--with-defaults]] "
                 "[--min-seconds S]\n";
    return 2;
  }
  fs::path corpus = argv[1];
  std::string out_path = argv[2];
  contextd::scrub::ScrubConfig cfg;
  double min_seconds = 2;
  std::string workloads;
  cfg.extend_default = false;
  for (int i = 3; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--with-defaults") {
      cfg.extend_default = true;
    } else if (flag == "--rules" && i + 1 < argc) {
      cfg.rules_file = argv[++i];
    } else if (flag == "--min-seconds" && i + 1 < argc) {
      min_seconds = std::stod(argv[++i]);
    } else if (flag == "--workloads" && i + 1 < argc) {
      workloads = argv[++i];
    }
  }
  auto scrubber = contextd::scrub::BuildScrubber(cfg);
  if (!scrubber.ok()) {
    std::cerr << scrubber.status() << "\n";
    return 2;
  }
  auto labels = nlohmann::json::parse(ReadFile(corpus / "labels.json"), nullptr, false);
  if (labels.is_discarded()) {
    std::cerr << "cannot parse labels.json\n";
    return 2;
  }
  nlohmann::json files = nlohmann::json::object();
  bool idempotent = true;
  for (const auto& f : labels["files"]) {
    std::string rel = f["path"];
    std::string text = ReadFile(corpus / rel);
    nlohmann::json list = nlohmann::json::array();
    for (const auto& fd : (*scrubber)->Scan(text)) list.push_back({fd.start, fd.end, fd.rule_id});
    files[rel] = list;
    std::string once = (*scrubber)->Scrub(text);
    idempotent &= (*scrubber)->Scrub(once) == once;
  }
  nlohmann::json doc = {
      {"tool", "contextd scrub"},
      {"rules", (*scrubber)->num_rules()},
      {"files", files},
      {"idempotent", idempotent},
      {"throughput",
       {{"clean", Throughput(**scrubber, ReadDir(corpus / "clean"), min_seconds)},
        {"dense", Throughput(**scrubber, ReadDir(corpus / "dense"), min_seconds)},
        {"very-dense", Throughput(**scrubber, ReadDir(corpus / "very-dense"), min_seconds)}}}};
  std::cerr << "contextd: clean " << doc["throughput"]["clean"]["mb_per_s"].get<double>()
            << " MB/s, dense " << doc["throughput"]["dense"]["mb_per_s"].get<double>() << " MB/s\n";
  if (!workloads.empty()) {
    const std::vector<std::string> results = ReadToolResults(workloads);
    if (results.empty()) {
      std::cerr << "scrub_eval: no tool results in " << workloads << "/*.jsonl\n";
    } else {
      nlohmann::json findings = nlohmann::json::array();
      for (const auto& t : results) {
        for (const auto& f : (*scrubber)->Scan(t)) {
          findings.push_back({f.rule_id, t.substr(f.start, std::min<size_t>(f.end - f.start, 40))});
        }
      }
      nlohmann::json w = Throughput(**scrubber, results, min_seconds);
      w["tool_results"] = results.size();
      w["findings"] = findings;
      doc["throughput"]["workloads"] = w;
      std::cerr << "contextd: workloads (" << results.size() << " tool results) "
                << w["mb_per_s"].get<double>() << " MB/s, " << findings.size() << " findings\n";
    }
  }
  std::ofstream(out_path) << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
