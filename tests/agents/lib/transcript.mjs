// Reading what a model received: tool calls and tool results in Anthropic Messages request bodies.

// The text of a tool_result block: its string content, or its text blocks joined.
export function resultText(block) {
  if (typeof block.content === 'string') return block.content;
  if (Array.isArray(block.content)) {
    return block.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');
  }
  return '';
}

// Every tool_use in the request's assistant turns, in order, with its tool_result's text (null
// when the request carries no result for it).
export function toolExchanges(body) {
  const uses = [];
  const results = new Map();
  for (const m of body.messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (m.role === 'assistant' && b.type === 'tool_use') uses.push(b);
      if (m.role === 'user' && b.type === 'tool_result') results.set(b.tool_use_id, b);
    }
  }
  return uses.map((u) => {
    const r = results.get(u.id);
    return { id: u.id, name: u.name, input: u.input, result: r ? resultText(r) : null, isError: r?.is_error === true };
  });
}

// The exchanges of tool `name` (exact, or a suffix such as 'branch_create') in `body`.
export function exchangesOf(body, name) {
  return toolExchanges(body).filter((e) => e.name === name || e.name.endsWith(`__${name}`));
}

// The result the model received for the latest call of `name`, from the last request that
// carries it; throws with the tool names present when there is none.
export function lastResult(bodies, name) {
  for (let i = bodies.length - 1; i >= 0; i--) {
    const found = exchangesOf(bodies[i], name).filter((e) => e.result !== null);
    if (found.length) return found[found.length - 1];
  }
  const names = bodies.length ? toolExchanges(bodies[bodies.length - 1]).map((e) => e.name) : [];
  throw new Error(`no result of ${name} reached the model; tools called: ${names.join(', ')}`);
}

// A branch id (br_ + 32 hex) in a text.
export function branchIdIn(text) {
  const m = /br_[0-9a-f]{32}/.exec(text ?? '');
  return m ? m[0] : null;
}

// A short excerpt for logs and failure messages.
export function excerpt(text, max = 700) {
  const t = String(text ?? '');
  return t.length <= max ? t : `${t.slice(0, max)}... (${t.length} chars)`;
}

// What opens the user message standing for branch_create's answer in contextd's isolated branch
// view (issue 33).
export const kViewOpening = '[contextd] Branch ';

// The text of a message: its string content or its text blocks joined.
export function messageText(m) {
  if (typeof m?.content === 'string') return m.content;
  return (m?.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');
}

// The id of the branch a request shows opened last: in an isolated branch view it opens the user
// message that stands for the create's answer, otherwise it is in branch_create's tool_result
// (`fromResult(body)`; by default the latest result of a tool named `branch_create` or
// `*__branch_create`, throwing as lastResult when there is none).
export function openedBranchId(body, fromResult = (b) => branchIdIn(lastResult([b], 'branch_create').result)) {
  const open = (body.messages ?? []).findLast((m) => m.role === 'user' && messageText(m).startsWith(kViewOpening));
  return open ? branchIdIn(messageText(open)) : fromResult(body);
}
