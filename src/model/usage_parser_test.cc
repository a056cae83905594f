#include "model/usage_parser.h"

#include <string>

#include "gtest/gtest.h"
#include "model/model_api.h"

namespace contextd::model {
namespace {

TEST(UsageParserTest, ReadsTheEventStreamAsItArrivesSplitAnywhere) {
  const std::string sse =
      "event: message_start\r\n"
      "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,"
      "\"cache_read_input_tokens\":900,\"cache_creation_input_tokens\":40,\"output_tokens\":1}}}"
      "\r\n\r\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: message_delta\ndata: "
      "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":77}}\n\n";
  for (size_t cut = 0; cut <= sse.size(); cut += 7) {
    UsageParser parser(/*event_stream=*/true, ApiRow(ModelApi::kAnthropicMessages).usage);
    parser.Feed(std::string_view(sse).substr(0, cut));
    parser.Feed(std::string_view(sse).substr(cut));
    parser.Finish();
    const ProviderUsage& u = parser.usage();
    ASSERT_TRUE(u.seen) << cut;
    EXPECT_EQ(u.input_tokens, 12);
    EXPECT_EQ(u.cache_read_input_tokens, 900);
    EXPECT_EQ(u.cache_creation_input_tokens, 40);
    EXPECT_EQ(u.output_tokens, 77);  // the delta's cumulative count wins
  }
}

TEST(UsageParserTest, ReadsAJsonBodyAndIgnoresWhatIsNotUsage) {
  UsageParser parser(/*event_stream=*/false, ApiRow(ModelApi::kAnthropicMessages).usage);
  parser.Feed("{\"id\":\"msg\",\"usage\":{\"input_tokens\":3,");
  parser.Feed("\"output_tokens\":4}}");
  parser.Finish();
  EXPECT_TRUE(parser.usage().seen);
  EXPECT_EQ(parser.usage().input_tokens, 3);
  EXPECT_EQ(parser.usage().output_tokens, 4);

  UsageParser error(/*event_stream=*/false, ApiRow(ModelApi::kAnthropicMessages).usage);
  error.Feed("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}");
  error.Finish();
  EXPECT_FALSE(error.usage().seen);

  UsageParser junk(/*event_stream=*/true, ApiRow(ModelApi::kAnthropicMessages).usage);
  junk.Feed("data: {not json \"usage\"\n\ndata: [1,2]\n");
  junk.Finish();
  EXPECT_FALSE(junk.usage().seen);
}

TEST(UsageParserTest, ReadsChatCompletionsUsageFromTheLastStreamChunk) {
  // With stream_options.include_usage, every chunk carries "usage":null but the last, whose
  // choices are empty.
  const std::string sse =
      "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
      "\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"}}],\"usage\":null}\n\n"
      "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":"
      "{\"prompt_tokens\":1200,\"completion_tokens\":7,\"total_tokens\":1207,"
      "\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\r\n\r\n"
      "data: [DONE]\n\n";
  for (size_t cut = 0; cut <= sse.size(); cut += 5) {
    UsageParser parser(/*event_stream=*/true, ApiRow(ModelApi::kOpenAIChat).usage);
    parser.Feed(std::string_view(sse).substr(0, cut));
    parser.Feed(std::string_view(sse).substr(cut));
    parser.Finish();
    const ProviderUsage& u = parser.usage();
    ASSERT_TRUE(u.seen) << cut;
    EXPECT_EQ(u.input_tokens, 176);  // prompt tokens not read from the cache
    EXPECT_EQ(u.cache_read_input_tokens, 1024);
    EXPECT_EQ(u.cache_creation_input_tokens, 0);
    EXPECT_EQ(u.output_tokens, 7);
  }

  // Without include_usage no chunk has one.
  UsageParser none(/*event_stream=*/true, ApiRow(ModelApi::kOpenAIChat).usage);
  none.Feed("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n");
  none.Finish();
  EXPECT_FALSE(none.usage().seen);
}

TEST(UsageParserTest, ReadsAChatCompletionsJsonBody) {
  UsageParser parser(/*event_stream=*/false, ApiRow(ModelApi::kOpenAIChat).usage);
  parser.Feed(
      "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"message\":"
      "{\"role\":\"assistant\",\"content\":\"ok\",\"usage\":\"not this\"}}],");
  parser.Feed("\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":4,\"total_tokens\":34}}");
  parser.Finish();
  EXPECT_TRUE(parser.usage().seen);
  EXPECT_EQ(parser.usage().input_tokens, 30);
  EXPECT_EQ(parser.usage().cache_read_input_tokens, 0);
  EXPECT_EQ(parser.usage().output_tokens, 4);

  // An error body (as relayed) has none; nor does a Messages-shaped usage read as Chat.
  UsageParser error(/*event_stream=*/false, ApiRow(ModelApi::kOpenAIChat).usage);
  error.Feed("{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}");
  error.Finish();
  EXPECT_FALSE(error.usage().seen);
  UsageParser other(/*event_stream=*/false, ApiRow(ModelApi::kOpenAIChat).usage);
  other.Feed("{\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}");
  other.Finish();
  EXPECT_EQ(other.usage().input_tokens, 0);
  EXPECT_EQ(other.usage().output_tokens, 0);
}

TEST(UsageParserTest, ReadsAResponsesStreamAndBody) {
  // The usage is null until response.completed carries it under `response`.
  const std::string sse =
      "event: response.created\n"
      "data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":"
      "\"in_progress\",\"output\":[],\"usage\":null},\"sequence_number\":0}\n\n"
      "event: response.output_text.delta\n"
      "data: {\"type\":\"response.output_text.delta\",\"delta\":\"\\\"usage\\\"\"}\n\n"
      "event: response.completed\r\n"
      "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":"
      "\"completed\",\"usage\":{\"input_tokens\":1200,\"input_tokens_details\":"
      "{\"cached_tokens\":1024},\"output_tokens\":7,\"output_tokens_details\":"
      "{\"reasoning_tokens\":3},\"total_tokens\":1207}},\"sequence_number\":5}\r\n\r\n";
  for (size_t cut = 0; cut <= sse.size(); cut += 7) {
    UsageParser parser(/*event_stream=*/true, ApiRow(ModelApi::kOpenAIResponses).usage);
    parser.Feed(std::string_view(sse).substr(0, cut));
    parser.Feed(std::string_view(sse).substr(cut));
    parser.Finish();
    const ProviderUsage& u = parser.usage();
    ASSERT_TRUE(u.seen) << cut;
    EXPECT_EQ(u.input_tokens, 176);  // input tokens not read from the cache
    EXPECT_EQ(u.cache_read_input_tokens, 1024);
    EXPECT_EQ(u.cache_creation_input_tokens, 0);
    EXPECT_EQ(u.output_tokens, 7);
  }

  UsageParser body(/*event_stream=*/false, ApiRow(ModelApi::kOpenAIResponses).usage);
  body.Feed(
      "{\"id\":\"resp_2\",\"object\":\"response\",\"output\":[{\"type\":\"message\","
      "\"content\":[{\"type\":\"output_text\",\"text\":\"ok\"}]}],");
  body.Feed(
      "\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":99},"
      "\"output_tokens\":4,\"total_tokens\":34}}");
  body.Finish();
  EXPECT_TRUE(body.usage().seen);
  EXPECT_EQ(body.usage().input_tokens, 0);  // cached tokens beyond the input are clamped
  EXPECT_EQ(body.usage().cache_read_input_tokens, 30);
  EXPECT_EQ(body.usage().output_tokens, 4);

  // A Chat-shaped usage is not read as Responses; an error body has none.
  UsageParser chat(/*event_stream=*/false, ApiRow(ModelApi::kOpenAIResponses).usage);
  chat.Feed("{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}");
  chat.Finish();
  EXPECT_EQ(chat.usage().input_tokens, 0);
  EXPECT_EQ(chat.usage().output_tokens, 0);
  UsageParser error(/*event_stream=*/true, ApiRow(ModelApi::kOpenAIResponses).usage);
  error.Feed("event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\"}\n\n");
  error.Finish();
  EXPECT_FALSE(error.usage().seen);
}

TEST(UsageParserTest, ReadsTheStreamAsServerSentEvents) {
  // The event stream is read by the SSE rules (transport::SseReader): a last event that no blank
  // line ended counts at Finish, "data:" needs no space, and a lone CR ends a line too.
  UsageParser unended(/*event_stream=*/true, ApiRow(ModelApi::kAnthropicMessages).usage);
  unended.Feed(
      "event: message_delta\ndata:{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5}}");
  unended.Finish();
  EXPECT_TRUE(unended.usage().seen);
  EXPECT_EQ(unended.usage().output_tokens, 5);

  UsageParser cr(/*event_stream=*/true, ApiRow(ModelApi::kOpenAIChat).usage);
  cr.Feed("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\r\r");
  cr.Feed("data: [DONE]\r\r");
  cr.Finish();
  EXPECT_TRUE(cr.usage().seen);
  EXPECT_EQ(cr.usage().input_tokens, 9);
  EXPECT_EQ(cr.usage().output_tokens, 2);
}

}  // namespace
}  // namespace contextd::model
