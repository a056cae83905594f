// Google Benchmark micro-benchmarks of RuleScrubber::Scrub with the default rules on synthetic
// clean text (code and logs that mention tokens and passwords but hold none) and secret-dense
// text. Single thread. bench/scrub/run.sh is the side-by-side comparison with secretlint.
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "scrub/rule_scrubber.h"

namespace {

const contextd::scrub::RuleScrubber& Scrubber() {
  static auto s = *contextd::scrub::BuildScrubber(contextd::scrub::ScrubConfig{});
  return *s;
}

std::string Random(std::mt19937& rng, size_t n) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(kAlnum[rng() % 62]);
  return s;
}

std::string CleanText(size_t bytes) {
  std::mt19937 rng(1);
  const char* lines[] = {
      "2026-11-22T03:12:44.123Z INFO [auth] refreshing token for user 42 status=200 dur=12ms\n",
      "    password = os.environ.get('DB_PASSWORD')\n",
      "def handle_request(self, request):\n    return self.cache.get(request.key)\n",
      "  \"integrity\": \"sha512-9u/aB1F1Cy/1yH5e/f+hfNMeQPvEkWTF9k0Lwr5eEW1T6HQ9c0sSp6Gy==\",\n",
      "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Dev <dev@acme.io>\n",
      "request_id=550e8400-e29b-41d4-a716-446655440000 path=/v1/items method=GET\n",
      "The quick brown fox jumps over the lazy dog; see https://docs.acme.io/guide.\n"};
  std::string out;
  while (out.size() < bytes) out += lines[rng() % 7];
  return out;
}

std::string DenseText(size_t bytes) {
  std::mt19937 rng(2);
  std::string out;
  while (out.size() < bytes) {
    switch (rng() % 4) {
      case 0:
        out += "GITHUB_TOKEN=ghp_" + Random(rng, 36) + "\n";
        break;
      case 1:
        out += "aws_access_key_id = AKIA" + Random(rng, 16) + "\n";
        break;
      case 2:
        out += "DB_PASSWORD=" + Random(rng, 14) + "7\n";
        break;
      default:
        out += "log line with nothing in it at all, status=200\n";
        break;
    }
  }
  return out;
}

void BM_ScrubClean(benchmark::State& state) {
  std::string text = CleanText(1 << 20);
  for (auto _ : state) benchmark::DoNotOptimize(Scrubber().Scrub(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ScrubClean);

void BM_ScrubDense(benchmark::State& state) {
  std::string text = DenseText(1 << 20);
  for (auto _ : state) benchmark::DoNotOptimize(Scrubber().Scrub(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ScrubDense);

}  // namespace

BENCHMARK_MAIN();
