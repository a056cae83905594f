#include "transport/sse_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace contextd::transport {
namespace {

// Feeds `chunks` in order, then Finish(); returns the events.
std::vector<std::string> Events(SseReader& reader, const std::vector<std::string_view>& chunks) {
  std::vector<std::string> out;
  auto on_event = [&](std::string e) { out.push_back(std::move(e)); };
  for (std::string_view c : chunks) reader.Feed(c, on_event);
  reader.Finish(on_event);
  return out;
}

TEST(SseReaderTest, EventsWithCrLfAndMultiLineData) {
  SseReader reader(64);
  EXPECT_EQ(Events(reader, {"id: 7\r\ndata: a\r", "\ndata: b\r\n\r\n: ping\n\ndata: c\n\n"}),
            (std::vector<std::string>{"a\nb", "c"}));
  EXPECT_EQ(reader.last_event_id(), "7");
  EXPECT_EQ(reader.dropped(), 0);
}

TEST(SseReaderTest, AnOverlongLineDropsItsEventHowEverItArrives) {
  const std::string big = "data: " + std::string(100, 'x');
  const std::string stream =
      "data: kept\n\n" + big + "\ndata: rest of the dropped event\n\n" + "data: next\n\n";
  const std::vector<std::string> want = {"kept", "next"};
  {
    SseReader whole(64);
    EXPECT_EQ(Events(whole, {stream}), want);
    EXPECT_EQ(whole.dropped(), 1);
  }
  // The overlong line arrives in pieces and its '\n' starts the next chunk: that '\n' ends the
  // overlong line, not the event (it used to dispatch "rest of the dropped event").
  {
    SseReader chunked(64);
    const size_t cut = stream.find('\n', 12);
    std::string_view s(stream);
    EXPECT_EQ(Events(chunked, {s.substr(0, 40), s.substr(40, cut - 40), s.substr(cut)}), want);
    EXPECT_EQ(chunked.dropped(), 1);
  }
  // An overlong comment line drops its event too, whole or in pieces.
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{1000}}) {
    SseReader reader(64);
    const std::string comment = "data: a\n:" + std::string(100, 'c') + "\ndata: b\n\ndata: c\n\n";
    std::vector<std::string_view> chunks;
    for (size_t pos = 0; pos < comment.size(); pos += chunk) {
      chunks.push_back(std::string_view(comment).substr(pos, chunk));
    }
    EXPECT_EQ(Events(reader, chunks), (std::vector<std::string>{"c"})) << "chunk " << chunk;
    EXPECT_EQ(reader.dropped(), 1);
  }
}

TEST(SseReaderTest, RetryIsParsedOnlyWhenItIsANumber) {
  SseReader reader(64);
  Events(reader, {"retry: 1500\n\nretry: soon\n\nretry: 1234567890\n\n"});
  ASSERT_TRUE(reader.retry_ms().has_value());
  EXPECT_EQ(*reader.retry_ms(), 1500);
}

}  // namespace
}  // namespace contextd::transport
