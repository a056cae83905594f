#include "gateway/upstream_config.h"

#include "gtest/gtest.h"

namespace contextd::gateway {
namespace {

UpstreamConfig Stdio(std::string name) {
  UpstreamConfig c;
  c.name = std::move(name);
  c.stdio = StdioUpstream{"node", {"server.js"}, {}, ""};
  return c;
}

TEST(ValidateUpstream, AcceptsAStdioOrAnHttpUpstream) {
  EXPECT_TRUE(ValidateUpstream(Stdio("fs_1-a")).ok());
  UpstreamConfig http;
  http.name = "web";
  http.http = HttpUpstream{"http://127.0.0.1:1/mcp", {}, ""};
  EXPECT_TRUE(ValidateUpstream(http).ok());
  http.http = HttpUpstream{"https://mcp.example.test/mcp", {}, "/etc/ca.pem"};
  EXPECT_TRUE(ValidateUpstream(http).ok());
}

TEST(ValidateUpstream, RejectsOtherSchemesAndACaFileForPlainHttp) {
  UpstreamConfig http;
  http.name = "web";
  http.http = HttpUpstream{"ftp://127.0.0.1/mcp", {}, ""};
  EXPECT_FALSE(ValidateUpstream(http).ok());
  http.http = HttpUpstream{"http://127.0.0.1:1/mcp", {}, "/etc/ca.pem"};
  absl::Status s = ValidateUpstream(http);
  EXPECT_NE(s.message().find("ca_file"), std::string::npos) << s;
}

TEST(ValidateUpstream, RejectsBadNamesAndShapes) {
  EXPECT_FALSE(ValidateUpstream(Stdio("")).ok());
  EXPECT_FALSE(ValidateUpstream(Stdio("Fs")).ok());
  EXPECT_FALSE(ValidateUpstream(Stdio("a.b")).ok());
  UpstreamConfig both = Stdio("x");
  both.http = HttpUpstream{"http://h/", {}, ""};
  EXPECT_FALSE(ValidateUpstream(both).ok());
  UpstreamConfig neither;
  neither.name = "x";
  EXPECT_FALSE(ValidateUpstream(neither).ok());
  UpstreamConfig no_command = Stdio("x");
  no_command.stdio->command.clear();
  EXPECT_FALSE(ValidateUpstream(no_command).ok());
  UpstreamConfig zero = Stdio("x");
  zero.call_timeout = std::chrono::milliseconds(0);
  EXPECT_FALSE(ValidateUpstream(zero).ok());
}

}  // namespace
}  // namespace contextd::gateway
