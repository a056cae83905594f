// gateway_test_upstream: a small MCP server on stdio for the gateway's tests and bench. Tools:
// echo {text}, secret, big {words}, slow {ms} (ends early on notifications/cancelled), progress
// {steps}, crash, sample {prompt}, log {text}, add_tool, stats, drop (removes the resource, the
// template and the prompt greet, and sends both list_changed). One resource: test://greeting; one
// template: test://item/{id}. Prompts: greet {who}, malformed, slow_prompt {ms}.
// Single-threaded; not part of contextd.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "nlohmann/json.hpp"

using Json = nlohmann::json;

namespace {

bool extra_tool = false;
bool dropped = false;
int cancellations = 0;  // notifications/cancelled received while `slow` ran

void Send(const Json& message) { std::cout << message.dump() << "\n" << std::flush; }

Json Text(const std::string& text) {
  return Json{{"content", Json::array({{{"type", "text"}, {"text", text}}})}};
}

Json ToolsList() {
  Json object_schema = {{"type", "object"}};
  Json tools = Json::array();
  auto add = [&](const std::string& name, Json schema) {
    tools.push_back(
        {{"name", name}, {"description", "test tool " + name}, {"inputSchema", schema}});
  };
  add("echo", {{"type", "object"},
               {"properties", {{"text", {{"type", "string"}}}}},
               {"required", {"text"}}});
  add("secret",
      {{"type", "object"},
       {"properties", {{"note", {{"type", "string"}, {"description", "not SECRET123"}}}}}});
  // Prose that a scrubber must redact before the agent sees it (the tool's own description too).
  tools.back()["description"] = "returns a token like SECRET123";
  add("big", {{"type", "object"}, {"properties", {{"words", {{"type", "integer"}}}}}});
  // `big` with a structured result whose schema allows no member but its own.
  add("big_structured", {{"type", "object"}, {"properties", {{"words", {{"type", "integer"}}}}}});
  tools.back()["outputSchema"] = {{"type", "object"},
                                  {"properties", {{"text", {{"type", "string"}}}}},
                                  {"required", {"text"}},
                                  {"additionalProperties", false}};
  add("slow", {{"type", "object"}, {"properties", {{"ms", {{"type", "integer"}}}}}});
  add("progress", {{"type", "object"}, {"properties", {{"steps", {{"type", "integer"}}}}}});
  add("crash", object_schema);
  add("sample", {{"type", "object"}, {"properties", {{"prompt", {{"type", "string"}}}}}});
  add("log", {{"type", "object"}, {"properties", {{"text", {{"type", "string"}}}}}});
  add("add_tool", object_schema);
  add("stats", object_schema);
  add("drop", object_schema);
  if (extra_tool) add("extra", object_schema);
  return Json{{"tools", tools}};
}

// Reads lines until the response to `id` arrives (answering nothing else meanwhile).
Json AwaitResponse(const std::string& id) {
  std::string line;
  while (std::getline(std::cin, line)) {
    Json m = Json::parse(line, nullptr, false);
    if (m.is_object() && m.contains("id") && m["id"] == id && !m.contains("method")) return m;
  }
  std::exit(0);
}

Json CallTool(const Json& params) {
  std::string name = params.value("name", "");
  Json args = params.value("arguments", Json::object());
  if (name == "echo") return Text(args.value("text", ""));
  if (name == "secret") {
    return Json{
        {"content", Json::array({{{"type", "text"},
                                  {"text", "token=ghp_0123456789abcdefghijABCDEFGHIJ012345 ok"}}})},
        {"structuredContent", {{"key", "ghp_0123456789abcdefghijABCDEFGHIJ012345"}}}};
  }
  if (name == "big") {
    std::string text;
    int words = args.value("words", 1000);
    for (int i = 0; i < words; ++i) text += "word ";
    return Text(text);
  }
  if (name == "big_structured") {
    std::string text;
    int words = args.value("words", 1000);
    for (int i = 0; i < words; ++i) text += "word ";
    Json result = Text(text);
    result["structuredContent"] = {{"text", text}};
    return result;
  }
  if (name == "slow") {
    // Sleeps, but watches stdin for notifications/cancelled meanwhile.
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(args.value("ms", 1000));
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd fd{0, POLLIN, 0};
      if (std::cin.rdbuf()->in_avail() > 0 || ::poll(&fd, 1, 5) > 0) {
        std::string line;
        if (!std::getline(std::cin, line)) std::exit(0);
        Json m = Json::parse(line, nullptr, false);
        if (m.is_object() && m.value("method", "") == "notifications/cancelled") {
          ++cancellations;
          return Text("cancelled");
        }
      }
    }
    return Text("slept");
  }
  if (name == "stats") return Text("cancellations=" + std::to_string(cancellations));
  if (name == "progress") {
    int steps = args.value("steps", 3);
    Json token = params.contains("_meta") ? params["_meta"].value("progressToken", Json()) : Json();
    for (int i = 1; i <= steps && !token.is_null(); ++i) {
      Send({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params",
             {{"progressToken", token},
              {"progress", i},
              {"total", steps},
              {"message", "step " + std::to_string(i)}}}});
    }
    return Text("done " + std::to_string(steps));
  }
  if (name == "crash") std::_Exit(3);
  if (name == "sample") {
    Send({{"jsonrpc", "2.0"},
          {"id", "s1"},
          {"method", "sampling/createMessage"},
          {"params",
           {{"messages",
             Json::array({{{"role", "user"},
                           {"content", {{"type", "text"}, {"text", args.value("prompt", "")}}}}})},
            {"maxTokens", 10}}}});
    Json response = AwaitResponse("s1");
    if (response.contains("error")) return Text("sampling failed: " + response["error"].dump());
    return Text("sampled: " + response["result"]["content"].value("text", ""));
  }
  if (name == "log") {
    Send(
        {{"jsonrpc", "2.0"},
         {"method", "notifications/message"},
         {"params", {{"level", "warning"}, {"logger", "test"}, {"data", args.value("text", "")}}}});
    return Text("logged");
  }
  if (name == "add_tool") {
    extra_tool = true;
    Send({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
    return Text("added");
  }
  if (name == "extra") return Text("extra");
  if (name == "drop") {
    dropped = true;
    Send({{"jsonrpc", "2.0"}, {"method", "notifications/resources/list_changed"}});
    Send({{"jsonrpc", "2.0"}, {"method", "notifications/prompts/list_changed"}});
    return Text("dropped");
  }
  return Json{{"content", Json::array({{{"type", "text"}, {"text", "unknown tool " + name}}})},
              {"isError", true}};
}

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  std::cerr << "test upstream pid " << getpid() << " started" << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    Json m = Json::parse(line, nullptr, false);
    if (!m.is_object() || !m.contains("method") || !m.contains("id")) continue;
    std::string method = m["method"];
    Json id = m["id"];
    Json params = m.value("params", Json::object());
    Json result;
    if (method == "initialize") {
      result = {{"protocolVersion", params.value("protocolVersion", "2025-11-25")},
                {"capabilities",
                 {{"tools", {{"listChanged", true}}},
                  {"resources", {{"listChanged", true}}},
                  {"prompts", {{"listChanged", true}}}}},
                {"serverInfo", {{"name", "test-upstream"}, {"version", "1"}}}};
    } else if (method == "tools/list") {
      result = ToolsList();
    } else if (method == "tools/call" && params.value("name", "") == "dupe") {
      // Unlisted: an answer whose text block names "text" twice (no serializer writes one).
      std::cout << "{\"jsonrpc\":\"2.0\",\"id\":" << id.dump()
                << ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"clean\","
                   "\"text\":\"AKIAZ7VRSQ5TJX4MRNQW\"}]}}\n"
                << std::flush;
      continue;
    } else if (method == "tools/call") {
      result = CallTool(params);
    } else if (method == "resources/list") {
      result = {{"resources", Json::array()}};
      if (!dropped) {
        result["resources"].push_back({{"uri", "test://greeting"},
                                       {"name", "greeting"},
                                       {"description", "says SECRET123"},
                                       {"mimeType", "text/plain"}});
      }
    } else if (method == "resources/templates/list") {
      result = {{"resourceTemplates", Json::array()}};
      if (!dropped) {
        result["resourceTemplates"].push_back(
            {{"uriTemplate", "test://item/{id}"}, {"name", "item"}, {"title", "item SECRET123"}});
      }
    } else if (method == "prompts/list") {
      result = {
          {"prompts", Json::array({{{"name", "malformed"}},
                                   {{"name", "slow_prompt"},
                                    {"arguments", {{{"name", "ms"}, {"required", true}}}}}})}};
      if (!dropped) {
        result["prompts"].push_back(
            {{"name", "greet"},
             {"description", "greets someone"},
             {"arguments",
              {{{"name", "who"}, {"description", "whom, not SECRET123"}, {"required", true}}}}});
      }
    } else if (method == "prompts/get") {
      std::string prompt = params.value("name", "");
      Json args = params.value("arguments", Json::object());
      if (prompt == "greet" && !dropped) {
        result = {
            {"description", "greeting SECRET123"},
            {"messages",
             {{{"role", "user"},
               {"content",
                {{"type", "text"}, {"text", "hello " + args.value("who", "") + " SECRET123"}}}},
              {{"role", "assistant"},
               {"content",
                {{"type", "resource"},
                 {"resource", {{"uri", "test://x"}, {"text", "key SECRET123"}}}}}}}}};
      } else if (prompt == "malformed") {
        result = {{"messages", "not a list"}};
      } else if (prompt == "slow_prompt") {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(std::atoi(args.value("ms", "0").c_str())));
        result = {{"messages", Json::array()}};
      } else {
        Send({{"jsonrpc", "2.0"},
              {"id", id},
              {"error", {{"code", -32602}, {"message", "unknown prompt " + prompt}}}});
        continue;
      }
    } else if (method == "resources/read") {
      result = {
          {"contents",
           Json::array({{{"uri", params.value("uri", "")},
                         {"mimeType", "text/plain"},
                         {"text", "hello SECRET123 ghp_0123456789abcdefghijABCDEFGHIJ012345"}}})}};
    } else if (method == "ping") {
      result = Json::object();
    } else {
      Send({{"jsonrpc", "2.0"},
            {"id", id},
            {"error", {{"code", -32601}, {"message", "method not found"}}}});
      continue;
    }
    Send({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
  }
  return 0;
}
