// ContextdToolNames: which tool calls of a model request go to contextd (its own tools, and the
// upstream tools it proxies as `<upstream>__<tool>`), however the client prefixed them: Claude
// Code `mcp__<server>__`, Codex `<server>__` or a `mcp__<server>` namespace, OpenCode
// `<server>_`, a client that adds nothing. The server name is "contextd" unless the request's
// tool definitions say otherwise: a tool whose description opens as contextd's branch_create
// does declares the prefix the client gave contextd's tools, whatever the user named the server.
// Another server's `mcp__github__branch_create` is not contextd's. A value; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/raw_json.h"
#include "model/transcript.h"

namespace contextd::model {

class ContextdToolNames {
 public:
  // Declares the prefix of the tool definition (`name`, `description`) when it is contextd's
  // branch_create under some prefix; true if it was.
  bool Declare(std::string_view name, std::string_view description);

  // Declares the prefixes found in a request's `tools` array (Messages `{name, description}`,
  // Chat Completions `{function: {name, description}}`, Responses `{name, description}` and
  // `{type: "namespace", name, tools: [...]}`, whose tools are named `<namespace>__<name>`).
  // Elements whose members were not recorded by the parse are skipped.
  void DeclareFrom(std::string_view doc, const RawNode* tools);

  // contextd's name for the tool `name` calls ("branch_create", "fs__read_file"), without the
  // client's prefix; "" when the call does not go to contextd.
  std::string Resolve(std::string_view name) const;

  // Whether `name` is contextd's branch_create or branch_return.
  bool IsBranchTool(std::string_view name) const;

 private:
  std::vector<std::string> declared_;  // longest first
};

// Whether `block` calls contextd's branch_create or branch_return (Block::contextd_tool).
bool IsBranchCall(const Block& block);

// How a Responses call inside a namespace is named: `<namespace>__<name>` (a namespace that
// already ends in "__" is not given another).
std::string NamespacedToolName(std::string_view space, std::string_view name);

}  // namespace contextd::model
