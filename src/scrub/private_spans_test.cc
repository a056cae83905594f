#include "scrub/private_spans.h"

#include <gtest/gtest.h>

#include <string>

namespace contextd::scrub {
namespace {

const std::string kW(kWithheldPrivate);

TEST(PrivateSpansTest, TextWithoutTagsIsUnchanged) {
  for (std::string_view text :
       {"", "plain text", "a < b && c > d", "<p>html</p>", "<priv", "<privateKey>x</privateKey>",
        "<private/>", "</private", "</private x>", "<private", "private>", "<<>>"}) {
    EXPECT_FALSE(ContainsPrivate(text)) << text;
    EXPECT_EQ(WithholdPrivate(text), text);
  }
}

TEST(PrivateSpansTest, WithholdsTheInsideOfASpan) {
  EXPECT_EQ(WithholdPrivate("key <private>hunter2</private> done"), "key " + kW + " done");
  EXPECT_EQ(WithholdPrivate("<private></private>"), kW);
  EXPECT_EQ(WithholdPrivate("a<private>1</private>b<private>2</private>c"),
            "a" + kW + "b" + kW + "c");
  EXPECT_TRUE(ContainsPrivate("key <private>hunter2</private> done"));
}

TEST(PrivateSpansTest, TagsMatchCaseInsensitivelyWithWhitespaceAndAttributes) {
  EXPECT_EQ(WithholdPrivate("x<PRIVATE>s</Private>y"), "x" + kW + "y");
  EXPECT_EQ(WithholdPrivate("x<private\n>s</private\t >y"), "x" + kW + "y");
  // Attributes are withheld with the span.
  EXPECT_EQ(WithholdPrivate("x<private reason=\"mine\">s</private>y"), "x" + kW + "y");
  EXPECT_EQ(WithholdPrivate("x<private a='1>2'>s</private>y"), "x" + kW + "y");
}

TEST(PrivateSpansTest, UnclosedSpanWithholdsTheRest) {
  EXPECT_EQ(WithholdPrivate("before <private>secret to the end"), "before " + kW);
  EXPECT_EQ(WithholdPrivate("before <private reason=never closed"), "before " + kW);
  // A window cut inside the closing tag.
  EXPECT_EQ(WithholdPrivate("before <private>secret</priv"), "before " + kW);
  EXPECT_EQ(WithholdPrivate("before <private>secret</private"), "before " + kW);
}

TEST(PrivateSpansTest, OrphanClosingTagWithholdsEverythingBefore) {
  // A window that starts inside a span: its opening tag is not in the text.
  EXPECT_EQ(WithholdPrivate("cret tail</private> public"), kW + " public");
  EXPECT_EQ(WithholdPrivate("a<private>1</private>b</private>c"), kW + "c");
  EXPECT_EQ(WithholdPrivate("x</private><private>y</private>z"), kW + "z");
}

TEST(PrivateSpansTest, SpansNest) {
  EXPECT_EQ(WithholdPrivate("a<private>1<private>2</private>3</private>b"), "a" + kW + "b");
  EXPECT_EQ(WithholdPrivate("a<private>1<private>2</private>3"), "a" + kW);
}

TEST(PrivateSpansTest, AdjacentSpansShareOneMarker) {
  EXPECT_EQ(WithholdPrivate("a<private>1</private><private>2</private>b"), "a" + kW + "b");
}

TEST(PrivateSpansTest, Idempotent) {
  for (std::string_view text :
       {"a<private>1</private>b", "<private>x", "x</private>y", "a<private>1</private>b</private>",
        "<private a=1>x</private>", "<<private>x</private>", "</<private>x</private>"}) {
    std::string once = WithholdPrivate(text);
    EXPECT_EQ(WithholdPrivate(once), once) << text;
  }
  EXPECT_EQ(WithholdPrivate(kWithheldPrivate), kW);
}

TEST(PrivateSpansTest, NonTagLookalikesAroundSpansStay) {
  EXPECT_EQ(WithholdPrivate("<privateKey><private>s</private></privateKey>"),
            "<privateKey>" + kW + "</privateKey>");
  EXPECT_EQ(WithholdPrivate("<<private>s</private>>"), "<" + kW + ">");
}

TEST(PrivateSpansTest, BinaryAndUtf8AreBytes) {
  std::string text("\0\xff<private>\xc3\xa9\0</private>\xe2\x82", 26);
  EXPECT_EQ(WithholdPrivate(text), std::string("\0\xff", 2) + kW + "\xe2\x82");
}

TEST(PrivateSpansTest, LongInputsAreLinear) {
  // Many '<' without a tag, many opening tags, many orphan closing tags: each finishes at once.
  std::string lts(1 << 20, '<');
  EXPECT_EQ(WithholdPrivate(lts), lts);
  std::string opens;
  for (int i = 0; i < 50000; ++i) opens += "<private x";
  EXPECT_EQ(WithholdPrivate(opens), kW);
  std::string closes;
  for (int i = 0; i < 50000; ++i) closes += "a</private>";
  EXPECT_EQ(WithholdPrivate(closes), kW);
}

}  // namespace
}  // namespace contextd::scrub
