// Wire strings of JSON-RPC 2.0 and MCP (method names, field names, protocol versions), written
// once so that no other file spells them. Constants only; thread-safe.
#pragma once

#include <string_view>

namespace contextd::protocol::wire {

// ---- Protocol versions (newest first).
inline constexpr std::string_view kVersion2025_11_25 = "2025-11-25";
inline constexpr std::string_view kVersion2025_06_18 = "2025-06-18";
inline constexpr std::string_view kVersion2025_03_26 = "2025-03-26";
inline constexpr std::string_view kLatestVersion = kVersion2025_11_25;

// ---- JSON-RPC envelope fields.
inline constexpr std::string_view kJsonrpc = "jsonrpc";
inline constexpr std::string_view kJsonrpcVersion = "2.0";
inline constexpr std::string_view kId = "id";
inline constexpr std::string_view kMethod = "method";
inline constexpr std::string_view kParams = "params";
inline constexpr std::string_view kResult = "result";
inline constexpr std::string_view kError = "error";
inline constexpr std::string_view kCode = "code";
inline constexpr std::string_view kMessage = "message";
inline constexpr std::string_view kData = "data";

// ---- Methods: client to server.
inline constexpr std::string_view kInitialize = "initialize";
inline constexpr std::string_view kPing = "ping";
inline constexpr std::string_view kToolsList = "tools/list";
inline constexpr std::string_view kToolsCall = "tools/call";
inline constexpr std::string_view kResourcesList = "resources/list";
inline constexpr std::string_view kResourcesTemplatesList = "resources/templates/list";
inline constexpr std::string_view kResourcesRead = "resources/read";
inline constexpr std::string_view kResourcesSubscribe = "resources/subscribe";
inline constexpr std::string_view kResourcesUnsubscribe = "resources/unsubscribe";
inline constexpr std::string_view kPromptsList = "prompts/list";
inline constexpr std::string_view kPromptsGet = "prompts/get";
inline constexpr std::string_view kLoggingSetLevel = "logging/setLevel";
inline constexpr std::string_view kCompletionComplete = "completion/complete";

// ---- Methods: server to client.
inline constexpr std::string_view kSamplingCreateMessage = "sampling/createMessage";
inline constexpr std::string_view kElicitationCreate = "elicitation/create";
inline constexpr std::string_view kRootsList = "roots/list";

// ---- Notifications.
inline constexpr std::string_view kNotifInitialized = "notifications/initialized";
inline constexpr std::string_view kNotifCancelled = "notifications/cancelled";
inline constexpr std::string_view kNotifProgress = "notifications/progress";
inline constexpr std::string_view kNotifMessage = "notifications/message";
inline constexpr std::string_view kNotifToolsListChanged = "notifications/tools/list_changed";
inline constexpr std::string_view kNotifResourcesListChanged =
    "notifications/resources/list_changed";
inline constexpr std::string_view kNotifResourcesUpdated = "notifications/resources/updated";
inline constexpr std::string_view kNotifPromptsListChanged = "notifications/prompts/list_changed";
inline constexpr std::string_view kNotifRootsListChanged = "notifications/roots/list_changed";

// ---- Field names.
inline constexpr std::string_view kProtocolVersion = "protocolVersion";
inline constexpr std::string_view kCapabilities = "capabilities";
inline constexpr std::string_view kClientInfo = "clientInfo";
inline constexpr std::string_view kServerInfo = "serverInfo";
inline constexpr std::string_view kInstructions = "instructions";
inline constexpr std::string_view kName = "name";
inline constexpr std::string_view kTitle = "title";
inline constexpr std::string_view kVersion = "version";
inline constexpr std::string_view kDescription = "description";
inline constexpr std::string_view kInputSchema = "inputSchema";
inline constexpr std::string_view kOutputSchema = "outputSchema";
inline constexpr std::string_view kAnnotations = "annotations";
// Tool listing `_meta` key: Claude Code puts a tool that sets it true in every request's tool list
// instead of deferring it behind its tool search (which costs the model a turn to load it).
inline constexpr std::string_view kAnthropicAlwaysLoad = "anthropic/alwaysLoad";
inline constexpr std::string_view kArguments = "arguments";
inline constexpr std::string_view kContent = "content";
inline constexpr std::string_view kStructuredContent = "structuredContent";
inline constexpr std::string_view kIsError = "isError";
inline constexpr std::string_view kType = "type";
inline constexpr std::string_view kText = "text";
inline constexpr std::string_view kBlob = "blob";
inline constexpr std::string_view kUri = "uri";
inline constexpr std::string_view kRoots = "roots";
inline constexpr std::string_view kUriTemplate = "uriTemplate";
inline constexpr std::string_view kMimeType = "mimeType";
inline constexpr std::string_view kContents = "contents";
inline constexpr std::string_view kCursor = "cursor";
inline constexpr std::string_view kNextCursor = "nextCursor";
inline constexpr std::string_view kTools = "tools";
inline constexpr std::string_view kResources = "resources";
inline constexpr std::string_view kResourceTemplates = "resourceTemplates";
inline constexpr std::string_view kPrompts = "prompts";
inline constexpr std::string_view kMessages = "messages";
inline constexpr std::string_view kRequired = "required";
inline constexpr std::string_view kMeta = "_meta";
inline constexpr std::string_view kProgressToken = "progressToken";
inline constexpr std::string_view kProgress = "progress";
inline constexpr std::string_view kTotal = "total";
inline constexpr std::string_view kRequestId = "requestId";
inline constexpr std::string_view kReason = "reason";
inline constexpr std::string_view kLevel = "level";
inline constexpr std::string_view kLogger = "logger";
inline constexpr std::string_view kRef = "ref";
inline constexpr std::string_view kArgument = "argument";
inline constexpr std::string_view kValue = "value";
inline constexpr std::string_view kValues = "values";
inline constexpr std::string_view kContext = "context";
inline constexpr std::string_view kCompletion = "completion";
inline constexpr std::string_view kHasMore = "hasMore";
inline constexpr std::string_view kRole = "role";

// ---- Capability names.
inline constexpr std::string_view kCapTools = "tools";
inline constexpr std::string_view kCapResources = "resources";
inline constexpr std::string_view kCapPrompts = "prompts";
inline constexpr std::string_view kCapLogging = "logging";
inline constexpr std::string_view kCapCompletions = "completions";
inline constexpr std::string_view kCapSampling = "sampling";
inline constexpr std::string_view kCapElicitation = "elicitation";
inline constexpr std::string_view kCapRoots = "roots";
inline constexpr std::string_view kListChanged = "listChanged";
inline constexpr std::string_view kSubscribe = "subscribe";

// ---- Content and reference types.
inline constexpr std::string_view kTypeText = "text";
inline constexpr std::string_view kTypeImage = "image";
inline constexpr std::string_view kTypeAudio = "audio";
inline constexpr std::string_view kTypeResource = "resource";
inline constexpr std::string_view kRefPrompt = "ref/prompt";
inline constexpr std::string_view kRefResource = "ref/resource";

}  // namespace contextd::protocol::wire
