// bench/model's claude-code form: the Messages requests of a conversation shaped as the pinned
// Claude Code sends them (data/claude-code-2.1.332.json, captured by capture_claude_code.mjs).
// Pure: no I/O but reading the pinned file once. What it adds to the minimal form:
// - `system` and `tools` as captured (three system blocks, the 2nd and 3rd with cache_control;
//   twelve tool definitions), contextd's always-loaded MCP tools sorted in among them and
//   DeferredToolPlaceholder kept before the last tool, as Claude Code orders them;
// - the first user message: the captured <system-reminder> blocks (gitStatus, attribution), then
//   the task; then a role:"system" environment message (with contextd's MCP instructions and its
//   deferred tools when contextd is connected);
// - the silent-turn nudge, a role:"system" message after the user message of every
//   SILENT_TURN_REMINDER_TURNS-th assistant turn in a row without text, at most
//   SILENT_TURN_REMINDERS_PER_STRETCH times until a turn with text or a user text (measured with
//   `capture_claude_code.mjs --cadence`);
// - the model's reasoning as a thinking block (adaptive thinking), `thinking`, `output_config`,
//   `context_management: {edits: [clear_thinking_20251015 keep all]}` on every request;
// - a breakpoint on the last block of the last message (a system message that is last is sent as
//   one marked text block, later as a string, as Claude Code does).
import { readFileSync } from 'node:fs';

export const FORMS = Object.freeze(['minimal', 'claude-code']);
export const SILENT_TURN_REMINDER_TURNS = 5;
export const SILENT_TURN_REMINDERS_PER_STRETCH = 3;
export const SILENT_TURN_REMINDER =
  "The user hasn't heard from you in a while. As you continue, keep them updated when there's something to tell \u2014 a finding, a change of plan.";
const PLACEHOLDER = 'DeferredToolPlaceholder';
const CC = Object.freeze({ type: 'ephemeral' });

let pinned = null;
// The pinned capture (data/claude-code-2.1.332.json).
export function claudeCodePrefix() {
  pinned ??= JSON.parse(readFileSync(new URL('./data/claude-code-2.1.332.json', import.meta.url), 'utf8'));
  return pinned;
}

// Claude Code's tool list with `mcpTools` (Anthropic definitions of the always-loaded MCP tools):
// sorted by name (code units: built-ins before mcp__*), DeferredToolPlaceholder before the last.
export function claudeCodeTools(prefix, mcpTools = []) {
  const builtins = prefix.tools.filter((t) => t.name !== PLACEHOLDER);
  const placeholder = prefix.tools.find((t) => t.name === PLACEHOLDER);
  const sorted = [...builtins, ...mcpTools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (placeholder) sorted.splice(Math.max(0, sorted.length - 1), 0, placeholder);
  return sorted;
}

// The environment message's text; with contextd connected, its MCP instructions go in before the
// skills list and its deferred tools (`deferred`: full names) join the ToolSearch list, sorted.
export function environmentText(prefix, { server = 'contextd', instructions = '', deferred = [] } = {}) {
  let text = prefix.environment;
  if (deferred.length) {
    text = text.replace(/(before calling them:\n)((?:[^\n]+\n)+)/, (_, head, list) =>
      head + [...list.trim().split('\n'), ...deferred].sort().join('\n') + '\n');
  }
  if (instructions) {
    const at = text.indexOf('The following skills are available');
    if (at < 0) throw new Error('the pinned environment message has no skills list to put MCP instructions before');
    text = text.slice(0, at) + '# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to ' +
      `use their tools and resources:\n\n## ${server}\n${instructions}\n\n` + text.slice(at);
  }
  return text;
}

// The opening messages: the user message (reminders, then the task) and the environment message.
export function openingMessages(prefix, task, env = {}) {
  return [
    { role: 'user', content: [...prefix.first_user_reminders.map((text) => ({ type: 'text', text })), { type: 'text', text: task }] },
    { role: 'system', content: environmentText(prefix, env) },
  ];
}

// A placeholder of the shape the API returns: the caching double signs the thinking blocks of the
// reply it sends (bound to the request it answers) and checks them on every later request, so this
// one never reaches a request unless the double refused the turn's request (skip() signs it then).
const SIGNATURE = 'E'.repeat(344);

// The assistant blocks of a scripted turn's reasoning: a thinking block (the recorded thought).
export function reasoningBlocks(text) {
  return text ? [{ type: 'thinking', thinking: text, signature: SIGNATURE }] : [];
}

// Counts silent assistant turns and decides when Claude Code appends its nudge.
export class SilentTurns {
  constructor() { this.silent = 0; this.inStretch = 0; }

  // After the assistant turn `content` and the user message answering it (`userSpoke`: it carries
  // text the user typed, not only tool results): true when the nudge follows.
  next(content, userSpoke) {
    if (content.some((b) => b.type === 'text' && b.text.trim() !== '') || userSpoke) {
      this.silent = 0;
      this.inStretch = 0;
      return false;
    }
    if (++this.silent < SILENT_TURN_REMINDER_TURNS || this.inStretch >= SILENT_TURN_REMINDERS_PER_STRETCH) return false;
    this.silent = 0;
    this.inStretch++;
    return true;
  }
}

// The request body. `messages` holds system messages as strings; the last message gets the
// breakpoint on its last block. `clearToolUses`: an edit to append (the clear-tool-uses variant).
export function claudeCodeRequestBody(prefix, tools, messages, { stream = false, clearToolUses = null } = {}) {
  const last = messages[messages.length - 1];
  const blocks = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
  const marked = messages.slice(0, -1).concat([{
    ...last, content: blocks.map((b, i) => (i === blocks.length - 1 ? { ...b, cache_control: CC } : b)),
  }]);
  const { max_tokens, thinking, context_management, output_config } = prefix.request;
  return {
    model: prefix.model, messages: marked, system: prefix.system, tools, max_tokens, thinking,
    context_management: clearToolUses ? { edits: [...context_management.edits, clearToolUses] } : context_management,
    output_config, ...(stream ? { stream: true } : {}),
  };
}
