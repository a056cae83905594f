#include "protocol/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace contextd::protocol {
namespace {

std::string Nlohmann(const Json& v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string Ours(const Json& v) {
  std::string out;
  AppendCompactJson(out, v);
  return out;
}

TEST(JsonWriterTest, WritesWhatNlohmannWritesForEveryKindOfValue) {
  const std::vector<Json> values = {
      nullptr,
      true,
      false,
      0,
      -1,
      42,
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<uint64_t>::max(),
      0.0,
      -0.0,
      1.0,
      0.1,
      1e300,
      -2.5e-300,
      std::nan(""),
      std::numeric_limits<double>::infinity(),
      "",
      "plain ascii",
      "quote \" backslash \\ slash /",
      "\b\f\n\r\t",
      std::string("nul\0x", 5),
      "\x01\x1f\x7f",
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
      Json::array(),
      Json::object(),
      Json::array({1, "two", nullptr, Json::array({Json::object()})}),
      Json::parse(R"({"b":{"z":1,"a":[true,false]},"a":"x","\u0001":"k"})"),
      Json::binary({1, 2, 3}),
      Json::binary({1, 2}, 7)};
  for (const Json& v : values) EXPECT_EQ(Ours(v), Nlohmann(v)) << Nlohmann(v);
}

TEST(JsonWriterTest, ReplacesInvalidUtf8AsNlohmannDoes) {
  const std::vector<std::string> strings = {"\x80",
                                            "a\xc0\xaf",
                                            "\xc2",
                                            "\xe0\x80\x80",
                                            "\xed\xa0\x80 surrogate",
                                            "\xf4\x90\x80\x80",
                                            "\xf5\x80\x80\x80",
                                            "\xf0\x9f\x98",
                                            "ok \xff then \"quoted\"",
                                            "\xe2\x82"};
  for (const std::string& s : strings) {
    EXPECT_EQ(Ours(Json(s)), Nlohmann(Json(s))) << Nlohmann(Json(s));
    // Also as an object key, and next to valid values.
    Json obj = {{s, s}, {"k", "v\n"}};
    EXPECT_EQ(Ours(obj), Nlohmann(obj)) << Nlohmann(obj);
  }
}

// Random strings over bytes chosen to hit every class (ASCII, escapes, lead and continuation
// bytes of every length), in random nested values: the output must match byte for byte.
TEST(JsonWriterTest, MatchesNlohmannOnRandomValues) {
  std::mt19937 rng(20261124);
  const std::string alphabet = std::string("az \"\\/\x01\x1f\x7f", 10) +
                               "\x80\xbf\xc2\xdf\xe0\xa0\xed\x9f\xef\xf0\x90\xf4\x8f\xf5\xff";
  auto random_string = [&] {
    std::string s;
    for (int n = rng() % 12; n > 0; --n) s += alphabet[rng() % alphabet.size()];
    return s;
  };
  std::function<Json(int)> random_value = [&](int depth) -> Json {
    switch (rng() % (depth > 3 ? 5 : 7)) {
      case 0:
        return nullptr;
      case 1:
        return static_cast<int64_t>(rng()) - (1 << 30);
      case 2:
        return static_cast<double>(rng()) / 7.0;
      case 3:
        return random_string();
      case 4:
        return rng() % 2 == 0;
      case 5: {
        Json a = Json::array();
        for (int n = rng() % 4; n > 0; --n) a.push_back(random_value(depth + 1));
        return a;
      }
      default: {
        Json o = Json::object();
        for (int n = rng() % 4; n > 0; --n) o[random_string()] = random_value(depth + 1);
        return o;
      }
    }
  };
  for (int i = 0; i < 5000; ++i) {
    Json v = random_value(0);
    ASSERT_EQ(Ours(v), Nlohmann(v)) << "case " << i;
  }
}

TEST(JsonWriterTest, AppendsToWhatIsThere) {
  std::string out = "prefix:";
  AppendCompactJson(out, Json::array({1, "\xff"}));
  EXPECT_EQ(out, "prefix:[1,\"\xef\xbf\xbd\"]");
}

}  // namespace
}  // namespace contextd::protocol
