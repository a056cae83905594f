// scrub_replay: scrubs the tool results of recorded agent trajectories (JSONL as in
// /work/shared/workloads: every "steps" entry with role "tool", its "content") with the default
// rules, and reports findings per rule (decoded ones apart) and single-thread throughput.
// Usage: scrub_replay FILE.jsonl... [--decode-depth N] [--min-seconds S] [--show]
// --show prints each finding with its rule, tags and the line around it.
#include <time.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scrub/rule_scrubber.h"

namespace {

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

bool IsDecoded(const contextd::scrub::Finding& f) {
  for (const auto& t : f.tags) {
    if (t.rfind("decoded:", 0) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  contextd::scrub::ScrubConfig cfg;
  double min_seconds = 2;
  bool show = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--decode-depth" && i + 1 < argc) {
      cfg.decode_depth = std::stoi(argv[++i]);
    } else if (a == "--min-seconds" && i + 1 < argc) {
      min_seconds = std::stod(argv[++i]);
    } else if (a == "--show") {
      show = true;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    std::cerr
        << "usage: scrub_replay FILE.jsonl... [--decode-depth N] [--min-seconds S] [--show]\n";
    return 2;
  }
  std::vector<std::string> texts;
  size_t bytes = 0;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      auto doc = nlohmann::json::parse(line, nullptr, false);
      if (doc.is_discarded() || !doc.contains("steps")) continue;
      for (const auto& step : doc["steps"]) {
        if (step.value("role", "") != "tool" || !step.contains("content")) continue;
        if (!step["content"].is_string()) continue;
        texts.push_back(step["content"].get<std::string>());
        bytes += texts.back().size();
      }
    }
  }
  auto scrubber = contextd::scrub::BuildScrubber(cfg);
  if (!scrubber.ok()) {
    std::cerr << scrubber.status() << "\n";
    return 2;
  }
  const auto& s = **scrubber;
  std::map<std::string, int> by_rule, decoded_by_rule;
  size_t findings = 0, decoded = 0, changed = 0;
  for (const auto& t : texts) {
    auto r = s.ScrubWithFindings(t);
    changed += r.text != t;
    for (const auto& f : r.findings) {
      ++findings;
      ++by_rule[f.rule_id];
      if (IsDecoded(f)) {
        ++decoded;
        ++decoded_by_rule[f.rule_id];
      }
      if (show) {
        size_t ls = t.rfind('\n', f.start);
        ls = ls == std::string::npos ? 0 : ls + 1;
        size_t le = t.find('\n', f.end);
        if (le == std::string::npos) le = t.size();
        if (f.start - ls > 200) ls = f.start - 200;
        if (le - f.end > 200) le = f.end + 200;
        std::cout << f.rule_id;
        for (const auto& tag : f.tags) std::cout << " " << tag;
        std::cout << " [" << t.substr(f.start, f.end - f.start) << "]\n    "
                  << t.substr(ls, le - ls) << "\n";
      }
    }
  }
  for (const auto& t : texts) s.Scrub(t);  // warm-up
  size_t total = 0;
  auto t0 = std::chrono::steady_clock::now();
  double c0 = ThreadCpuSeconds(), secs = 0;
  do {
    for (const auto& t : texts) s.Scrub(t);
    total += bytes;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (secs < min_seconds);
  const double cpu = ThreadCpuSeconds() - c0;
  std::cout << "texts " << texts.size() << ", " << bytes << " bytes; decode_depth "
            << cfg.decode_depth << "\nfindings " << findings << " (decoded " << decoded
            << "), texts changed " << changed << "\n";
  for (const auto& [rule, n] : by_rule) {
    std::cout << "  " << rule << " " << n << " (decoded " << decoded_by_rule[rule] << ")\n";
  }
  std::cout << "throughput " << total / 1e6 / cpu << " MB/s (cpu), " << total / 1e6 / secs
            << " MB/s (wall)\n";
  return 0;
}
