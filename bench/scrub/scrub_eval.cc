// scrub_eval: runs contextd's scrubber (default rules, or --rules FILE) over the corpus written by
// tests/scrub/gen_corpus.py: findings for every labelled file, then single-thread throughput of
// Scrub() on clean/ and dense/. Output JSON is scored by score.py (see run.sh).
// Usage: scrub_eval CORPUS_DIR OUT_JSON [--rules FILE [--with-defaults]] [--min-seconds S]
// (--rules reads FILE as `contextd scrub --rules` does: alone unless it extends the built-in rules
// or --with-defaults is given.)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

static nlohmann::json Throughput(const RuleScrubber& s, const fs::path& dir, double min_seconds) {
  std::vector<std::string> texts;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir)) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  size_t bytes = 0;
  for (const auto& p : paths) {
    texts.push_back(ReadFile(p));
    bytes += texts.back().size();
  }
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
  return {{"bytes", total},         {"wall_seconds", secs},         {"cpu_seconds", cpu},
          {"rounds", rounds},       {"mb_per_s", total / 1e6 / cpu}, {"wall_mb_per_s", total / 1e6 / secs},
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
  cfg.extend_default = false;
  for (int i = 3; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--with-defaults") {
      cfg.extend_default = true;
    } else if (flag == "--rules" && i + 1 < argc) {
      cfg.rules_file = argv[++i];
    } else if (flag == "--min-seconds" && i + 1 < argc) {
      min_seconds = std::stod(argv[++i]);
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
       {{"clean", Throughput(**scrubber, corpus / "clean", min_seconds)},
        {"dense", Throughput(**scrubber, corpus / "dense", min_seconds)},
        {"very-dense", Throughput(**scrubber, corpus / "very-dense", min_seconds)}}}};
  std::ofstream(out_path) << doc.dump();
  std::cerr << "contextd: clean " << doc["throughput"]["clean"]["mb_per_s"].get<double>()
            << " MB/s, dense " << doc["throughput"]["dense"]["mb_per_s"].get<double>() << " MB/s\n";
  return 0;
}
