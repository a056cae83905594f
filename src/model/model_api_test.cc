#include "model/model_api.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/model_request.h"

namespace contextd::model {
namespace {

using ::testing::HasSubstr;

TEST(ModelApiTest, RowsAreInTheOrderOfTheirKeyAndNameAProvider) {
  const auto& apis = ModelApis();
  for (size_t i = 0; i < apis.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(apis[i].api), i) << apis[i].name;
    EXPECT_EQ(&ApiRow(apis[i].api), &apis[i]);
    EXPECT_NE(FindProvider(apis[i].provider), nullptr) << apis[i].name;
    EXPECT_NE(apis[i].parse, nullptr);
    EXPECT_FALSE(apis[i].routes.empty());
  }
  EXPECT_STREQ(ModelApiName(ModelApi::kAnthropicMessages), "anthropic");
  EXPECT_STREQ(ModelApiName(ModelApi::kOpenAIChat), "openai_chat");
  EXPECT_STREQ(ModelApiName(ModelApi::kOpenAIResponses), "openai_responses");
}

TEST(ModelApiTest, EveryPathIsServedOnce) {
  std::set<std::string> paths;
  for (const ModelApiRow& api : ModelApis()) {
    for (const ModelApiRoute& route : api.routes) {
      EXPECT_TRUE(paths.insert(std::string(route.path)).second) << route.path;
      EXPECT_TRUE(route.path.starts_with("/v1/")) << route.path;
    }
  }
  EXPECT_EQ(paths, (std::set<std::string>{"/v1/messages", "/v1/messages/count_tokens",
                                          "/v1/chat/completions", "/v1/responses",
                                          "/v1/responses/compact"}));
}

TEST(ModelApiTest, EachRowParsesItsOwnApi) {
  auto messages =
      ApiRow(ModelApi::kAnthropicMessages)
          .parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", nullptr);
  ASSERT_TRUE(messages.ok()) << messages.status();
  EXPECT_EQ((*messages)->api(), ModelApi::kAnthropicMessages);
  auto chat = ApiRow(ModelApi::kOpenAIChat)
                  .parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", nullptr);
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ((*chat)->api(), ModelApi::kOpenAIChat);
  auto responses =
      ApiRow(ModelApi::kOpenAIResponses).parse(R"({"model":"m","input":"hi"})", nullptr);
  ASSERT_TRUE(responses.ok()) << responses.status();
  EXPECT_EQ((*responses)->api(), ModelApi::kOpenAIResponses);
  EXPECT_FALSE(ApiRow(ModelApi::kOpenAIChat).parse("[]", nullptr).ok());
}

TEST(ModelApiTest, TheSharedRouteGoesWhereTheHeadersSay) {
  auto with = [](std::set<std::string> headers) {
    return std::string(ClaimingProvider([&](std::string_view h) {
                         return headers.count(std::string(h)) > 0;
                       }).name);
  };
  EXPECT_EQ(with({"anthropic-version"}), "anthropic");
  EXPECT_EQ(with({"x-api-key"}), "anthropic");
  EXPECT_EQ(with({"authorization"}), "openai");
  EXPECT_EQ(with({}), "openai");
}

TEST(ModelApiTest, ErrorsTakeTheProvidersShape) {
  const ModelProvider& anthropic = *FindProvider("anthropic");
  const ModelProvider& openai = *FindProvider("openai");
  EXPECT_EQ(anthropic.error_body(401, "no"),
            R"({"type":"error","error":{"type":"authentication_error","message":"no"}})");
  EXPECT_EQ(anthropic.error_body(502, "x"),
            R"({"type":"error","error":{"type":"api_error","message":"x"}})");
  EXPECT_EQ(openai.error_body(504, "slow"),
            R"({"error":{"message":"slow","type":"server_error","param":null,)"
            R"("code":"upstream_timeout"}})");
  EXPECT_THAT(openai.error_body(400, "bad"), HasSubstr(R"("code":null)"));
  EXPECT_EQ(FindProvider("gemini"), nullptr);
}

}  // namespace
}  // namespace contextd::model
