// Tests of resources, resource templates, prompts and completion: listing, reading, template
// matching, subscriptions, synchronous and asynchronous prompts, removal.
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/executor.h"
#include "gtest/gtest.h"
#include "protocol/internal/mcp_server_test_fixture.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"

namespace contextd::protocol {
namespace {

using internal::McpServerTest;
using internal::RecordingSink;
using internal::Sent;

class ResourceTest : public McpServerTest {
 protected:
  void SetUp() override {
    McpServerTest::SetUp();
    ASSERT_TRUE(server_
                    .AddResource({"test://a", "a", "A", "first", "text/plain"},
                                 [](const ResourceRead& r, ResourceDone done) {
                                   done(Json::array({{{"uri", r.uri}, {"text", "hello"}}}));
                                 })
                    .ok());
    ASSERT_TRUE(server_
                    .AddResource({"test://gone", "gone", "", "", ""},
                                 [](const ResourceRead&, ResourceDone done) {
                                   done(absl::NotFoundError("deleted"));
                                 })
                    .ok());
    ASSERT_TRUE(server_
                    .AddResourceTemplate(
                        {"test://item/{id}/data", "item", "", "items", "application/json"},
                        [](const ResourceRead& r, ResourceDone done) {
                          done(Json::array({{{"uri", r.uri}, {"text", r.variables.at("id")}}}));
                        })
                    .ok());
    Initialize();
  }
};

TEST_F(ResourceTest, ListReadAndTemplates) {
  Json r = Call(1, "resources/list");
  ASSERT_EQ(r["result"]["resources"].size(), 2u);
  EXPECT_EQ(r["result"]["resources"][0]["uri"], "test://a");
  EXPECT_EQ(r["result"]["resources"][0]["mimeType"], "text/plain");
  r = Call(2, "resources/templates/list");
  EXPECT_EQ(r["result"]["resourceTemplates"][0]["uriTemplate"], "test://item/{id}/data");
  r = Call(3, "resources/read", {{"uri", "test://a"}});
  EXPECT_EQ(r["result"]["contents"][0]["text"], "hello");
  r = Call(4, "resources/read", {{"uri", "test://item/123/data"}});
  EXPECT_EQ(r["result"]["contents"][0]["text"], "123");
  r = Call(5, "resources/read", {{"uri", "test://item/1/2/data"}});
  EXPECT_EQ(r["error"]["code"], kResourceNotFound);
  r = Call(6, "resources/read", {{"uri", "test://nothing"}});
  EXPECT_EQ(r["error"]["code"], kResourceNotFound);
  EXPECT_EQ(r["error"]["data"]["uri"], "test://nothing");
  r = Call(7, "resources/read", {{"uri", "test://gone"}});
  EXPECT_EQ(r["error"]["code"], kResourceNotFound);
  EXPECT_EQ(Call(8, "resources/read")["error"]["code"], kInvalidParams);
}

TEST_F(ResourceTest, SubscriptionsDriveUpdatedNotifications) {
  EXPECT_EQ(Call(1, "resources/subscribe", {{"uri", "test://a"}})["result"], Json::object());
  server_.NotifyResourceUpdated("test://a");
  server_.NotifyResourceUpdated("test://other");
  executor_.RunUntilIdle();
  std::vector<Sent> sent = sink_->Take();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].message["method"], "notifications/resources/updated");
  EXPECT_EQ(sent[0].message["params"]["uri"], "test://a");
  EXPECT_TRUE(sent[0].related.is_null());
  EXPECT_EQ(Call(2, "resources/unsubscribe", {{"uri", "test://a"}})["result"], Json::object());
  server_.NotifyResourceUpdated("test://a");
  executor_.RunUntilIdle();
  EXPECT_TRUE(sink_->Take().empty());
}

TEST_F(ResourceTest, CapabilitiesIncludeResources) {
  auto sink2 = std::shared_ptr<RecordingSink>();
  auto s2 = NewSession("s2", &sink2);
  Feed(Serialize(MakeRequest(1, "initialize", {{"protocolVersion", "2025-11-25"}})), s2.get());
  Json r = sink2->Take().at(0).message;
  EXPECT_EQ(r["result"]["capabilities"]["resources"]["subscribe"], true);
}

TEST_F(McpServerTest, PromptsAndCompletion) {
  ASSERT_TRUE(
      server_
          .AddPrompt({"greet", "Greet", "says hello", {{"who", "name", true}, {"tone", "", false}}},
                     [](const std::map<std::string, std::string>& args,
                        const SessionInfo&) -> absl::StatusOr<Json> {
                       if (args.at("who") == "bad") return absl::InvalidArgumentError("bad who");
                       return Json{
                           {"messages",
                            {{{"role", "user"},
                              {"content", {{"type", "text"}, {"text", "hi " + args.at("who")}}}}}}};
                     })
          .ok());
  ASSERT_TRUE(server_
                  .AddCompletion("ref/prompt", "greet", "who",
                                 [](std::string_view v, const std::map<std::string, std::string>&) {
                                   std::vector<std::string> out;
                                   for (std::string s : {"alice", "albert", "bob"}) {
                                     if (s.rfind(v, 0) == 0) out.push_back(s);
                                   }
                                   return out;
                                 })
                  .ok());
  Initialize();
  Json r = Call(1, "prompts/list");
  EXPECT_EQ(r["result"]["prompts"][0]["name"], "greet");
  EXPECT_EQ(r["result"]["prompts"][0]["arguments"][0]["required"], true);
  r = Call(2, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", "ann"}}}});
  EXPECT_EQ(r["result"]["messages"][0]["content"]["text"], "hi ann");
  EXPECT_EQ(Call(3, "prompts/get", {{"name", "greet"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(Call(4, "prompts/get", {{"name", "nope"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(
      Call(5, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", 1}}}})["error"]["code"],
      kInvalidParams);
  EXPECT_EQ(
      Call(6, "prompts/get", {{"name", "greet"}, {"arguments", {{"who", "bad"}}}})["error"]["code"],
      kInvalidParams);

  r = Call(7, "completion/complete",
           {{"ref", {{"type", "ref/prompt"}, {"name", "greet"}}},
            {"argument", {{"name", "who"}, {"value", "al"}}}});
  EXPECT_EQ(r["result"]["completion"]["values"], Json({"alice", "albert"}));
  EXPECT_EQ(r["result"]["completion"]["total"], 2);
  EXPECT_EQ(r["result"]["completion"]["hasMore"], false);
  r = Call(8, "completion/complete",
           {{"ref", {{"type", "ref/prompt"}, {"name", "other"}}},
            {"argument", {{"name", "x"}, {"value", ""}}}});
  EXPECT_EQ(r["result"]["completion"]["values"], Json::array());
  EXPECT_EQ(Call(9, "completion/complete", {{"ref", 1}})["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, AsyncPromptAnswersWhenDoneRunsLaterFromAnotherThread) {
  PromptDone pending;
  ASSERT_TRUE(server_
                  .AddAsyncPrompt({"later", "", "answers later", {{"x", "", true}}},
                                  [&pending](const std::map<std::string, std::string>& args,
                                             const SessionInfo& session, PromptDone done) {
                                    EXPECT_EQ(args.at("x"), "1");
                                    EXPECT_EQ(session.session_id, "s1");
                                    pending = std::move(done);
                                  })
                  .ok());
  ASSERT_TRUE(server_
                  .AddAsyncPrompt({"fails", "", "", {}},
                                  [](const std::map<std::string, std::string>&, const SessionInfo&,
                                     PromptDone done) {
                                    done(absl::UnavailableError("upstream u unavailable: down"));
                                    done(Json::object());  // ignored: once only
                                  })
                  .ok());
  Initialize();
  Request(1, "prompts/get", {{"name", "later"}, {"arguments", {{"x", "1"}}}});
  EXPECT_TRUE(sink_->Take().empty()) << "no reply before done";
  ASSERT_TRUE(pending);
  std::thread([&] {
    pending(Json{{"messages", Json::array({{{"role", "user"},
                                            {"content", {{"type", "text"}, {"text", "ok"}}}}})}});
  }).join();
  executor_.RunUntilIdle();
  Json r = ResponseTo(1);
  EXPECT_EQ(r["result"]["messages"][0]["content"]["text"], "ok");
  r = Call(2, "prompts/get", {{"name", "fails"}});
  EXPECT_EQ(r["error"]["code"], kInternalError);
  EXPECT_EQ(r["error"]["message"], "upstream u unavailable: down");
  EXPECT_TRUE(sink_->Take().empty()) << "the second done must not reply again";
  // Required arguments are checked before the handler runs.
  EXPECT_EQ(Call(3, "prompts/get", {{"name", "later"}})["error"]["code"], kInvalidParams);
}

TEST_F(McpServerTest, RemovesPromptsResourcesAndTemplates) {
  auto noop_reader = [](const ResourceRead&, ResourceDone done) { done(Json::array()); };
  ASSERT_TRUE(server_.AddResource({"test://a", "a", "", "", ""}, noop_reader).ok());
  ASSERT_TRUE(server_.AddResource({"test://b", "b", "", "", ""}, noop_reader).ok());
  ASSERT_TRUE(server_.AddResourceTemplate({"test://t/{id}", "t", "", "", ""}, noop_reader).ok());
  ASSERT_TRUE(server_
                  .AddPrompt({"p", "", "", {}},
                             [](const std::map<std::string, std::string>&,
                                const SessionInfo&) -> absl::StatusOr<Json> {
                               return Json{{"messages", Json::array()}};
                             })
                  .ok());
  Initialize();
  EXPECT_TRUE(server_.RemoveResource("test://a").ok());
  EXPECT_TRUE(absl::IsNotFound(server_.RemoveResource("test://a")));
  EXPECT_TRUE(server_.RemoveResourceTemplate("test://t/{id}").ok());
  EXPECT_TRUE(absl::IsNotFound(server_.RemoveResourceTemplate("test://t/{id}")));
  EXPECT_TRUE(server_.RemovePrompt("p").ok());
  EXPECT_TRUE(absl::IsNotFound(server_.RemovePrompt("p")));
  Json r = Call(1, "resources/list");
  ASSERT_EQ(r["result"]["resources"].size(), 1u);
  EXPECT_EQ(r["result"]["resources"][0]["uri"], "test://b");
  EXPECT_EQ(Call(2, "resources/templates/list")["result"]["resourceTemplates"], Json::array());
  EXPECT_EQ(Call(3, "prompts/list")["result"]["prompts"], Json::array());
  EXPECT_EQ(Call(4, "resources/read", {{"uri", "test://a"}})["error"]["code"], kResourceNotFound);
  EXPECT_EQ(Call(5, "resources/read", {{"uri", "test://t/1"}})["error"]["code"], kResourceNotFound);
  EXPECT_EQ(Call(6, "prompts/get", {{"name", "p"}})["error"]["code"], kInvalidParams);
  // The name can be registered again.
  EXPECT_TRUE(server_.AddResource({"test://a", "a", "", "", ""}, noop_reader).ok());
}

}  // namespace
}  // namespace contextd::protocol
