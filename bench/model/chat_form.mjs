// The Chat Completions form of bench/model's conversations (`--api chat`): the driver keeps its
// history as Anthropic Messages blocks (one source for both forms) and renders each request as a
// custom agent on an OpenAI base URL would send it. Pure: no I/O.
//
//   system    one `system` message (the system prompt's blocks joined)
//   user      its tool results as `tool` messages (tool_call_id, text content), in order, then its
//             text blocks as one `user` message
//   assistant `content` (text or null) and `tool_calls` [{id, type: 'function', function: {name,
//             arguments: JSON}}]
//   tools     [{type: 'function', function: {name, description, parameters}}]; contextd's are
//             named `contextd__<tool>` (what its Chat adapter recognises, decision 0017)
import { chatMessageOf } from './openai_caching_double.mjs';

export const CHAT_MODEL = 'gpt-bench';

export function chatTool(tool) {
  return { type: 'function', function: { name: tool.name, description: tool.description ?? '', parameters: tool.input_schema ?? { type: 'object' } } };
}

const resultText = (b) => (typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => c.text ?? '').join('\n'));

// The Chat messages of an Anthropic-form history.
export function chatMessages(system, messages) {
  const out = [{ role: 'system', content: system.map((b) => b.text).join('\n\n') }];
  for (const m of messages) {
    if (m.role === 'assistant') { out.push(chatMessageOf(m.content)); continue; }
    const texts = [];
    for (const b of m.content) {
      if (b.type === 'tool_result') out.push({ role: 'tool', tool_call_id: b.tool_use_id, content: resultText(b) });
      else if (b.type === 'text') texts.push(b.text);
    }
    if (texts.length) out.push({ role: 'user', content: texts.join('\n\n') });
  }
  return out;
}

// The Anthropic-form blocks of a Chat assistant message (the inverse of chatMessageOf).
export function blocksOfChat(message) {
  const blocks = [];
  if (message.content) blocks.push({ type: 'text', text: message.content });
  for (const c of message.tool_calls ?? []) {
    blocks.push({ type: 'tool_use', id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments || '{}') });
  }
  return blocks;
}

export function chatRequestBody(system, tools, messages) {
  return { model: CHAT_MODEL, messages: chatMessages(system, messages), tools: tools.map(chatTool) };
}
