#include "protocol/json_schema.h"

#include <string>

#include "gtest/gtest.h"

namespace contextd::protocol {
namespace {

std::string Error(const Json& schema, const Json& value) {
  absl::Status st = ValidateJson(schema, value);
  EXPECT_FALSE(st.ok()) << value.dump();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  return std::string(st.message());
}

bool Ok(const Json& schema, const Json& value) { return ValidateJson(schema, value).ok(); }

TEST(JsonSchemaTest, TypesIncludingIntegerVersusNumber) {
  Json schema = {{"type", "object"},
                 {"properties",
                  {{"n", {{"type", "integer"}}},
                   {"x", {{"type", "number"}}},
                   {"s", {{"type", "string"}}},
                   {"b", {{"type", "boolean"}}},
                   {"a", {{"type", "array"}}},
                   {"z", {{"type", {"string", "null"}}}}}}};
  EXPECT_TRUE(Ok(schema, {{"n", 3}, {"x", 2.5}, {"s", "hi"}, {"b", true}, {"a", Json::array()}}));
  EXPECT_TRUE(Ok(schema, {{"n", 3.0}}));  // 3.0 is an integer in JSON Schema
  EXPECT_TRUE(Ok(schema, {{"x", 3}}));    // integers are numbers
  EXPECT_TRUE(Ok(schema, {{"z", nullptr}}));
  EXPECT_EQ(Error(schema, {{"n", 2.5}}), "arguments.n: must be of type integer (type), got number");
  EXPECT_EQ(Error(schema, {{"s", 1}}), "arguments.s: must be of type string (type), got integer");
  EXPECT_EQ(Error(schema, {{"z", 1}}),
            "arguments.z: must be of type string or null (type), got integer");
  EXPECT_EQ(Error(schema, Json::array()), "arguments: must be of type object (type), got array");
}

TEST(JsonSchemaTest, RequiredAndAdditionalProperties) {
  Json schema = {{"type", "object"},
                 {"properties", {{"path", {{"type", "string"}}}}},
                 {"required", {"path"}},
                 {"additionalProperties", false}};
  EXPECT_TRUE(Ok(schema, {{"path", "/x"}}));
  EXPECT_EQ(Error(schema, Json::object()), "arguments.path: is required (required) but missing");
  EXPECT_EQ(Error(schema, {{"path", "/x"}, {"extra", 1}}),
            "arguments.extra: is not an allowed property (additionalProperties false)");
  Json typed_extra = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}};
  EXPECT_TRUE(Ok(typed_extra, {{"a", 1}}));
  EXPECT_FALSE(Ok(typed_extra, {{"a", "1"}}));
}

TEST(JsonSchemaTest, EnumConstAndBounds) {
  Json schema = {{"type", "object"},
                 {"properties",
                  {{"mode", {{"enum", {"fast", "slow"}}}},
                   {"k", {{"const", 7}}},
                   {"n", {{"type", "integer"}, {"minimum", 1}, {"maximum", 10}}},
                   {"e", {{"type", "number"}, {"exclusiveMinimum", 0}, {"exclusiveMaximum", 1}}}}}};
  EXPECT_TRUE(Ok(schema, {{"mode", "fast"}, {"k", 7}, {"n", 1}, {"e", 0.5}}));
  EXPECT_EQ(Error(schema, {{"mode", "medium"}}),
            R"(arguments.mode: must be one of ["fast","slow"] (enum), got "medium")");
  EXPECT_EQ(Error(schema, {{"k", 8}}), "arguments.k: must be 7 (const), got 8");
  EXPECT_EQ(Error(schema, {{"n", 0}}), "arguments.n: must be >= 1 (minimum), got 0");
  EXPECT_EQ(Error(schema, {{"n", 11}}), "arguments.n: must be <= 10 (maximum), got 11");
  EXPECT_EQ(Error(schema, {{"e", 0}}), "arguments.e: must be > 0 (exclusiveMinimum), got 0");
  EXPECT_EQ(Error(schema, {{"e", 1}}), "arguments.e: must be < 1 (exclusiveMaximum), got 1");
}

TEST(JsonSchemaTest, StringLengthCountsCodePoints) {
  Json schema = {{"type", "string"}, {"minLength", 2}, {"maxLength", 3}};
  EXPECT_TRUE(ValidateJson(schema, "h\xC3\xA9\xE2\x82\xAC", "s").ok());  // "hé€": 3 code points
  absl::Status st = ValidateJson(schema, "\xF0\x9F\x98\x80", "s");       // one emoji, 4 bytes
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "s: must be at least 2 characters long (minLength), got 1");
  EXPECT_FALSE(ValidateJson(schema, "abcd", "s").ok());
  EXPECT_EQ(CodePointCount("h\xC3\xA9"), 2u);
}

TEST(JsonSchemaTest, ArraysItemsAndCounts) {
  Json schema = {{"type", "array"},
                 {"minItems", 1},
                 {"maxItems", 2},
                 {"items", {{"type", "object"}, {"required", {"id"}}}}};
  EXPECT_TRUE(ValidateJson(schema, Json::parse(R"([{"id":1}])"), "list").ok());
  EXPECT_EQ(ValidateJson(schema, Json::array(), "list").message(),
            "list: must have at least 1 items (minItems), got 0");
  EXPECT_EQ(ValidateJson(schema, Json::parse("[{},{},{}]"), "list").message(),
            "list: must have at most 2 items (maxItems), got 3");
  EXPECT_EQ(ValidateJson(schema, Json::parse(R"([{"id":1},{}])"), "list").message(),
            "list[1].id: is required (required) but missing");
}

TEST(JsonSchemaTest, CombinatorsAndRefs) {
  Json schema = Json::parse(R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
    "properties": {
      "address": {"$ref": "#/$defs/address"},
      "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
      "one": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
      "missing": {"$ref": "#/$defs/nope"}
    },
    "additionalProperties": false
  })");
  EXPECT_TRUE(Ok(schema, {{"address", {{"city", "Paris"}}}, {"id", "x"}}));
  EXPECT_EQ(Error(schema, {{"address", {{"city", 5}}}}),
            "arguments.address.city: must be of type string (type), got integer");
  EXPECT_EQ(Error(schema, {{"id", true}}),
            "arguments.id: matches none of the allowed schemas (anyOf)");
  EXPECT_TRUE(Ok(schema, {{"one", 1.5}}));
  EXPECT_FALSE(Ok(schema, {{"one", 2}}));  // matches both
  EXPECT_NE(Error(schema, {{"missing", 1}}).find("cannot be resolved"), std::string::npos);
}

TEST(JsonSchemaTest, SelfReferenceTerminates) {
  Json schema = Json::parse(R"({"$ref": "#"})");
  EXPECT_FALSE(Ok(schema, 1));
}

TEST(JsonSchemaTest, NegativeOrParsedCountsBehave) {
  EXPECT_TRUE(Ok({{"type", "string"}, {"minLength", -1}}, ""));   // nonsense keyword ignored
  Json parsed = Json::parse(R"({"type":"array","maxItems":1})");  // unsigned when parsed
  EXPECT_FALSE(Ok(parsed, Json::array({1, 2})));
  EXPECT_TRUE(Ok(parsed, Json::array({1})));
}

TEST(JsonSchemaTest, BooleanSchemasAndUnknownKeywords) {
  EXPECT_TRUE(Ok(true, 1));
  EXPECT_FALSE(Ok(false, 1));
  EXPECT_TRUE(Ok({{"type", "string"}, {"format", "uri"}, {"pattern", "^x"}}, "anything"));
}

TEST(JsonSchemaTest, CheckSchemaRejectsBadSchemas) {
  EXPECT_TRUE(CheckSchema({{"type", "object"}}).ok());
  EXPECT_FALSE(CheckSchema(5).ok());
  EXPECT_FALSE(CheckSchema({{"type", "str"}}).ok());
  EXPECT_FALSE(CheckSchema({{"type", "object"}, {"properties", {{"a", {{"type", "wat"}}}}}}).ok());
  EXPECT_FALSE(CheckSchema({{"type", "object"}, {"required", "a"}}).ok());
}

TEST(JsonSchemaTest, DefaultsAreReadNotApplied) {
  Json schema = {
      {"type", "object"},
      {"properties",
       {{"limit", {{"type", "integer"}, {"default", 10}}}, {"q", {{"type", "string"}}}}}};
  EXPECT_EQ(SchemaDefaults(schema), Json({{"limit", 10}}));
  Json args = Json::object();
  EXPECT_TRUE(ValidateJson(schema, args).ok());
  EXPECT_TRUE(args.empty());
}

}  // namespace
}  // namespace contextd::protocol
