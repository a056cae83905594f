// Anthropic Messages requests as the scripted doubles (tests/agents, bench/model) read them: the
// canonical form of a value (what a thinking signature or a cache entry is bound to), and the
// structural checks the API makes that a gateway rewriting history could break, as the provider
// words them, so that every request a test or benchmark produces is checked.

// JSON with sorted keys and without cache_control markers (clients move them between requests).
// A message whose content is a string is read as the one text block the API makes of it: Claude
// Code sends its newest system message as a text block carrying the cache breakpoint and the same
// message as a string once the breakpoint has moved on, and the provider takes both as one prefix.
export function canonical(value) {
  const walk = (v) => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      const out = {};
      for (const k of Object.keys(v).sort()) {
        if (k === 'cache_control') continue;
        out[k] = k === 'content' && typeof v[k] === 'string' && typeof v.role === 'string'
          ? (v[k] === '' ? [] : [{ text: v[k], type: 'text' }]) : walk(v[k]);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(walk(value));
}

const kSystemBlockTypes = new Set(['text', 'tool_addition', 'tool_removal']);
const kEfforts = new Set(['low', 'medium', 'high', 'xhigh', 'max']);
const kClearAt = new Set(['next_user_message', 'never']);
const kThinking = new Set(['enabled', 'adaptive', 'disabled']);
const kEdits = new Set(['clear_thinking_20251015', 'clear_tool_uses_20250919', 'compact_20260112']);

// A mid-conversation `role: "system"` message (the beta Claude Code uses when the provider takes
// it, BetaSystemMessageParam in @anthropic-ai/sdk): a 400 message, or null. Its content is a
// string or text / tool_addition / tool_removal blocks; `clear_at` and `output_config` are its
// only other fields, and one of content and output_config must be there. It may not open the
// conversation (the system prompt is the top-level `system`) and must follow a user message
// (possibly through other system messages): the wording is the one Claude Code's fallback
// recognises (`role "system" must follow a user message`).
function validateSystem(m, i, messages) {
  for (const k of Object.keys(m)) {
    if (!['role', 'content', 'clear_at', 'output_config'].includes(k)) return `messages.${i}.${k}: Extra inputs are not permitted`;
  }
  if (i === 0) return 'messages.0: use the top-level `system` parameter for the initial system prompt';
  let prev = i - 1;
  while (prev >= 0 && messages[prev]?.role === 'system') prev--;
  if (prev < 0 || messages[prev]?.role !== 'user') return `messages.${i}: role "system" must follow a user message`;
  if (m.clear_at != null && !kClearAt.has(m.clear_at)) return `messages.${i}.clear_at: Input should be 'next_user_message' or 'never'`;
  if (m.output_config != null) {
    if (typeof m.output_config !== 'object' || Array.isArray(m.output_config)) return `messages.${i}.output_config: Input should be an object`;
    for (const [k, v] of Object.entries(m.output_config)) {
      if (k !== 'effort') return `messages.${i}.output_config.${k}: Extra inputs are not permitted`;
      if (v != null && !kEfforts.has(v)) return `messages.${i}.output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'`;
    }
  }
  const content = m.content;
  const empty = content === undefined || content === null || (Array.isArray(content) && content.length === 0) || content === '';
  if (empty && m.output_config == null) return `messages.${i}: a role "system" message needs content or output_config`;
  if (content !== undefined && content !== null && typeof content !== 'string') {
    if (!Array.isArray(content)) return `messages.${i}.content: Input should be a valid string or list`;
    for (let j = 0; j < content.length; j++) {
      const b = content[j];
      if (!kSystemBlockTypes.has(b?.type)) return `messages.${i}.content.${j}.type: Input tag '${b?.type}' found using 'type' does not match any of the expected tags: 'text', 'tool_addition', 'tool_removal'`;
      if (b.type === 'text' && (typeof b.text !== 'string' || b.text === '')) return `messages.${i}.content.${j}.text: text content blocks must be non-empty`;
    }
  }
  return null;
}

// The beta that lets a request choose what happens to a thinking block bound to another prefix
// (`thinking.block_binding.prefix_mismatch_behavior`); without it the field is an extra input.
export const kBindingBeta = 'thinking-binding-controls-2026-08-01';
const kMismatchBehaviors = new Set(['error', 'drop_block']);

// Whether the `anthropic-beta` header (a comma-separated list; node joins repeated headers with
// ", ") names `beta`. `headers` is node's lowercased map or any object (keys read case-blind).
export function hasBeta(headers, beta) {
  const key = Object.keys(headers ?? {}).find((k) => k.toLowerCase() === 'anthropic-beta');
  const value = key === undefined ? '' : headers[key];
  return (Array.isArray(value) ? value.join(',') : String(value)).split(',').map((s) => s.trim()).includes(beta);
}

// `thinking.block_binding`: only with the beta, on thinking that is on, and one of two behaviours.
function validateBinding(t, headers) {
  if (t.block_binding == null) return null;
  const at = `thinking.${t.type}.block_binding`;
  if (t.type === 'disabled' || !hasBeta(headers, kBindingBeta)) return `${at}: Extra inputs are not permitted`;
  const b = t.block_binding;
  if (typeof b !== 'object' || Array.isArray(b)) return `${at}: Input should be an object`;
  for (const k of Object.keys(b)) {
    if (k !== 'prefix_mismatch_behavior') return `${at}.${k}: Extra inputs are not permitted`;
  }
  if (b.prefix_mismatch_behavior != null && !kMismatchBehaviors.has(b.prefix_mismatch_behavior)) {
    return `${at}.prefix_mismatch_behavior: Input should be 'error' or 'drop_block'`;
  }
  return null;
}

// The request-level fields whose shape the doubles check (what Claude Code sends of them):
// `thinking` (enabled with budget_tokens, adaptive, disabled; block_binding with its beta) and
// `context_management.edits`.
function validateTopLevel(body, headers) {
  const t = body.thinking;
  if (t != null) {
    if (!kThinking.has(t.type)) return `thinking.type: Input tag '${t.type}' found using 'type' does not match any of the expected tags: 'enabled', 'adaptive', 'disabled'`;
    if (t.type === 'enabled' && !(Number.isInteger(t.budget_tokens) && t.budget_tokens >= 1024)) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    const binding = validateBinding(t, headers);
    if (binding) return binding;
  }
  const cm = body.context_management;
  if (cm != null) {
    if (!Array.isArray(cm.edits)) return 'context_management.edits: Field required';
    for (let j = 0; j < cm.edits.length; j++) {
      if (!kEdits.has(cm.edits[j]?.type)) return `context_management.edits.${j}.type: unknown edit type '${cm.edits[j]?.type}'`;
    }
  }
  return null;
}

// Anthropic's structural checks that a gateway rewriting history could break: a 400 message, or
// null. Every tool_use must be answered by a tool_result in the next message (a user message:
// a system message in between leaves it unanswered), and every tool_result must answer a
// tool_use of the message right before it. Mid-conversation system messages are checked by
// validateSystem; their text is not a user turn (two user messages around one are two turns).
// `headers` (the request's) decide which betas the request may use; none when left out.
export function validate(body, headers = {}) {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  if (messages[0].role === 'system') return 'messages.0: use the top-level `system` parameter for the initial system prompt';
  if (messages[0].role !== 'user') return 'messages: first message must use the "user" role';
  const top = validateTopLevel(body, headers);
  if (top) return top;
  const blocksOf = (m) => (Array.isArray(m?.content) ? m.content : []);
  for (let i = 0; i < messages.length; i++) {
    const role = messages[i]?.role;
    if (role === 'system') {
      const bad = validateSystem(messages[i], i, messages);
      if (bad) return bad;
      continue;
    }
    if (role !== 'user' && role !== 'assistant') return `messages.${i}.role: Input should be 'user', 'assistant' or 'system'`;
    if (messages[i].clear_at !== undefined) return `messages.${i}.clear_at: only permitted on role "system" messages`;
    const content = blocksOf(messages[i]);
    const firstOther = content.findIndex((b) => b.type !== 'tool_result');
    if (firstOther >= 0 && content.slice(firstOther).some((b) => b.type === 'tool_result')) {
      return `messages.${i}.content: tool_result blocks must come first in a user message`;
    }
    const uses = blocksOf(messages[i]).filter((b) => b.type === 'tool_use').map((b) => b.id);
    const results = new Set(blocksOf(messages[i + 1]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id));
    for (const id of uses) {
      if (role === 'assistant' && !results.has(id)) {
        return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${id}`;
      }
    }
    const before = new Set(blocksOf(messages[i - 1]).filter((b) => b.type === 'tool_use').map((b) => b.id));
    for (const b of blocksOf(messages[i])) {
      if (b.type === 'tool_result' && !before.has(b.tool_use_id)) {
        return `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}`;
      }
    }
  }
  return null;
}
