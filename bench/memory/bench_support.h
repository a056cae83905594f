// Helpers shared by the ReasoningBank benchmarks (memory_bench, retrieval_quality): the bank's
// production parts (default scrub rules, o200k_base counting), quantiles, process memory and file
// sizes, and where the recorded workloads live. Header-only; single-threaded use.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "memory/memory_bank.h"
#include "scrub/rule_scrubber.h"
#include "tokens/bpe_tokenizer.h"

namespace contextd::bench {

// The bank as the server builds it, minus the optional model distiller and embedder: the default
// scrub rules as `sanitize`, o200k_base as `count_tokens`, the real clock. Exits on failure (the
// rules and the vocabulary are embedded in the binary, so that would be a broken build).
class BankParts {
 public:
  BankParts() {
    auto scrubber = scrub::BuildScrubber(scrub::ScrubConfig{});
    auto encoding = tokens::GetEncoding("o200k_base");
    if (!scrubber.ok() || !encoding.ok()) {
      std::fprintf(stderr, "cannot build the bank's parts: %s %s\n",
                   scrubber.status().ToString().c_str(), encoding.status().ToString().c_str());
      std::exit(1);
    }
    scrubber_ = *std::move(scrubber);
    encoding_ = *encoding;
  }

  memory::MemoryBank::Parts For(memory::MemoryStore* store) const {
    memory::MemoryBank::Parts parts;
    parts.store = store;
    parts.clock = &base::RealClock::Get();
    parts.sanitize = [s = scrubber_](std::string_view text) { return s->Scrub(text); };
    parts.count_tokens = [e = encoding_](std::string_view text) {
      return static_cast<int64_t>(e->Count(text));
    };
    return parts;
  }

 private:
  std::shared_ptr<const scrub::RuleScrubber> scrubber_;
  const tokens::BpeTokenizer* encoding_ = nullptr;
};

struct Quantiles {
  double p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;
  size_t n = 0;
};

// Nearest-rank quantiles of `v` (any unit).
inline Quantiles Summarize(std::vector<double> v) {
  Quantiles q;
  q.n = v.size();
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    size_t rank = static_cast<size_t>(p * static_cast<double>(v.size()) + 0.999999);
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  q.p50 = at(0.50);
  q.p95 = at(0.95);
  q.p99 = at(0.99);
  q.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  q.mean = sum / static_cast<double>(v.size());
  return q;
}

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); 0 if unreadable.
inline int64_t ProcStatusKb(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size(), field) == 0 && line.size() > field.size() &&
        line[field.size()] == ':') {
      return std::strtoll(line.c_str() + field.size() + 1, nullptr, 10);
    }
  }
  return 0;
}

inline int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

// The recorded workloads: $CONTEXTD_WORKLOADS, else ../shared/workloads beside the source tree.
inline std::string DefaultWorkloadsDir() {
  if (const char* env = std::getenv("CONTEXTD_WORKLOADS"); env != nullptr && *env != '\0') {
    return env;
  }
  return std::string(CONTEXTD_SOURCE_DIR) + "/../shared/workloads";
}

// The *.jsonl files of `dir`, sorted; empty if none (or no such directory).
inline std::vector<std::string> WorkloadFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".jsonl") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace contextd::bench
