#include "events/subject.h"

#include <gtest/gtest.h>

#include "events/publisher.h"

namespace contextd::events {
namespace {

TEST(SubjectToken, KeepsPlainValues) {
  EXPECT_EQ(SubjectToken("local"), "local");
  EXPECT_EQ(SubjectToken("ses_0123abcd-EF_9"), "ses_0123abcd-EF_9");
}

TEST(SubjectToken, EscapesWhatNatsReservesAndTheEscapeItself) {
  EXPECT_EQ(SubjectToken("a.b"), "a%2Eb");
  EXPECT_EQ(SubjectToken("*"), "%2A");
  EXPECT_EQ(SubjectToken(">"), "%3E");
  EXPECT_EQ(SubjectToken("my project\t1"), "my%20project%091");
  EXPECT_EQ(SubjectToken("100%"), "100%25");
  EXPECT_EQ(SubjectToken("~x"), "%7Ex");
  EXPECT_EQ(SubjectToken("caf\xc3\xa9"), "caf%C3%A9");
}

TEST(SubjectToken, EmptyIsTheNoValueToken) {
  EXPECT_EQ(SubjectToken(""), "%");
  EXPECT_NE(SubjectToken("%"), "%");
}

TEST(SubjectToken, LongValuesAreHashed) {
  std::string long_value(200, 'x');
  std::string token = SubjectToken(long_value);
  ASSERT_EQ(token.size(), 33u);
  EXPECT_EQ(token[0], '~');
  EXPECT_EQ(token, SubjectToken(long_value));  // stable
  EXPECT_NE(token, SubjectToken(std::string(200, 'y')));
  // 43 dots escape to 129 bytes: hashed too.
  EXPECT_EQ(SubjectToken(std::string(43, '.'))[0], '~');
  EXPECT_EQ(SubjectToken(std::string(42, '.')).size(), 126u);
  std::string value;
  EXPECT_FALSE(UnescapeSubjectToken(token, &value).ok());
}

TEST(SubjectToken, RoundTripsAndNeverProducesReservedBytes) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  for (size_t i = 0; i + 40 <= all.size(); i += 40) {
    std::string value = all.substr(i, 40);
    std::string token = SubjectToken(value);
    EXPECT_EQ(token.find_first_of(".*> \t\r\n"), std::string::npos) << token;
    std::string back;
    ASSERT_TRUE(UnescapeSubjectToken(token, &back).ok()) << token;
    EXPECT_EQ(back, value);
  }
  std::string back = "x";
  ASSERT_TRUE(UnescapeSubjectToken("%", &back).ok());
  EXPECT_EQ(back, "");
}

TEST(SubjectToken, UnescapeRejectsMalformedTokens) {
  std::string v;
  EXPECT_FALSE(UnescapeSubjectToken("a%2", &v).ok());
  EXPECT_FALSE(UnescapeSubjectToken("a%2e", &v).ok());  // lowercase: not canonical
  EXPECT_FALSE(UnescapeSubjectToken("a.b", &v).ok());
  EXPECT_FALSE(UnescapeSubjectToken("", &v).ok());
}

TEST(EventSubject, JoinsEscapedParts) {
  EXPECT_EQ(EventSubject("contextd", "acme", "a.b", "ses_1", "branch.created"),
            "contextd.acme.a%2Eb.ses_1.branch.created");
  EXPECT_EQ(EventSubject("x.y", "t", "p", "", "memory.recorded"), "x.y.t.p.%.memory.recorded");
}

TEST(ValidateSubjectPrefix, AcceptsTokensAndRejectsWildcardsAndEmptyTokens) {
  EXPECT_TRUE(ValidateSubjectPrefix("contextd").ok());
  EXPECT_TRUE(ValidateSubjectPrefix("org.contextd").ok());
  EXPECT_FALSE(ValidateSubjectPrefix("").ok());
  EXPECT_FALSE(ValidateSubjectPrefix("a..b").ok());
  EXPECT_FALSE(ValidateSubjectPrefix(".a").ok());
  EXPECT_FALSE(ValidateSubjectPrefix("a.").ok());
  EXPECT_FALSE(ValidateSubjectPrefix("a.*").ok());
  EXPECT_FALSE(ValidateSubjectPrefix("a.>").ok());
  EXPECT_FALSE(ValidateSubjectPrefix("a b").ok());
}

TEST(RedactNatsUrlTest, HidesUserinfoOfEveryServer) {
  EXPECT_EQ(RedactNatsUrl("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
  EXPECT_EQ(RedactNatsUrl("nats://alice:s3cret@h:4222"), "nats://***@h:4222");
  EXPECT_EQ(RedactNatsUrl("tls://tok3n@a:1,nats://b:2,nats://u:p@c:3"),
            "tls://***@a:1,nats://b:2,nats://***@c:3");
  EXPECT_EQ(RedactNatsUrl("user:pw@host"), "***@host");
  EXPECT_EQ(RedactNatsUrl(""), "");
}

}  // namespace
}  // namespace contextd::events
