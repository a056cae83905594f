// contextd side of the token-counting benchmark (bench/tokens/run.sh runs it next to the npm
// peers). Single thread. Modes:
//   tokens_bench corpus FILE [REPEATS]   Count() throughput per encoding (best of REPEATS), and
//   count tokens_bench worst FILE              Count() of one file (run.sh: random letters, one
//   piece) tokens_bench rss                     RSS after loading both vocabularies
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "tokens/bpe_tokenizer.h"

namespace {

using contextd::tokens::BpeTokenizer;
using Clock = std::chrono::steady_clock;

// CPU seconds of this thread: on a shared machine, time the process was not scheduled does not
// count (the peers' script reports the same measure, process.cpuUsage()).
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

long RssKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0)
      return std::strtol(line.c_str() + std::strlen(field), nullptr, 10);
  }
  return -1;
}

const BpeTokenizer* Get(const char* name) {
  auto tok = contextd::tokens::GetEncoding(name);
  if (!tok.ok()) {
    std::fprintf(stderr, "load %s: %s\n", name, std::string(tok.status().message()).c_str());
    std::exit(1);
  }
  return *tok;
}

std::string ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int Corpus(const char* path, int repeats) {
  std::string text = ReadFile(path);
  if (text.empty()) {
    std::fprintf(stderr, "empty corpus %s\n", path);
    return 1;
  }
  for (const char* name : {"o200k_base", "cl100k_base"}) {
    const BpeTokenizer* tok = Get(name);
    double best = 1e30, best_cpu = 1e30;
    size_t count = 0;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = Clock::now();
      double c0 = CpuSeconds();
      count = tok->Count(text);
      best_cpu = std::min(best_cpu, CpuSeconds() - c0);
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::printf(
        "contextd %s bytes=%zu tokens=%zu wall_s=%.3f cpu_s=%.3f MBps_wall=%.1f MBps_cpu=%.1f\n",
        name, text.size(), count, best, best_cpu, text.size() / 1e6 / best,
        text.size() / 1e6 / best_cpu);
  }
  return 0;
}

int Worst(const char* path) {
  std::string text = ReadFile(path);
  for (const char* name : {"o200k_base", "cl100k_base"}) {
    const BpeTokenizer* tok = Get(name);
    auto t0 = Clock::now();
    double c0 = CpuSeconds();
    size_t count = tok->Count(text);
    double cpu = CpuSeconds() - c0;
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("contextd worst %s bytes=%zu tokens=%zu wall_s=%.3f cpu_s=%.3f\n", name,
                text.size(), count, s, cpu);
  }
  return 0;
}

int Rss() {
  long before = RssKb("VmRSS:");
  auto t0 = Clock::now();
  const BpeTokenizer* a = Get("o200k_base");
  const BpeTokenizer* b = Get("cl100k_base");
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "contextd rss before_kb=%ld after_kb=%ld peak_kb=%ld load_seconds=%.3f tables_kb=%zu\n",
      before, RssKb("VmRSS:"), RssKb("VmHWM:"), s, (a->MemoryUsage() + b->MemoryUsage()) / 1024);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "corpus" && argc > 2) return Corpus(argv[2], argc > 3 ? std::atoi(argv[3]) : 3);
  if (mode == "worst" && argc > 2) return Worst(argv[2]);
  if (mode == "rss") return Rss();
  std::fprintf(stderr, "usage: tokens_bench corpus FILE [REPEATS] | worst FILE | rss\n");
  return 2;
}
