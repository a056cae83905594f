#include "model/raw_json.h"

#include <string>

#include "gtest/gtest.h"

namespace contextd::model {
namespace {

std::string Verdict(std::string_view doc, int record_depth = 2, int max_depth = 256) {
  auto root = ParseRawJson(doc, record_depth, max_depth);
  return root.ok() ? "ok" : std::string(root.status().message());
}

TEST(RawJsonDuplicateTest, TopLevel) {
  EXPECT_EQ(Verdict(R"({"messages":[],"model":"m","messages":[{"role":"user"}]})"),
            "top level: duplicate key \"messages\"");
}

TEST(RawJsonDuplicateTest, DeepBelowTheRecordedLevels) {
  // Recorded: one level only; the duplicate sits four levels deeper and is still found.
  EXPECT_EQ(Verdict(R"({"messages":[{"role":"user","content":"x"},{"role":"user","content":[)"
                    R"({"type":"tool_result","content":"ok","content":"AKIA"}]}]})",
                    1),
            "messages.1.content.0: duplicate key \"content\"");
}

TEST(RawJsonDuplicateTest, EscapedNames) {
  EXPECT_EQ(Verdict(R"({"a":{"content":1,"\u0063ontent":2}})"), "a: duplicate key \"content\"");
  EXPECT_EQ(Verdict(R"({"\u00e9":1,"é":2})"), "top level: duplicate key \"é\"");
  EXPECT_EQ(Verdict(R"({"a\"b":1,"a\u0022b":2})"), "top level: duplicate key \"a\"b\"");
  EXPECT_EQ(Verdict(R"({"a":1,"A":2,"a ":3,"\\a":4})"), "ok");
}

TEST(RawJsonDuplicateTest, SiblingsAndArrays) {
  EXPECT_EQ(Verdict(R"([{"a":1},{"a":2},[{"a":{"a":3}}]])"), "ok");
  EXPECT_EQ(Verdict(R"([0,[1,2,{"x":[{},{"k":1,"k":1}]}]])"), "1.2.x.1: duplicate key \"k\"");
  // A key that is a path component is decoded there too.
  EXPECT_EQ(Verdict(R"({"\u0061":[{"b":1,"b":2}]})"), "a.0: duplicate key \"b\"");
}

TEST(RawJsonDuplicateTest, LargeObject) {
  std::string doc = "{";
  for (int i = 0; i < 3000; ++i) doc += "\"k" + std::to_string(i) + "\":[],";
  EXPECT_EQ(Verdict(doc + "\"z\":1}"), "ok");
  EXPECT_EQ(Verdict(doc + "\"k2999\":1}"), "top level: duplicate key \"k2999\"");
}

TEST(RawJsonDuplicateTest, DepthUpToTheLimit) {
  std::string doc;
  for (int i = 0; i < 255; ++i) doc += "[";
  doc += "{\"q\":1,\"q\":2}";
  for (int i = 0; i < 255; ++i) doc += "]";
  std::string expected;
  for (int i = 0; i < 255; ++i) expected += i == 0 ? "0" : ".0";
  EXPECT_EQ(Verdict(doc), expected + ": duplicate key \"q\"");
  // Past the limit the document is refused as before, duplicate or not.
  EXPECT_EQ(Verdict("[" + doc + "]"), "invalid JSON at byte 256: nested too deeply");
}

TEST(RawJsonDuplicateTest, InvalidJsonAsBefore) {
  // A duplicate is reported where it is seen, even if the document breaks off after it.
  EXPECT_EQ(Verdict(R"({"a":1,"a")"), "top level: duplicate key \"a\"");
  EXPECT_EQ(Verdict(R"({"a":1,"b")"), "invalid JSON at byte 10: ':' expected");
  EXPECT_EQ(Verdict(R"({"a":1,})"), "invalid JSON at byte 7: member name expected");
  EXPECT_EQ(Verdict(R"({"a" 1})"), "invalid JSON at byte 5: ':' expected");
  EXPECT_EQ(Verdict("{\"a\":1}x"), "invalid JSON at byte 7: unexpected data after the JSON value");
}

TEST(RawJsonDuplicateTest, InvalidUnicodeName) {
  EXPECT_EQ(Verdict(R"({"x":{"\udc00":1}})"), "x: member name is not valid Unicode: \"\\udc00\"");
  EXPECT_EQ(Verdict("{\"\xc3\":1}"), "top level: member name is not valid Unicode: \"\xc3\"");
  // Invalid UTF-8 in values is the provider's to judge, as before.
  EXPECT_EQ(Verdict("{\"x\":\"\xc3\"}"), "ok");
}

TEST(RawJsonDuplicateTest, ReusedElementsAreVouchedFor) {
  const std::string first = R"({"messages":[{"role":"user","content":"a"}]})";
  auto donor = ParseRawJson(first, 3);
  ASSERT_TRUE(donor.ok());
  RawNode& messages = donor->children[0];
  const std::string second =
      R"({"messages":[{"role":"user","content":"a"},{"role":"x","role":"y"}]})";
  ArrayReuse reuse{messages.begin, &messages.children, 1};
  auto root = ParseRawJson(second, 3, 256, nullptr, &reuse);
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.status().message(), "messages.1: duplicate key \"role\"");
  EXPECT_EQ(reuse.donor, nullptr);  // the first element was taken over
}

}  // namespace
}  // namespace contextd::model
