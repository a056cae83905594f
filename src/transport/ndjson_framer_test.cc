#include "transport/ndjson_framer.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace contextd::transport {
namespace {

// Collects events as strings: lines verbatim, oversize lines as "<too long N>".
struct Collector {
  std::vector<std::string> out;
  bool with_sizes = true;
  void operator()(const NdjsonFramer::Event& ev) {
    if (ev.kind == NdjsonFramer::Event::Kind::kLine) {
      out.emplace_back(ev.line);
    } else {
      out.push_back(with_sizes ? "<too long " + std::to_string(ev.size) + ">" : "<too long>");
    }
  }
};

std::vector<std::string> FeedAll(NdjsonFramer& f, const std::vector<std::string>& chunks,
                                 bool finish = true, bool with_sizes = true) {
  Collector c;
  c.with_sizes = with_sizes;
  for (const auto& chunk : chunks) f.Feed(chunk, std::ref(c));
  if (finish) f.Finish(std::ref(c));
  return c.out;
}

TEST(NdjsonFramerTest, SplitsLinesAndStripsCarriageReturn) {
  NdjsonFramer f(100);
  EXPECT_EQ(FeedAll(f, {"a\nbb\r\nccc\n"}), (std::vector<std::string>{"a", "bb", "ccc"}));
}

TEST(NdjsonFramerTest, JoinsPartialReads) {
  NdjsonFramer f(100);
  EXPECT_EQ(FeedAll(f, {"{\"a\":", "1}", "\n{\"b\"", ":2}\r", "\n"}),
            (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}));
  EXPECT_EQ(f.buffered_bytes(), 0u);
}

TEST(NdjsonFramerTest, SkipsBlankLines) {
  NdjsonFramer f(100);
  EXPECT_EQ(FeedAll(f, {"\n\r\n  \t\nx\n\n"}), (std::vector<std::string>{"x"}));
}

TEST(NdjsonFramerTest, FinishEmitsUnterminatedLastLine) {
  NdjsonFramer f(100);
  EXPECT_EQ(FeedAll(f, {"a\nlast"}), (std::vector<std::string>{"a", "last"}));
  // Without Finish the tail stays buffered.
  NdjsonFramer g(100);
  EXPECT_EQ(FeedAll(g, {"a\nlast"}, /*finish=*/false), (std::vector<std::string>{"a"}));
  EXPECT_EQ(g.buffered_bytes(), 4u);
}

TEST(NdjsonFramerTest, ExactlyMaxIsAcceptedWithCrLf) {
  NdjsonFramer f(5);
  EXPECT_EQ(FeedAll(f, {"12345\r\n", "12345\n"}), (std::vector<std::string>{"12345", "12345"}));
}

TEST(NdjsonFramerTest, OversizeLineInOneChunkReportedOnceThenResumes) {
  NdjsonFramer f(5);
  EXPECT_EQ(FeedAll(f, {"ok\n123456\nok2\n"}),
            (std::vector<std::string>{"ok", "<too long 6>", "ok2"}));
}

TEST(NdjsonFramerTest, OversizeLineAcrossChunksIsNotBuffered) {
  NdjsonFramer f(8);
  Collector c;
  f.Feed("ab\n1234", std::ref(c));
  f.Feed("567890", std::ref(c));  // crosses the limit: reported now, bytes dropped
  EXPECT_EQ(f.buffered_bytes(), 0u);
  for (int i = 0; i < 1000; ++i) f.Feed(std::string(1000, 'x'), std::ref(c));
  EXPECT_EQ(f.buffered_bytes(), 0u);  // endless line: nothing accumulates
  f.Feed("yyy\nnext\n", std::ref(c));
  f.Finish(std::ref(c));
  EXPECT_EQ(c.out, (std::vector<std::string>{"ab", "<too long 10>", "next"}));
}

TEST(NdjsonFramerTest, OversizeCompletedByNewlineChunk) {
  NdjsonFramer f(4);
  EXPECT_EQ(FeedAll(f, {"123", "45\nz\n"}), (std::vector<std::string>{"<too long 5>", "z"}));
}

TEST(NdjsonFramerTest, OversizeAtEndOfStreamIsReportedOnce) {
  NdjsonFramer f(4);
  EXPECT_EQ(FeedAll(f, {"1234567"}), (std::vector<std::string>{"<too long 7>"}));
}

TEST(NdjsonFramerTest, ByteByByteEqualsWhole) {
  const std::string input = "{\"id\":1}\r\n\n{\"id\":2}\nxxxxxxxxxxxxxxxxxxxxxxxxx\n{\"id\":3}";
  NdjsonFramer whole(16);
  // The reported size of an oversize line depends on where it crossed the limit; compare kinds.
  auto expected = FeedAll(whole, {input}, true, /*with_sizes=*/false);
  std::vector<std::string> bytes;
  for (char ch : input) bytes.emplace_back(1, ch);
  NdjsonFramer split(16);
  EXPECT_EQ(FeedAll(split, bytes, true, /*with_sizes=*/false), expected);
  EXPECT_EQ(expected.size(), 4u);
}

}  // namespace
}  // namespace contextd::transport
