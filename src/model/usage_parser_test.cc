#include "model/usage_parser.h"

#include <string>

#include "gtest/gtest.h"

namespace contextd::model {
namespace {

TEST(UsageParserTest, ReadsTheEventStreamAsItArrivesSplitAnywhere) {
  const std::string sse =
      "event: message_start\r\n"
      "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":12,"
      "\"cache_read_input_tokens\":900,\"cache_creation_input_tokens\":40,\"output_tokens\":1}}}"
      "\r\n\r\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":77}}\n\n";
  for (size_t cut = 0; cut <= sse.size(); cut += 7) {
    UsageParser parser(/*event_stream=*/true);
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
  UsageParser parser(/*event_stream=*/false);
  parser.Feed("{\"id\":\"msg\",\"usage\":{\"input_tokens\":3,");
  parser.Feed("\"output_tokens\":4}}");
  parser.Finish();
  EXPECT_TRUE(parser.usage().seen);
  EXPECT_EQ(parser.usage().input_tokens, 3);
  EXPECT_EQ(parser.usage().output_tokens, 4);

  UsageParser error(/*event_stream=*/false);
  error.Feed("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}");
  error.Finish();
  EXPECT_FALSE(error.usage().seen);

  UsageParser junk(/*event_stream=*/true);
  junk.Feed("data: {not json \"usage\"\n\ndata: [1,2]\n");
  junk.Finish();
  EXPECT_FALSE(junk.usage().seen);
}

}  // namespace
}  // namespace contextd::model
