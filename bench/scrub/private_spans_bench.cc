// Google Benchmark micro-benchmarks of WithholdPrivate / ContainsPrivate (scrub/private_spans.h):
// the fast path (no tag, the common case: one memchr pass for '<' and one copy) next to a plain
// copy of the same text, on prose/log text (few '<'), markup (a '<' every few bytes), and text
// that does hold spans. Single thread. Compare with BM_ScrubClean (scrub_bench): every stored
// text is scrubbed anyway.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "scrub/private_spans.h"

namespace {

std::string Text(size_t bytes, const std::vector<std::string>& lines, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out;
  while (out.size() < bytes) out += lines[rng() % lines.size()];
  return out;
}

std::string Prose(size_t bytes) {
  return Text(bytes,
              {"2026-11-22T03:12:44.123Z INFO [auth] refreshing token for user 42 status=200\n",
               "def handle_request(self, request):\n    return self.cache.get(request.key)\n",
               "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Dev <dev@acme.io>\n",
               "The quick brown fox jumps over the lazy dog; see https://docs.acme.io/guide.\n"},
              1);
}

std::string Markup(size_t bytes) {
  return Text(bytes,
              {"<div class=\"row\"><span>a</span><b>b</b></div>\n",
               "template <typename T> std::vector<T> f(const std::map<int, T>& m);\n",
               "<p>if (a < b && c > d) { <em>x</em> }</p>\n"},
              2);
}

std::string WithSpans(size_t bytes) {
  return Text(bytes,
              {"The quick brown fox jumps over the lazy dog.\n",
               "my key is <private>sk-live-0123456789abcdef</private>, keep it\n"},
              3);
}

template <std::string (*Make)(size_t)>
void BM_Copy(benchmark::State& state) {
  std::string text = Make(1 << 20);
  for (auto _ : state) benchmark::DoNotOptimize(std::string(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

template <std::string (*Make)(size_t)>
void BM_ContainsPrivate(benchmark::State& state) {
  std::string text = Make(1 << 20);
  for (auto _ : state) benchmark::DoNotOptimize(contextd::scrub::ContainsPrivate(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

template <std::string (*Make)(size_t)>
void BM_WithholdPrivate(benchmark::State& state) {
  std::string text = Make(1 << 20);
  for (auto _ : state) benchmark::DoNotOptimize(contextd::scrub::WithholdPrivate(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

// A typical small stored text (a tool call's arguments): the per-call overhead.
void BM_WithholdPrivateSmall(benchmark::State& state) {
  std::string text = R"({"path":"/repo/src/server/server.cc","offset":120,"limit":400})";
  for (auto _ : state) benchmark::DoNotOptimize(contextd::scrub::WithholdPrivate(text));
}

void BM_CopySmall(benchmark::State& state) {
  std::string text = R"({"path":"/repo/src/server/server.cc","offset":120,"limit":400})";
  for (auto _ : state) benchmark::DoNotOptimize(std::string(text));
}

BENCHMARK(BM_Copy<Prose>);
BENCHMARK(BM_ContainsPrivate<Prose>);
BENCHMARK(BM_WithholdPrivate<Prose>);
BENCHMARK(BM_Copy<Markup>);
BENCHMARK(BM_ContainsPrivate<Markup>);
BENCHMARK(BM_WithholdPrivate<Markup>);
BENCHMARK(BM_WithholdPrivate<WithSpans>);
BENCHMARK(BM_CopySmall);
BENCHMARK(BM_WithholdPrivateSmall);

}  // namespace

BENCHMARK_MAIN();
