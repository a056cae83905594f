// `contextd memory show` on a real SQLite file: the item, its history, and the injections with
// what followed each (credited by actor, else by time).
#include "cli/memory_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <sstream>

#include "base/clock.h"
#include "cli/memory_show.h"
#include "cli/store_cli.h"
#include "memory/memory_bank.h"
#include "nlohmann/json.hpp"

namespace contextd::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr char kId[] = "mem_0000000000000000000000000000show";

class MemoryShowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "contextd_memory_cli_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    data_dir_ = tmpl;
    std::istringstream line(std::string(R"({"id":")") + kId +
                            R"(","tenant":"local","project":"p_1","title":"Run the unit tests )"
                            R"(first","description":"Before a change.","content":"Run ctest.")"
                            R"(,"tags":["tests"]})"
                            "\n");
    ASSERT_EQ(Run("import", "-", line), 0) << err_.str();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(data_dir_, ec);
  }

  int Run(const std::string& command, const std::string& arg, std::istream& in, bool json = false) {
    MemoryCommand c;
    c.command = command;
    c.arg = arg;
    c.data_dir = data_dir_;
    c.json = json;
    out_.str("");
    err_.str("");
    return RunMemoryCommand(c, in, out_, err_);
  }
  int Show(bool json) {
    std::istringstream none;
    return Run("show", kId, none, json);
  }

  // Writes the history of a server's uses through the bank, on the same SQLite file: a signal
  // before any injection, an injection into a conversation and one into a branch, and signals
  // from the conversation (its actor) and from an MCP session (no injection's actor).
  void WriteUses() {
    auto backend = OpenCommandBackend(server::StoreConfig{}, data_dir_);
    ASSERT_TRUE(backend.ok()) << backend.status();
    auto store = (*backend)->OpenMemoryStore();
    ASSERT_TRUE(store.ok()) << store.status();
    base::FakeClock clock(1'765'000'000'000);
    memory::MemoryBank::Parts parts;
    parts.store = store->get();
    parts.clock = &clock;
    parts.sanitize = [](std::string_view t) { return std::string(t); };
    parts.count_tokens = [](std::string_view t) { return static_cast<int64_t>(t.size() / 4); };
    memory::MemoryBank bank(std::move(parts), memory::BankOptions{});
    auto as = [](const char* actor) { return memory::Caller{"local", "p_1", actor}; };
    auto tick = [&clock] { clock.Advance(std::chrono::seconds(1)); };
    ASSERT_TRUE(bank.Feedback(as("ses_early"), kId, true).ok());
    tick();
    ASSERT_TRUE(bank.NoteInjected(as("gateway"), "conversation:conv_a", {kId}, 12).ok());
    tick();
    ASSERT_TRUE(bank.NoteInjected(as("br_b"), "br_b", {kId}, 12).ok());
    tick();
    // The conversation's outcome, after the branch's injection: credited by actor.
    ASSERT_TRUE(bank.RecordOutcome(as("conversation:conv_a"), kId, true).ok());
    tick();
    // An MCP session's feedback: no injection has its actor, the latest one gets it.
    ASSERT_TRUE(bank.Feedback(as("ses_9"), kId, false).ok());
  }

  std::string data_dir_;
  std::ostringstream out_, err_;
};

TEST_F(MemoryShowTest, ListsEachInjectionWithWhatFollowedIt) {
  WriteUses();
  ASSERT_EQ(Show(/*json=*/false), 0) << err_.str();
  const std::string text = out_.str();
  EXPECT_THAT(text, HasSubstr(std::string(kId) + "  active  success  project  local/p_1"));
  EXPECT_THAT(text, HasSubstr("content: Run ctest.\n"));
  EXPECT_THAT(text, HasSubstr("history:\n"));
  EXPECT_THAT(text, HasSubstr("injections: 2\n"
                              "  2025-12-06T05:46:42.000Z  into conversation conv_a\n"
                              "    2025-12-06T05:46:44.000Z  outcome: succeeded; confidence now "));
  EXPECT_THAT(text, HasSubstr("(by conversation:conv_a)\n"
                              "  2025-12-06T05:46:43.000Z  into branch br_b\n"
                              "    2025-12-06T05:46:45.000Z  feedback: not helpful; confidence "
                              "now "));
  EXPECT_THAT(text, HasSubstr("(by ses_9; credited by time)\n"));
  // The feedback before any injection is in the history only.
  EXPECT_EQ(text.find("(by ses_early"), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr("feedback  ses_early  helpful"));
}

TEST_F(MemoryShowTest, JsonCarriesTheSameInjections) {
  WriteUses();
  ASSERT_EQ(Show(/*json=*/true), 0) << err_.str();
  Json j = Json::parse(out_.str());
  EXPECT_EQ(j["id"], kId);
  // imported, the early feedback, 2 injections, 2 signals after them.
  ASSERT_EQ(j["history"].size(), 6u) << j.dump(1);
  const Json& inj = j["injections"];
  ASSERT_EQ(inj.size(), 2u) << inj.dump(1);
  EXPECT_EQ(inj[0]["into"], (Json{{"kind", "conversation"}, {"id", "conv_a"}}));
  EXPECT_EQ(inj[0]["actor"], "conversation:conv_a");
  EXPECT_EQ(inj[0]["detail"], j["history"][2]["detail"]);
  EXPECT_EQ(inj[0]["seq"], j["history"][2]["seq"]);
  ASSERT_EQ(inj[0]["followed_by"].size(), 1u);
  EXPECT_EQ(inj[0]["followed_by"][0]["action"], "outcome");
  EXPECT_EQ(inj[0]["followed_by"][0]["matched_by"], "actor");
  EXPECT_EQ(inj[1]["into"], (Json{{"kind", "branch"}, {"id", "br_b"}}));
  ASSERT_EQ(inj[1]["followed_by"].size(), 1u);
  EXPECT_EQ(inj[1]["followed_by"][0]["actor"], "ses_9");
  EXPECT_EQ(inj[1]["followed_by"][0]["matched_by"], "time");
  EXPECT_LT(inj[0]["seq"].get<int64_t>(), inj[1]["seq"].get<int64_t>());
}

TEST_F(MemoryShowTest, AnItemNeverInjectedSaysSo) {
  ASSERT_EQ(Show(/*json=*/false), 0) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("imported  cli"));
  EXPECT_THAT(out_.str(), HasSubstr("injections: none\n"));
  ASSERT_EQ(Show(/*json=*/true), 0) << err_.str();
  EXPECT_EQ(Json::parse(out_.str())["injections"], Json::array());
  std::istringstream none;
  EXPECT_EQ(Run("show", "mem_missing", none), 2);
  EXPECT_THAT(err_.str(), HasSubstr("not found"));
}

}  // namespace
}  // namespace contextd::cli
