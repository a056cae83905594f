// Replays tests/tokens/goldens.tsv (ids from OpenAI's tiktoken, made by
// tests/tokens/make_goldens.mjs) through BpeTokenizer.
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tokens/bpe_tokenizer.h"

namespace contextd::tokens {
namespace {

struct Golden {
  std::string name, encoding;
  bool allow_special = false;
  std::string input;
  std::vector<uint32_t> ids;
};

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string DecodeInput(const std::string& field) {
  if (field.rfind("hex:", 0) == 0) return FromHex(field.substr(4));
  if (field.rfind("rep:", 0) == 0) {
    size_t colon = field.find(':', 4);
    std::string unit = FromHex(field.substr(4, colon - 4));
    size_t count = std::stoul(field.substr(colon + 1));
    std::string out;
    for (size_t i = 0; i < count; ++i) out += unit;
    return out;
  }
  ADD_FAILURE() << "bad input field " << field.substr(0, 20);
  return "";
}

std::vector<Golden> ReadGoldens() {
  const char* src = std::getenv("CONTEXTD_SOURCE_DIR");
  std::string path =
      std::string(src ? src : CONTEXTD_SOURCE_DIR_FALLBACK) + "/tests/tokens/goldens.tsv";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::vector<Golden> out;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t start = 0;
    for (;;) {
      size_t tab = line.find('\t', start);
      f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (f.size() != 5) {
      ADD_FAILURE() << "bad golden line: " << line.substr(0, 80);
      continue;
    }
    Golden g;
    g.name = f[0];
    g.encoding = f[1];
    g.allow_special = f[2] == "1";
    g.input = DecodeInput(f[3]);
    std::istringstream ids(f[4]);
    uint32_t id;
    while (ids >> id) g.ids.push_back(id);
    out.push_back(std::move(g));
  }
  return out;
}

TEST(GoldenTest, MatchesTiktoken) {
  std::vector<Golden> goldens = ReadGoldens();
  ASSERT_GT(goldens.size(), 1000u);
  std::map<std::string, int> per_encoding;
  int failures = 0;
  for (const Golden& g : goldens) {
    auto tok = GetEncoding(g.encoding);
    ASSERT_TRUE(tok.ok()) << tok.status();
    ++per_encoding[g.encoding];
    std::vector<uint32_t> got = (*tok)->Encode(g.input, g.allow_special);
    size_t count = (*tok)->Count(g.input, g.allow_special);
    if (got == g.ids && count == g.ids.size()) continue;
    if (++failures > 20) continue;
    size_t i = 0;
    while (i < got.size() && i < g.ids.size() && got[i] == g.ids[i]) ++i;
    auto piece = [&](const std::vector<uint32_t>& v) -> std::string {
      if (i >= v.size()) return "<end>";
      auto s = (*tok)->Decode(std::span<const uint32_t>(&v[i], 1));
      return s.ok() ? "\"" + *s + "\"" : "<bad>";
    };
    ADD_FAILURE() << g.name << " " << g.encoding << " allow_special=" << g.allow_special
                  << ": first difference at id " << i << " of " << g.ids.size() << " (got "
                  << got.size() << ", count " << count << "): want " << piece(g.ids) << " got "
                  << piece(got);
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(per_encoding["o200k_base"], 500);
  EXPECT_GT(per_encoding["cl100k_base"], 500);
}

}  // namespace
}  // namespace contextd::tokens
