#include "cli/internal/header_lines.h"

#include <gtest/gtest.h>

namespace contextd::cli::internal {
namespace {

constexpr char kName[] = "X-Contextd-Project";

TEST(HeaderLinesTest, ReadsAValueWhateverTheNameCaseAndBlanks) {
  EXPECT_EQ(HeaderLineValue("A: 1\n  x-contextd-PROJECT :  /p q \r\nB: 2", kName), "/p q");
  EXPECT_EQ(HeaderLineValue("A: 1\nno colon here", kName), std::nullopt);
  EXPECT_EQ(HeaderLineValue("", kName), std::nullopt);
  // The first line naming it, as connect writes it once.
  EXPECT_EQ(HeaderLineValue("X-Contextd-Project: a\nX-Contextd-Project: b", kName), "a");
}

TEST(HeaderLinesTest, SetAppendsAndRemoveGivesTheBlockBackByteForByte) {
  for (const char* block : {"", "A: 1", "A: 1\n", "A: 1\r\nB:2\r\n", "\n", "weird line\n  C : 3"}) {
    std::string set = SetHeaderLine(block, kName, "/work/p");
    EXPECT_EQ(HeaderLineValue(set, kName), "/work/p") << block;
    EXPECT_EQ(RemoveHeaderLine(set, kName), block) << set;
  }
  EXPECT_EQ(SetHeaderLine("", kName, "/p"), "X-Contextd-Project: /p");
  EXPECT_EQ(SetHeaderLine("A: 1", kName, "/p"), "A: 1\nX-Contextd-Project: /p");
  EXPECT_EQ(SetHeaderLine("A: 1\n", kName, "/p"), "A: 1\nX-Contextd-Project: /p\n");
  EXPECT_EQ(SetHeaderLine("A: 1\r\n", kName, "/p"), "A: 1\r\nX-Contextd-Project: /p\r\n");
}

TEST(HeaderLinesTest, SetReplacesInPlaceAndDropsLaterDuplicates) {
  EXPECT_EQ(SetHeaderLine("A: 1\nx-contextd-project: old\r\nB: 2\nX-CONTEXTD-PROJECT: older", kName,
                          "/new"),
            "A: 1\nX-Contextd-Project: /new\r\nB: 2");
  // Same value twice: the same block.
  std::string once = SetHeaderLine("A: 1", kName, "/p");
  EXPECT_EQ(SetHeaderLine(once, kName, "/p"), once);
}

TEST(HeaderLinesTest, RemoveKeepsOtherLinesAndBlanks) {
  EXPECT_EQ(RemoveHeaderLine("A: 1\nX-Contextd-Project: /p\n\nB: 2", kName), "A: 1\n\nB: 2");
  EXPECT_EQ(RemoveHeaderLine("X-Contextd-Project: /p", kName), "");
  // A name that only starts like it is another header.
  EXPECT_EQ(RemoveHeaderLine("X-Contextd-Projects: 1", kName), "X-Contextd-Projects: 1");
}

}  // namespace
}  // namespace contextd::cli::internal
