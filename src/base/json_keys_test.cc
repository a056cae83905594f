#include "base/json_keys.h"

#include <string>

#include "gtest/gtest.h"

namespace contextd::base {
namespace {

std::string Found(std::string_view json) {
  auto dup = FindDuplicateJsonKey(json);
  return dup ? dup->Describe() : "none";
}

TEST(JsonKeysTest, TopLevelDuplicate) {
  EXPECT_EQ(Found(R"({"model":"m","messages":[],"messages":[1]})"),
            "top level: duplicate key \"messages\"");
}

TEST(JsonKeysTest, DeepDuplicateNamesThePath) {
  EXPECT_EQ(Found(R"({"messages":[{"role":"user","content":"a"},{"role":"x"},)"
                  R"({"role":"user","content":[{"type":"tool_result","content":"a",)"
                  R"("content":"secret"}]}]})"),
            "messages.2.content.0: duplicate key \"content\"");
}

TEST(JsonKeysTest, EscapedNamesCompareUnescaped) {
  EXPECT_EQ(Found(R"({"content":1,"\u0063ontent":2})"), "top level: duplicate key \"content\"");
  EXPECT_EQ(Found(R"({"a\/b":1,"a/b":2})"), "top level: duplicate key \"a/b\"");
  EXPECT_EQ(Found(R"({"\u00e9":1,"é":2})"), "top level: duplicate key \"é\"");
  EXPECT_EQ(Found(R"({"\ud83d\ude00":1,"😀":2})"), "top level: duplicate key \"😀\"");
  // Quotes inside names are not the end of the name.
  EXPECT_EQ(Found(R"({"a\"":1,"a":2,"a\\":3})"), "none");
}

TEST(JsonKeysTest, SiblingObjectsMayShareNames) {
  EXPECT_EQ(Found(R"([{"a":1,"b":{"a":2}},{"a":3,"b":{"a":4}}])"), "none");
  EXPECT_EQ(Found(R"({"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]})"), "none");
  // Values that look like names are values.
  EXPECT_EQ(Found(R"({"a":"a","b":["a","a"],"c":"b"})"), "none");
}

TEST(JsonKeysTest, ArraysInPath) {
  EXPECT_EQ(Found(R"([[1,2],[3,{"k":{"q":1,"q":2}}]])"), "1.1.k: duplicate key \"q\"");
}

TEST(JsonKeysTest, LargeObjectsUseTheSet) {
  std::string json = "{";
  for (int i = 0; i < 5000; ++i)
    json += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  std::string unique = json + "\"last\":0}";
  EXPECT_EQ(Found(unique), "none");
  EXPECT_EQ(Found(json + "\"k4321\":0}"), "top level: duplicate key \"k4321\"");
  EXPECT_EQ(Found(json + "\"k1\":0}"), "top level: duplicate key \"k1\"");
}

TEST(JsonKeysTest, HugeDepthNeedsNoStack) {
  const int depth = 200000;
  std::string json;
  for (int i = 0; i < depth; ++i) json += "{\"a\":";
  json += "{\"b\":1,\"b\":2}";
  for (int i = 0; i < depth; ++i) json += "}";
  auto dup = FindDuplicateJsonKey(json);
  ASSERT_TRUE(dup.has_value());
  EXPECT_EQ(dup->path.size(), static_cast<size_t>(depth));
  EXPECT_EQ(dup->key, "b");
}

TEST(JsonKeysTest, InvalidUnicodeNamesAreRefused) {
  EXPECT_EQ(Found(R"({"\ud800":1})"), "top level: member name is not valid Unicode: \"\\ud800\"");
  EXPECT_EQ(Found("{\"\xff\":1}"), "top level: member name is not valid Unicode: \"\xff\"");
  EXPECT_EQ(Found("{\"\xed\xa0\x80\":1}").substr(0, 39), "top level: member name is not valid Uni");
  // Outside names (values) nothing is checked here.
  EXPECT_EQ(Found("{\"a\":\"\xff\"}"), "none");
}

TEST(JsonKeysTest, InvalidJsonIsSafe) {
  for (std::string_view bad : {"{\"a", "{\"a\":1,\"a", "}}]]", "{\"a\\", "[\"\\\"", ""}) {
    (void)FindDuplicateJsonKey(bad);
  }
  SUCCEED();
}

TEST(JsonKeysTest, TrackerPerObject) {
  JsonKeyTracker keys;
  keys.Open();
  EXPECT_EQ(keys.Add("\"a\""), JsonKeyVerdict::kNew);
  keys.Open();
  EXPECT_EQ(keys.Add("\"a\""), JsonKeyVerdict::kNew);
  EXPECT_EQ(keys.Add("\"\\u0061\""), JsonKeyVerdict::kDuplicate);
  keys.Close();
  EXPECT_EQ(keys.Add("\"b\""), JsonKeyVerdict::kNew);
  EXPECT_EQ(keys.Add("\"\\u0062\""), JsonKeyVerdict::kDuplicate);
  keys.Close();
}

TEST(JsonKeysTest, Unescape) {
  EXPECT_EQ(UnescapeJsonKey(R"("a\n\t\"\\\/\u0041")"), std::string("a\n\t\"\\/A"));
  EXPECT_EQ(UnescapeJsonKey(R"("\udc00")"), std::nullopt);
  EXPECT_EQ(UnescapeJsonKey(R"("\ud800\u0041")"), std::nullopt);
}

}  // namespace
}  // namespace contextd::base
