#include "cli/tokens_cli.h"

#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace contextd::cli {
namespace {

struct CliRun {
  int code;
  std::string out, err;
};

CliRun Tokens(std::string_view encoding, bool ids, bool allow_special, const std::string& input) {
  std::istringstream in(input);
  std::ostringstream out, err;
  int code = RunTokensCommand(encoding, ids, allow_special, in, out, err);
  return CliRun{code, out.str(), err.str()};
}

TEST(TokensCliTest, PrintsCountOrIds) {
  CliRun r = Tokens("o200k_base", false, false, "hello world");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "2\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(Tokens("o200k_base", true, false, "hello world").out, "24912 2375\n");
  EXPECT_EQ(Tokens("cl100k_base", true, false, "hello world").out, "15339 1917\n");
  EXPECT_EQ(Tokens("o200k_base", false, false, "").out, "0\n");
  EXPECT_EQ(Tokens("o200k_base", true, false, "").out, "\n");
}

TEST(TokensCliTest, SpecialTokensAndRawBytes) {
  EXPECT_EQ(Tokens("o200k_base", true, true, "<|endoftext|>").out, "199999\n");
  EXPECT_NE(Tokens("o200k_base", true, false, "<|endoftext|>").out, "199999\n");
  std::string raw("\xFF\x00\n", 3);
  CliRun r = Tokens("o200k_base", false, false, raw);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, Tokens("o200k_base", false, false, std::string("\xEF\xBF\xBD\x00\n", 5)).out);
}

TEST(TokensCliTest, UnknownEncodingIsAUsageError) {
  CliRun r = Tokens("gpt2", false, false, "x");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("unknown encoding"), std::string::npos) << r.err;
}

TEST(TokensCliTest, WriteFailureIsReported) {
  std::istringstream in("hello");
  std::ostringstream out, err;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(RunTokensCommand("o200k_base", false, false, in, out, err), 1);
  EXPECT_NE(err.str().find("cannot write"), std::string::npos);
}

}  // namespace
}  // namespace contextd::cli
