#include "protocol/jsonrpc.h"

#include <string>

#include "gtest/gtest.h"

namespace contextd::protocol {
namespace {

// The single item of a non-batch payload.
Parsed One(std::string_view raw, size_t max = 4 << 20) {
  Incoming in = ParseIncoming(raw, max);
  EXPECT_FALSE(in.batch);
  EXPECT_EQ(in.items.size(), 1u);
  return in.items.at(0);
}

ParseError Err(std::string_view raw, size_t max = 4 << 20) {
  Parsed p = One(raw, max);
  EXPECT_TRUE(std::holds_alternative<ParseError>(p)) << raw;
  if (!std::holds_alternative<ParseError>(p)) return {};
  return std::get<ParseError>(p);
}

Message Msg(std::string_view raw) {
  Parsed p = One(raw);
  EXPECT_TRUE(std::holds_alternative<Message>(p)) << raw;
  if (!std::holds_alternative<Message>(p)) return {};
  return std::get<Message>(p);
}

TEST(JsonRpcTest, ParsesRequestWithIntegerAndStringIds) {
  Message m = Msg(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"x"}})");
  EXPECT_EQ(m.kind, MessageKind::kRequest);
  EXPECT_EQ(m.id, 7);
  EXPECT_EQ(m.method, "tools/list");
  EXPECT_EQ(m.params["cursor"], "x");
  EXPECT_FALSE(m.batched);

  Message s = Msg(R"({"jsonrpc":"2.0","id":"abc","method":"ping"})");
  EXPECT_EQ(s.kind, MessageKind::kRequest);
  EXPECT_EQ(s.id, "abc");
  EXPECT_TRUE(s.params.is_null());

  Message neg = Msg(R"({"jsonrpc":"2.0","id":-3,"method":"ping","params":[1,2]})");
  EXPECT_EQ(neg.id, -3);
  EXPECT_TRUE(neg.params.is_array());
}

TEST(JsonRpcTest, ParsesNotificationAndResponses) {
  Message n = Msg(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_EQ(n.kind, MessageKind::kNotification);
  EXPECT_TRUE(n.id.is_null());

  Message r = Msg(R"({"jsonrpc":"2.0","id":1,"result":{"ok":true}})");
  EXPECT_EQ(r.kind, MessageKind::kResponse);
  EXPECT_EQ(r.result["ok"], true);

  Message e = Msg(R"({"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}})");
  EXPECT_EQ(e.kind, MessageKind::kErrorResponse);
  EXPECT_EQ(e.error["code"], -1);

  Message en = Msg(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}})");
  EXPECT_EQ(en.kind, MessageKind::kErrorResponse);
  EXPECT_TRUE(en.id.is_null());
}

TEST(JsonRpcTest, DuplicateKeyIsInvalidRequestNamingThePath) {
  ParseError e = Err(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fs__read",)"
                     R"("arguments":{"path":"/a","\u0070ath":"/etc/shadow"}}})");
  EXPECT_EQ(e.code, kInvalidRequest);
  EXPECT_EQ(e.id, 3);
  EXPECT_EQ(e.message, "invalid request: params.arguments: duplicate key \"path\"");
  // At the top level, the id cannot be trusted when it is the duplicate.
  ParseError top = Err(R"({"jsonrpc":"2.0","id":3,"id":4,"method":"ping"})");
  EXPECT_EQ(top.message, "invalid request: top level: duplicate key \"id\"");
  EXPECT_EQ(top.id, 4);  // nlohmann keeps the last; echoed as read
  // Sibling objects may share names; a response with one is read as before.
  Message ok = Msg(R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"},)"
                   R"({"type":"text","text":"b"}]}})");
  EXPECT_EQ(ok.kind, MessageKind::kResponse);
  // A batch is refused as a whole.
  Incoming batch = ParseIncoming(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
                                 R"({"jsonrpc":"2.0","id":2,"method":"ping","method":"x"}])");
  EXPECT_TRUE(batch.batch);
  ASSERT_EQ(batch.items.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<ParseError>(batch.items[0]));
  EXPECT_EQ(std::get<ParseError>(batch.items[0]).message,
            "invalid request: 1: duplicate key \"method\"");
}

TEST(JsonRpcTest, MalformedJsonIsParseError) {
  for (std::string_view raw : {"", "{", "{\"jsonrpc\":\"2.0\",}", "nul", "[1,2", "{\"a\":1}}"}) {
    ParseError e = Err(raw);
    EXPECT_EQ(e.code, kParseError) << raw;
    EXPECT_TRUE(e.id.is_null());
  }
}

TEST(JsonRpcTest, InvalidUtf8IsParseError) {
  std::string raw =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"s\":\"\xff\xfe\"}}";
  EXPECT_EQ(Err(raw).code, kParseError);
  std::string overlong = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\xaf\"}";
  EXPECT_EQ(Err(overlong).code, kParseError);
}

TEST(JsonRpcTest, NonObjectJsonIsInvalidRequest) {
  for (std::string_view raw : {"1", "\"x\"", "null", "true"}) {
    EXPECT_EQ(Err(raw).code, kInvalidRequest) << raw;
  }
}

TEST(JsonRpcTest, WrongFieldTypesAreInvalidRequest) {
  struct Case {
    const char* raw;
    bool id_echoed;
  };
  const Case cases[] = {
      {R"({"id":1,"method":"ping"})", true},                             // no jsonrpc
      {R"({"jsonrpc":"1.0","id":1,"method":"ping"})", true},             // wrong version
      {R"({"jsonrpc":2.0,"id":1,"method":"ping"})", true},               // version not a string
      {R"({"jsonrpc":"2.0","id":1,"method":5})", true},                  // method not a string
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", false},         // null id
      {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", false},          // fractional id
      {R"({"jsonrpc":"2.0","id":true,"method":"ping"})", false},         // bool id
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", false},      // object id
      {R"({"jsonrpc":"2.0","id":[1],"method":"ping"})", false},          // array id
      {R"({"jsonrpc":"2.0","id":1,"method":"ping","params":3})", true},  // scalar params
      {R"({"jsonrpc":"2.0","id":1,"method":"ping","params":"x"})", true},
      {R"({"jsonrpc":"2.0","id":1,"method":"ping","result":{}})", true},  // method and result
      {R"({"jsonrpc":"2.0","id":1})", true},                              // neither
      {R"({"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}})", true},
      {R"({"jsonrpc":"2.0","result":{}})", false},  // response without id
      {R"({"jsonrpc":"2.0","id":1,"error":"bad"})", true},
      {R"({"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}})", true},
  };
  for (const auto& c : cases) {
    ParseError e = Err(c.raw);
    EXPECT_EQ(e.code, kInvalidRequest) << c.raw;
    EXPECT_FALSE(e.message.empty());
    if (c.id_echoed) {
      EXPECT_EQ(e.id, 1) << c.raw;
    } else {
      EXPECT_TRUE(e.id.is_null()) << c.raw;
    }
  }
}

TEST(JsonRpcTest, OversizeIsRejectedBeforeParsing) {
  std::string raw = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  ParseError e = Err(raw, raw.size() - 1);
  EXPECT_EQ(e.code, kInvalidRequest);
  EXPECT_NE(e.message.find("too large"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<Message>(One(raw, raw.size())));
}

TEST(JsonRpcTest, DeepNestingIsRejected) {
  std::string deep(kMaxJsonDepth + 1, '[');
  deep += std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ(Err(deep).code, kParseError);
  // Brackets inside strings do not count.
  std::string in_string = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":")" +
                          std::string(1000, '[') + R"("}})";
  EXPECT_TRUE(std::holds_alternative<Message>(One(in_string)));
}

TEST(JsonRpcTest, BatchesYieldOneItemEach) {
  Incoming in =
      ParseIncoming(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},5,{"jsonrpc":"2.0","method":"n"},)"
                    R"({"jsonrpc":"2.0","id":null,"method":"x"}])");
  ASSERT_TRUE(in.batch);
  ASSERT_EQ(in.items.size(), 4u);
  ASSERT_TRUE(std::holds_alternative<Message>(in.items[0]));
  EXPECT_TRUE(std::get<Message>(in.items[0]).batched);
  ASSERT_TRUE(std::holds_alternative<ParseError>(in.items[1]));
  EXPECT_EQ(std::get<ParseError>(in.items[1]).code, kInvalidRequest);
  ASSERT_TRUE(std::holds_alternative<Message>(in.items[2]));
  EXPECT_EQ(std::get<Message>(in.items[2]).kind, MessageKind::kNotification);
  ASSERT_TRUE(std::holds_alternative<ParseError>(in.items[3]));
}

TEST(JsonRpcTest, EmptyBatchIsOneInvalidRequest) {
  Incoming in = ParseIncoming("[]");
  EXPECT_TRUE(in.batch);
  ASSERT_EQ(in.items.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<ParseError>(in.items[0]));
  EXPECT_EQ(std::get<ParseError>(in.items[0]).code, kInvalidRequest);
}

TEST(JsonRpcTest, BuildersProduceTheEnvelope) {
  EXPECT_EQ(Serialize(MakeResult(1, Json::object())), R"({"id":1,"jsonrpc":"2.0","result":{}})");
  EXPECT_EQ(Serialize(MakeError("a", kMethodNotFound, "nope")),
            R"({"error":{"code":-32601,"message":"nope"},"id":"a","jsonrpc":"2.0"})");
  Json data = {{"uri", "x"}};
  EXPECT_EQ(MakeError(nullptr, kResourceNotFound, "m", data)["error"]["data"]["uri"], "x");
  EXPECT_EQ(Serialize(MakeRequest(3, "roots/list", nullptr)),
            R"({"id":3,"jsonrpc":"2.0","method":"roots/list"})");
  EXPECT_EQ(Serialize(MakeNotification("notifications/initialized", nullptr)),
            R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
}

TEST(JsonRpcTest, SerializeReplacesInvalidUtf8) {
  Json j = {{"s", std::string("a\xff") + "b"}};
  std::string out = Serialize(j);
  EXPECT_NE(out.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD
  EXPECT_TRUE(std::holds_alternative<ParseError>(ParseIncoming("\xff").items[0]));
}

TEST(JsonRpcTest, RoundTrip) {
  Json req = MakeRequest("r-1", "tools/call", {{"name", "echo"}, {"arguments", {{"x", 1}}}});
  Message m = Msg(Serialize(req));
  EXPECT_EQ(m.id, "r-1");
  EXPECT_EQ(m.params["arguments"]["x"], 1);
}

}  // namespace
}  // namespace contextd::protocol
