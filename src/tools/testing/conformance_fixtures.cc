#include "tools/testing/conformance_fixtures.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/foreign_text.h"

namespace contextd::tools::testing {
namespace {

using protocol::Json;
using protocol::LoggingLevel;
using protocol::ToolCall;
using protocol::ToolResult;
using std::chrono::milliseconds;

// A 1x1 red PNG and a 4-sample silent 8 kHz WAV, base64.
constexpr char kPngBase64[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
constexpr char kWavBase64[] =
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAAAAAAAAAA==";
constexpr char kLogger[] = "conformance";

Json Text(std::string text) { return Json{{"type", "text"}, {"text", std::move(text)}}; }
Json Image() { return Json{{"type", "image"}, {"data", kPngBase64}, {"mimeType", "image/png"}}; }
Json EmbeddedResource(std::string uri, std::string mime, std::string text) {
  return Json{
      {"type", "resource"},
      {"resource",
       {{"uri", std::move(uri)}, {"mimeType", std::move(mime)}, {"text", std::move(text)}}}};
}

ToolResult Content(Json blocks) {
  ToolResult r;
  r.content = std::move(blocks);
  return r;
}

Json NoArgs() { return Json{{"type", "object"}, {"properties", Json::object()}}; }

Json StringArg(const char* name, const char* description) {
  return Json{{"type", "object"},
              {"properties", {{name, {{"type", "string"}, {"description", description}}}}},
              {"required", {name}}};
}

// A tool whose result does not depend on the call.
absl::Status AddStatic(protocol::McpServer& server, const char* name, const char* description,
                       std::function<ToolResult()> make) {
  return server.AddTool(
      {name, "", description, NoArgs(), nullptr, nullptr},
      [make = std::move(make)](std::shared_ptr<ToolCall> call) { call->Finish(make()); });
}

// Runs `steps` one after another, `delay` apart, on the call's executor; stops if cancelled.
void RunSteps(std::shared_ptr<ToolCall> call, std::vector<std::function<void()>> steps, size_t i,
              milliseconds delay) {
  if (call->cancelled() || i >= steps.size()) return;
  steps[i]();
  if (i + 1 < steps.size()) {
    call->executor().PostAfter(delay, [call, steps = std::move(steps), i, delay]() mutable {
      RunSteps(call, std::move(steps), i + 1, delay);
    });
  }
}

// Sends elicitation/create with `params` and finishes with the client's answer.
void Elicit(std::shared_ptr<ToolCall> call, Json params, const char* prefix) {
  call->SendRequest(
      "elicitation/create", std::move(params), milliseconds(0),
      [call, prefix = std::string(prefix)](absl::StatusOr<Json> r) {
        if (!r.ok()) {
          call->Finish(protocol::ErrorResult("elicitation failed: " + r.status().ToString()));
          return;
        }
        const Json content = r->value("content", Json::object());
        call->Finish(protocol::TextResult(prefix +
                                          "action=" + r->value("action", std::string("?")) +
                                          ", content=" + base::DumpJson(content)));
      });
}

absl::Status AddTools(protocol::McpServer& server) {
  absl::Status st;
  auto add = [&st](absl::Status s) {
    if (st.ok() && !s.ok()) st = std::move(s);
  };

  add(AddStatic(server, "test_simple_text", "Returns a simple text response", [] {
    return protocol::TextResult("This is a simple text response for testing.");
  }));
  add(AddStatic(server, "test_image_content", "Returns an image (1x1 PNG)",
                [] { return Content(Json::array({Image()})); }));
  add(AddStatic(server, "test_audio_content", "Returns audio (a tiny WAV)", [] {
    return Content(
        Json::array({{{"type", "audio"}, {"data", kWavBase64}, {"mimeType", "audio/wav"}}}));
  }));
  add(AddStatic(server, "test_embedded_resource", "Returns an embedded text resource", [] {
    return Content(Json::array({EmbeddedResource("test://embedded-resource", "text/plain",
                                                 "This is an embedded resource content.")}));
  }));
  add(AddStatic(
      server, "test_multiple_content_types", "Returns text, an image and an embedded resource", [] {
        return Content(
            Json::array({Text("Multiple content types test:"), Image(),
                         EmbeddedResource("test://mixed-content-resource", "application/json",
                                          R"({"test":"data","value":123})")}));
      }));
  add(AddStatic(server, "test_error_handling", "Always fails with a tool execution error", [] {
    return protocol::ErrorResult("This tool intentionally returns an error for testing");
  }));

  add(server.AddTool(
      {"test_tool_with_logging", "", "Sends three info log notifications ~50 ms apart", NoArgs(),
       nullptr, nullptr},
      [](std::shared_ptr<ToolCall> call) {
        std::vector<std::function<void()>> steps = {
            [call] { call->Log(LoggingLevel::kInfo, kLogger, "Tool execution started"); },
            [call] { call->Log(LoggingLevel::kInfo, kLogger, "Tool processing data"); },
            [call] {
              call->Log(LoggingLevel::kInfo, kLogger, "Tool execution completed");
              call->Finish(protocol::TextResult("Tool with logging executed successfully"));
            }};
        RunSteps(call, std::move(steps), 0, milliseconds(50));
      }));

  add(server.AddTool(
      {"test_tool_with_progress", "", "Reports progress 0, 50 and 100 of 100, ~50 ms apart",
       NoArgs(), nullptr, nullptr},
      [](std::shared_ptr<ToolCall> call) {
        std::vector<std::function<void()>> steps;
        for (int p : {0, 50, 100}) {
          steps.push_back([call, p] {
            call->SendProgress(p, 100, "Completed step " + std::to_string(p) + " of 100");
            if (p == 100)
              call->Finish(protocol::TextResult("Progress reported: 0, 50, 100 of 100"));
          });
        }
        RunSteps(call, std::move(steps), 0, milliseconds(50));
      }));

  add(server.AddTool(
      {"test_reconnection", "",
       "Closes its SSE stream, then answers after 100 ms (SEP-1699 polling: the "
       "client resumes with GET and Last-Event-ID)",
       NoArgs(), nullptr, nullptr},
      [](std::shared_ptr<ToolCall> call) {
        call->CloseStream();
        call->executor().PostAfter(milliseconds(100), [call] {
          call->Finish(protocol::TextResult(
              "Reconnection test completed successfully. If you received this, the client "
              "properly reconnected after stream closure."));
        });
      }));

  add(server.AddTool(
      {"test_sampling", "", "Asks the client's LLM (sampling/createMessage) and returns its answer",
       StringArg("prompt", "The prompt to send to the LLM"), nullptr, nullptr},
      [](std::shared_ptr<ToolCall> call) {
        Json params = {
            {"messages",
             Json::array({{{"role", "user"}, {"content", Text(call->arguments()["prompt"])}}})},
            {"maxTokens", 100}};
        call->SendRequest(
            "sampling/createMessage", std::move(params), milliseconds(0),
            [call](absl::StatusOr<Json> r) {
              if (!r.ok()) {
                call->Finish(protocol::ErrorResult("sampling failed: " + r.status().ToString()));
                return;
              }
              std::string text = "(no text)";
              if (auto c = r->find("content"); c != r->end() && c->is_object()) {
                text = c->value("text", text);
              }
              call->Finish(protocol::TextResult("LLM response: " + text));
            });
      }));

  add(server.AddTool(
      {"test_elicitation", "", "Asks the user for input (elicitation/create)",
       StringArg("message", "The message to show the user"), nullptr, nullptr},
      [](std::shared_ptr<ToolCall> call) {
        Json schema = {{"type", "object"},
                       {"properties",
                        {{"username", {{"type", "string"}, {"description", "User's response"}}},
                         {"email", {{"type", "string"}, {"description", "User's email address"}}}}},
                       {"required", {"username", "email"}}};
        Elicit(call, {{"message", call->arguments()["message"]}, {"requestedSchema", schema}},
               "User response: ");
      }));

  add(server.AddTool({"test_elicitation_sep1034_defaults", "",
                      "Elicitation whose schema has defaults for every primitive type", NoArgs(),
                      nullptr, nullptr},
                     [](std::shared_ptr<ToolCall> call) {
                       Json schema = Json::parse(R"json({"type":"object","properties":{
          "name":{"type":"string","description":"User name","default":"John Doe"},
          "age":{"type":"integer","description":"User age","default":30},
          "score":{"type":"number","description":"User score","default":95.5},
          "status":{"type":"string","description":"User status","enum":["active","inactive","pending"],
                    "default":"active"},
          "verified":{"type":"boolean","description":"Verification status","default":true}},
          "required":[]})json");
                       Elicit(
                           call,
                           {{"message", "Please review and update the form fields with defaults"},
                            {"requestedSchema", schema}},
                           "Elicitation completed: ");
                     }));

  add(server.AddTool(
      {"test_elicitation_sep1330_enums", "",
       "Elicitation with the five enum schema variants of SEP-1330", NoArgs(), nullptr, nullptr},
      [](std::shared_ptr<ToolCall> call) {
        Json schema = Json::parse(R"json({"type":"object","properties":{
          "untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
          "titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[
            {"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},
            {"const":"value3","title":"Third Option"}]},
          "legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],
            "enumNames":["Option One","Option Two","Option Three"]},
          "untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,
            "items":{"type":"string","enum":["option1","option2","option3"]}},
          "titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,
            "items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},
                              {"const":"value3","title":"Third Choice"}]}}},
          "required":[]})json");
        Elicit(call,
               {{"message", "Please select options from the enum fields"},
                {"requestedSchema", schema}},
               "Elicitation completed: ");
      }));

  add(server.AddTool({"json_schema_2020_12_tool", "",
                      "Tool with JSON Schema 2020-12 features (SEP-1613)", Json::parse(R"json({
                        "$schema": "https://json-schema.org/draft/2020-12/schema",
                        "type": "object",
                        "$defs": {"address": {"type": "object",
                                   "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
                        "additionalProperties": false})json"),
                      nullptr, nullptr},
                     [](std::shared_ptr<ToolCall> call) {
                       call->Finish(protocol::TextResult("JSON Schema 2020-12 tool called with: " +
                                                         base::DumpJson(call->arguments())));
                     }));
  return st;
}

// A reader that always returns one fixed item.
protocol::ResourceReader Fixed(Json item) {
  return [item = std::move(item)](const protocol::ResourceRead&, protocol::ResourceDone done) {
    done(Json::array({item}));
  };
}

absl::Status AddResources(protocol::McpServer& server) {
  absl::Status st;
  auto add = [&st](absl::Status s) {
    if (st.ok() && !s.ok()) st = std::move(s);
  };
  add(server.AddResource({"test://static-text", "static-text", "Static Text Resource",
                          "A static text resource", "text/plain"},
                         Fixed({{"uri", "test://static-text"},
                                {"mimeType", "text/plain"},
                                {"text", "This is the content of the static text resource."}})));
  add(server.AddResource(
      {"test://static-binary", "static-binary", "Static Binary Resource", "A static PNG image",
       "image/png"},
      Fixed({{"uri", "test://static-binary"}, {"mimeType", "image/png"}, {"blob", kPngBase64}})));
  add(server.AddResource({kWatchedResourceUri, "watched-resource", "Watched Resource",
                          "A resource clients may subscribe to", "text/plain"},
                         Fixed({{"uri", kWatchedResourceUri},
                                {"mimeType", "text/plain"},
                                {"text", "Watched resource content"}})));
  add(server.AddResourceTemplate(
      {"test://template/{id}/data", "template", "Resource Template",
       "Data for an id (parameter substitution)", "application/json"},
      [](const protocol::ResourceRead& read, protocol::ResourceDone done) {
        const std::string id = read.variables.at("id");
        Json text = {{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
        done(Json::array({{{"uri", read.uri},
                           {"mimeType", "application/json"},
                           {"text", base::DumpJson(text)}}}));
      }));
  return st;
}

protocol::PromptHandler Messages(
    std::function<Json(const std::map<std::string, std::string>&)> make) {
  return [make = std::move(make)](const std::map<std::string, std::string>& args,
                                  const protocol::SessionInfo&) -> absl::StatusOr<Json> {
    return Json{{"messages", make(args)}};
  };
}

Json UserMessage(Json content) { return Json{{"role", "user"}, {"content", std::move(content)}}; }

absl::Status AddPrompts(protocol::McpServer& server) {
  absl::Status st;
  auto add = [&st](absl::Status s) {
    if (st.ok() && !s.ok()) st = std::move(s);
  };
  add(server.AddPrompt(
      {"test_simple_prompt", "Simple Test Prompt", "A simple prompt without arguments", {}},
      Messages([](const auto&) {
        return Json::array({UserMessage(Text("This is a simple prompt for testing."))});
      })));
  add(server.AddPrompt(
      {"test_prompt_with_arguments",
       "Prompt With Arguments",
       "A prompt with required arguments",
       {{"arg1", "First test argument", true}, {"arg2", "Second test argument", true}}},
      Messages([](const auto& args) {
        return Json::array({UserMessage(Text("Prompt with arguments: arg1='" + args.at("arg1") +
                                             "', arg2='" + args.at("arg2") + "'"))});
      })));
  add(server.AddPrompt(
      {"test_prompt_with_embedded_resource",
       "Prompt With Embedded Resource",
       "A prompt that includes an embedded resource",
       {{"resourceUri", "URI of the resource to embed", true}}},
      Messages([](const auto& args) {
        return Json::array({UserMessage(EmbeddedResource(args.at("resourceUri"), "text/plain",
                                                         "Embedded resource content for testing.")),
                            UserMessage(Text("Please process the embedded resource above."))});
      })));
  add(server.AddPrompt(
      {"test_prompt_with_image", "Prompt With Image", "A prompt that includes image content", {}},
      Messages([](const auto&) {
        return Json::array(
            {UserMessage(Image()), UserMessage(Text("Please analyze the image above."))});
      })));
  return st;
}

protocol::CompletionProvider PrefixOf(std::vector<std::string> candidates) {
  return [candidates = std::move(candidates)](std::string_view value,
                                              const std::map<std::string, std::string>&) {
    std::vector<std::string> out;
    for (const auto& c : candidates) {
      if (c.compare(0, value.size(), value) == 0) out.push_back(c);
    }
    return out;
  };
}

absl::Status AddCompletions(protocol::McpServer& server) {
  absl::Status st = server.AddCompletion("ref/prompt", "test_prompt_with_arguments", "arg1",
                                         PrefixOf({"paris", "park", "party", "testValue1"}));
  if (st.ok()) {
    st = server.AddCompletion("ref/prompt", "test_prompt_with_arguments", "arg2",
                              PrefixOf({"testValue2", "value"}));
  }
  if (st.ok()) {
    st = server.AddCompletion("ref/resource", "test://template/{id}/data", "id",
                              PrefixOf({"1", "2", "123"}));
  }
  return st;
}

}  // namespace

absl::Status RegisterConformanceFixtures(protocol::McpServer& server) {
  if (absl::Status st = AddTools(server); !st.ok()) return st;
  if (absl::Status st = AddResources(server); !st.ok()) return st;
  if (absl::Status st = AddPrompts(server); !st.ok()) return st;
  return AddCompletions(server);
}

}  // namespace contextd::tools::testing
