// Anthropic Messages requests as the scripted doubles (tests/agents, bench/model) read them: the
// canonical form of a value (what a thinking signature or a cache entry is bound to), and the
// structural checks the API makes that a gateway rewriting history could break, as the provider
// words them, so that every request a test or benchmark produces is checked.

// JSON with sorted keys and without cache_control markers (clients move them between requests).
export function canonical(value) {
  const walk = (v) => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      const out = {};
      for (const k of Object.keys(v).sort()) if (k !== 'cache_control') out[k] = walk(v[k]);
      return out;
    }
    return v;
  };
  return JSON.stringify(walk(value));
}

// Anthropic's structural checks that a gateway rewriting history could break: a 400 message, or
// null. Every tool_use must be answered by a tool_result in the next (user) message, and every
// tool_result must answer a tool_use of the message before it.
export function validate(body) {
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  if (messages[0].role !== 'user') return 'messages: first message must use the "user" role';
  const blocksOf = (m) => (Array.isArray(m?.content) ? m.content : []);
  for (let i = 0; i < messages.length; i++) {
    if (messages[i]?.role !== 'user' && messages[i]?.role !== 'assistant') return `messages.${i}.role: unexpected role`;
    const content = blocksOf(messages[i]);
    const firstOther = content.findIndex((b) => b.type !== 'tool_result');
    if (firstOther >= 0 && content.slice(firstOther).some((b) => b.type === 'tool_result')) {
      return `messages.${i}.content: tool_result blocks must come first in a user message`;
    }
    const uses = blocksOf(messages[i]).filter((b) => b.type === 'tool_use').map((b) => b.id);
    const results = new Set(blocksOf(messages[i + 1]).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id));
    for (const id of uses) {
      if (messages[i].role === 'assistant' && !results.has(id)) {
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
