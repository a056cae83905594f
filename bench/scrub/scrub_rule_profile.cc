// scrub_rule_profile: time each default rule alone over a directory of text files (the slowest
// first), to find rules that dominate the scan cost. Usage: scrub_rule_profile DIR [MAX_BYTES]
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "scrub/internal/aho_corasick.h"
#include "scrub/rule_scrubber.h"

using namespace contextd::scrub;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: scrub_rule_profile DIR [MAX_BYTES]\n";
    return 2;
  }
  size_t max_bytes = argc > 2 ? std::stoul(argv[2]) : 2000000;
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(argv[1])) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::string text;
  for (const auto& p : paths) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    text += ss.str();
    if (text.size() > max_bytes) break;
  }
  auto cfg = DefaultRules();
  if (!cfg.ok()) return 2;
  std::vector<std::pair<double, std::string>> res;
  for (const auto& r : cfg->rules) {
    RulesConfig one;
    one.rules = {r};
    one.allowlists = cfg->allowlists;
    auto s = RuleScrubber::Create(one);
    if (!s.ok()) return 2;
    (*s)->Scan(text);  // warm the RE2 DFA caches; time the second pass
    auto t0 = std::chrono::steady_clock::now();
    size_t n = (*s)->Scan(text).size();
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    res.push_back({ms, r.id + " findings=" + std::to_string(n)});
  }
  {
    std::vector<std::string> keywords;
    for (const auto& r : cfg->rules)
      keywords.insert(keywords.end(), r.keywords.begin(), r.keywords.end());
    internal::AhoCorasick ac(keywords);
    size_t hits = 0;
    ac.Scan(text, [&](uint32_t, size_t) { ++hits; });
    auto t0 = std::chrono::steady_clock::now();
    ac.Scan(text, [&](uint32_t, size_t) { ++hits; });
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    res.push_back({ms, "(keyword pass alone) hits=" + std::to_string(hits / 2) +
                           " states=" + std::to_string(ac.num_states())});
  }
  {
    auto all = RuleScrubber::Create(*cfg);
    (*all)->Scrub(text);
    auto t0 = std::chrono::steady_clock::now();
    (*all)->Scrub(text);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    res.push_back({ms, "(all rules: Scrub)"});
  }
  std::sort(res.rbegin(), res.rend());
  for (const auto& [ms, what] : res) std::cout << ms << " ms  " << what << "\n";
  std::cout << "bytes " << text.size() << "\n";
  return 0;
}
