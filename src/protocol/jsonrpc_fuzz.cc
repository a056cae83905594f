// libFuzzer target for the JSON-RPC codec: parses arbitrary bytes and, for every valid message,
// drives a real McpServer session on a ManualExecutor (initialize first, then the message), so
// that the dispatcher and its error paths see hostile input too. Single-threaded.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/executor.h"
#include "protocol/jsonrpc.h"
#include "protocol/mcp_server.h"

namespace {

using contextd::protocol::Json;

class NullSink final : public contextd::protocol::MessageSink {
 public:
  void Send(Json message, const Json&) override {
    // Serializing is part of what we test: nothing we send may throw.
    bytes_ += contextd::protocol::Serialize(message).size();
  }
  size_t bytes_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace contextd;
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  protocol::Incoming in = protocol::ParseIncoming(raw, 1 << 20);
  if (in.items.empty()) __builtin_trap();  // contract: never empty

  base::FakeClock clock;
  base::ManualExecutor executor(clock);
  protocol::McpServer server(executor, {"fuzz", "0", ""});
  (void)server.AddTool(
      {"echo", "", "", Json::parse(R"({"type":"object","properties":{"text":{"type":"string"}}})"),
       nullptr, nullptr},
      [](std::shared_ptr<protocol::ToolCall> c) {
        c->Log(protocol::LoggingLevel::kInfo, "fuzz", c->arguments());
        c->SendProgress(1, 2, "half");
        c->Finish(protocol::TextResult(c->arguments().dump()));
      });
  (void)server.AddTool(
      {"ask", "", "", nullptr, nullptr, nullptr}, [](std::shared_ptr<protocol::ToolCall> c) {
        c->SendRequest("sampling/createMessage", Json::object(), std::chrono::milliseconds(10),
                       [c](absl::StatusOr<Json>) { c->Finish(protocol::TextResult("x")); });
      });
  auto sink = std::make_shared<NullSink>();
  auto session = server.CreateSession({"fuzz", "local", "fuzz"}, sink);
  // Half of the inputs run against an initialized session.
  if (size % 2 == 0) {
    auto init = protocol::ParseIncoming(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"sampling":{}}}})");
    session->Receive(std::get<protocol::Message>(init.items[0]));
  }
  for (auto& item : in.items) {
    if (auto* m = std::get_if<protocol::Message>(&item)) session->Receive(std::move(*m));
  }
  executor.RunUntilIdle();
  executor.AdvanceAndRun(std::chrono::seconds(1));
  session->Close("fuzz done");
  executor.RunUntilIdle();
  return 0;
}
