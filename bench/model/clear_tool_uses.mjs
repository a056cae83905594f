// A simulation of Anthropic's context editing strategy `clear_tool_uses_20250919` with its
// defaults, for bench/model's `clear-tool-uses` variant, in both API forms (Anthropic Messages,
// OpenAI Chat Completions). Pure: no I/O; the caching doubles call it on each request they get.
//
// What the provider does (https://docs.claude.com/en/docs/build-with-claude/context-editing):
// server-side, on each request, once its input exceeds `trigger` (default 100,000 input tokens),
// the oldest tool results are replaced by a placeholder, keeping the last `keep` (3) tool uses;
// tool inputs stay (`clear_tool_inputs` false); `clear_at_least` is unset by default (when set,
// the edit is not applied unless it clears at least that many tokens). The client keeps sending
// the whole history, so each request's edited view is computed afresh from it: a result cleared
// on one request is cleared on the next as well (the history only grows), and one more result
// falls out of the kept three each time a tool use is added. The docs do not give the
// placeholder's words; the simulation uses LangChain's mirror of this strategy, "[cleared]".
// OpenAI has no such feature: in Chat form this is the same rule applied as a simulation.

export const CLEAR_DEFAULTS = Object.freeze({
  trigger: 100000, keep: 3, clearAtLeast: 0, clearToolInputs: false, placeholder: '[cleared]', excludeTools: [],
});

// The settings of a `context_management.edits` entry (Anthropic's field names) over the defaults.
export function clearSettings(edit = {}) {
  const out = { ...CLEAR_DEFAULTS };
  if (edit.trigger?.value !== undefined) out.trigger = edit.trigger.value;
  if (edit.keep?.value !== undefined) out.keep = edit.keep.value;
  if (edit.clear_at_least?.value !== undefined) out.clearAtLeast = edit.clear_at_least.value;
  if (edit.exclude_tools) out.excludeTools = edit.exclude_tools;
  if (edit.clear_tool_inputs) throw new Error('clear_tool_inputs is not simulated');
  return out;
}

// Picks which of `uses` ([{name, tokens, cleared}], oldest first, each with its result) to clear
// for a request of `inputTokens`: indexes, or [] when the edit does not apply.
export function pickCleared(uses, inputTokens, settings, placeholderTokens) {
  if (!(inputTokens > settings.trigger)) return [];
  const older = uses.slice(0, Math.max(0, uses.length - settings.keep));
  const picked = [];
  let freed = 0;
  older.forEach((u, i) => {
    if (u.cleared || settings.excludeTools.includes(u.name)) return;
    picked.push(i);
    freed += Math.max(0, u.tokens - placeholderTokens);
  });
  if (settings.clearAtLeast > 0 && freed < settings.clearAtLeast) return [];
  return picked;
}

// Anthropic Messages: `body` edited (a copy; the input is not changed) and what was cleared.
// `inputTokens`: the request's input as billed; `count(text)`: tokens of a text.
export function clearToolUsesAnthropic(body, inputTokens, count, settings = CLEAR_DEFAULTS) {
  const uses = [];
  const resultAt = new Map();
  body.messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((b, j) => { if (b.type === 'tool_result') resultAt.set(b.tool_use_id, [i, j]); });
  });
  for (const m of body.messages) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      const at = resultAt.get(b.id);
      if (b.type !== 'tool_use' || !at) continue;
      const r = body.messages[at[0]].content[at[1]];
      const text = typeof r.content === 'string' ? r.content : (r.content ?? []).map((c) => c.text ?? '').join('\n');
      uses.push({ name: b.name, at, tokens: count(text), cleared: text === settings.placeholder });
    }
  }
  const picked = pickCleared(uses, inputTokens, settings, count(settings.placeholder));
  if (!picked.length) return { body, cleared: 0, cleared_tokens: 0 };
  const messages = body.messages.map((m) => (Array.isArray(m.content) ? { ...m, content: [...m.content] } : m));
  let freed = 0;
  for (const i of picked) {
    const [mi, bi] = uses[i].at;
    const { content, ...rest } = messages[mi].content[bi];
    messages[mi].content[bi] = { ...rest, content: [{ type: 'text', text: settings.placeholder }] };
    freed += uses[i].tokens - count(settings.placeholder);
  }
  return { body: { ...body, messages }, cleared: picked.length, cleared_tokens: freed };
}

// Chat Completions: the same rule over `tool_calls` and `tool` messages.
export function clearToolUsesChat(body, inputTokens, count, settings = CLEAR_DEFAULTS) {
  const resultAt = new Map();
  body.messages.forEach((m, i) => { if (m.role === 'tool') resultAt.set(m.tool_call_id, i); });
  const uses = [];
  for (const m of body.messages) {
    if (m.role !== 'assistant') continue;
    for (const c of m.tool_calls ?? []) {
      const at = resultAt.get(c.id);
      if (at === undefined) continue;
      const content = body.messages[at].content;
      const text = typeof content === 'string' ? content : (content ?? []).map((p) => p.text ?? '').join('\n');
      uses.push({ name: c.function?.name, at, tokens: count(text), cleared: text === settings.placeholder });
    }
  }
  const picked = pickCleared(uses, inputTokens, settings, count(settings.placeholder));
  if (!picked.length) return { body, cleared: 0, cleared_tokens: 0 };
  const messages = [...body.messages];
  let freed = 0;
  for (const i of picked) {
    messages[uses[i].at] = { ...messages[uses[i].at], content: settings.placeholder };
    freed += uses[i].tokens - count(settings.placeholder);
  }
  return { body: { ...body, messages }, cleared: picked.length, cleared_tokens: freed };
}
