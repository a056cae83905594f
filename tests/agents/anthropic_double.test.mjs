// The Anthropic Messages double on its own (no agent): the SSE it streams, the JSON it answers
// without streaming, count_tokens, models, HEAD /, its 404s, and the thinking-signature binding
// that refuses a replayed thinking block whose prefix changed (and only then: a moved
// cache_control marker is not a change). Run: node --test tests/agents/
import test from 'node:test';
import assert from 'node:assert/strict';
import { postJson, sseEvents } from './lib/http_client.mjs';
import { startAnthropicDouble } from './lib/anthropic_double.mjs';

const post = (double, body, path = '/v1/messages?beta=true') => postJson(`${double.url}${path}`, body, { 'x-api-key': 'k' });

const sse = sseEvents;

// The message an SSE body streams, rebuilt as a client does.
function assemble(events) {
  const message = events[0].message;
  const blocks = [];
  for (const e of events) {
    if (e.type === 'content_block_start') blocks[e.index] = { ...e.content_block, partial: '' };
    if (e.type === 'content_block_delta') {
      const b = blocks[e.index];
      if (e.delta.type === 'text_delta') b.text += e.delta.text;
      if (e.delta.type === 'thinking_delta') b.thinking += e.delta.thinking;
      if (e.delta.type === 'signature_delta') b.signature += e.delta.signature;
      if (e.delta.type === 'input_json_delta') b.partial += e.delta.partial_json;
    }
    if (e.type === 'message_delta') message.stop_reason = e.delta.stop_reason;
  }
  message.content = blocks.map(({ partial, ...b }) => (b.type === 'tool_use' ? { ...b, input: JSON.parse(partial) } : b));
  return message;
}

const kTools = [{ name: 'read', description: 'read a file', input_schema: { type: 'object', properties: {} } }];
const kSystem = [{ type: 'text', text: 'You are a test.', cache_control: { type: 'ephemeral' } }];
const kUser = { role: 'user', content: [{ type: 'text', text: 'hi' }] };

test('streams a turn: thinking with its signature, text, parallel tool_use, stop_reason tool_use', async () => {
  const double = await startAnthropicDouble({ script: [{ text: 'reading both', tools: [{ name: 'read', input: { path: 'a' } }, { name: 'read', input: { path: 'b' } }] }] });
  try {
    const res = await post(double, { model: 'm', max_tokens: 10, stream: true, system: kSystem, tools: kTools, messages: [kUser] });
    assert.equal(res.status, 200);
    assert.match(res.type, /text\/event-stream/);
    const events = sse(res.text);
    assert.equal(events[0].type, 'message_start');
    assert.equal(events.at(-1).type, 'message_stop');
    const message = assemble(events);
    assert.deepEqual(message.content.map((b) => b.type), ['thinking', 'text', 'tool_use', 'tool_use']);
    assert.ok(message.content[0].signature.length > 20);
    assert.equal(message.content[1].text, 'reading both');
    assert.deepEqual(message.content.slice(2).map((b) => b.input), [{ path: 'a' }, { path: 'b' }]);
    assert.notEqual(message.content[2].id, message.content[3].id);
    assert.equal(message.stop_reason, 'tool_use');
    assert.equal(double.requests[0].headers['x-api-key'], 'k');
    assert.equal(double.requests[0].url, '/v1/messages?beta=true');
  } finally {
    await double.close();
  }
});

test('answers JSON without streaming; count_tokens, models, HEAD / and a 404 in the API error shape', async () => {
  const double = await startAnthropicDouble({ script: [{ text: 'hello' }] });
  try {
    const res = await post(double, { model: 'm', max_tokens: 10, tools: kTools, messages: [kUser] }, '/v1/messages');
    assert.equal(res.status, 200);
    const message = JSON.parse(res.text);
    assert.deepEqual(message.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal(message.stop_reason, 'end_turn');
    const count = await post(double, { model: 'm', messages: [kUser] }, '/v1/messages/count_tokens');
    assert.ok(JSON.parse(count.text).input_tokens > 0);
    const models = await fetch(`${double.url}/v1/models`);
    assert.equal((await models.json()).data[0].type, 'model');
    assert.equal((await fetch(`${double.url}/`, { method: 'HEAD' })).status, 200);
    const missing = await post(double, {}, '/v1/complete');
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.text).error.type, 'not_found_error');
    // A request without tools is a side request: it does not use up the script.
    const side = JSON.parse((await post(double, { model: 'm', max_tokens: 10, messages: [kUser] })).text);
    assert.equal(side.content.at(-1).text, 'ok');
    assert.equal(double.mainRequests().length, 1);
  } finally {
    await double.close();
  }
});

test('a thinking block replayed after a changed prefix is refused with the provider 400, a moved cache_control is not', async () => {
  const double = await startAnthropicDouble({ script: [{ tools: [{ name: 'read', input: {} }] }, { text: 'a' }, { text: 'b' }, { text: 'c' }] });
  try {
    const first = JSON.parse((await post(double, { model: 'm', max_tokens: 10, system: kSystem, tools: kTools, messages: [kUser] }, '/v1/messages')).text);
    const toolUse = first.content.find((b) => b.type === 'tool_use');
    const history = (userText) => [
      { role: 'user', content: [{ type: 'text', text: userText }] },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'x', cache_control: { type: 'ephemeral' } }] },
    ];
    // The same prefix, with the cache marker moved off the system prompt: accepted.
    const same = await post(double, { model: 'm', max_tokens: 10, system: [{ type: 'text', text: 'You are a test.' }], tools: kTools, messages: history('hi') }, '/v1/messages');
    assert.equal(same.status, 200, same.text);
    // A changed earlier message: refused, naming the block.
    const changed = await post(double, { model: 'm', max_tokens: 10, system: kSystem, tools: kTools, messages: history('hello') }, '/v1/messages');
    assert.equal(changed.status, 400);
    const error = JSON.parse(changed.text);
    assert.equal(error.type, 'error');
    assert.equal(error.error.type, 'invalid_request_error');
    assert.match(error.error.message, /^messages\.1\.content\.0: .*bound to a different conversation/);
    // Changed tools and a changed system prompt: refused too.
    const tools = await post(double, { model: 'm', max_tokens: 10, system: kSystem, tools: [...kTools, { ...kTools[0], name: 'write' }], messages: history('hi') }, '/v1/messages');
    assert.equal(tools.status, 400);
    const system = await post(double, { model: 'm', max_tokens: 10, system: 'other', tools: kTools, messages: history('hi') }, '/v1/messages');
    assert.equal(system.status, 400);
    // An edited thinking text is refused as well.
    const edited = history('hi');
    edited[1] = { role: 'assistant', content: first.content.map((b) => (b.type === 'thinking' ? { ...b, thinking: 'edited' } : b)) };
    assert.equal((await post(double, { model: 'm', max_tokens: 10, system: kSystem, tools: kTools, messages: edited }, '/v1/messages')).status, 400);
    assert.equal(double.errors.length, 4);
  } finally {
    await double.close();
  }
});

// What Claude Code 2.1.332 sends when the provider takes mid-conversation system messages
// (CLAUDE_CODE_FORCE_MID_CONVERSATION_SYSTEM=1, or a model whose catalog entry allows them): an
// environment message after the first user message, a token count after every tool result, its
// nudges ("The user hasn't heard from you in a while"), the newest one as a text block with the
// cache breakpoint and as a string on later requests.
const kThinkingOn = { type: 'enabled', budget_tokens: 31999, display: 'omitted' };
const kClearThinking = { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] };

test('mid-conversation role "system" messages are accepted where Claude Code puts them, and bound into the thinking prefix', async () => {
  const double = await startAnthropicDouble({ script: [{ tools: [{ name: 'read', input: {} }] }, { text: 'a' }, { text: 'b' }, { text: 'c' }] });
  try {
    const base = { model: 'm', max_tokens: 10, system: kSystem, tools: kTools, thinking: kThinkingOn, context_management: kClearThinking };
    const env = 'Environment: linux';
    const first = await post(double, { ...base, messages: [kUser, { role: 'system', content: [{ type: 'text', text: env, cache_control: { type: 'ephemeral' } }] }] }, '/v1/messages');
    assert.equal(first.status, 200, first.text);
    const turn = JSON.parse(first.text);
    const use = turn.content.find((b) => b.type === 'tool_use');
    const history = (envContent) => [
      kUser, { role: 'system', content: envContent },
      { role: 'assistant', content: turn.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'x' }] },
      { role: 'system', content: 'The user hasn\'t heard from you in a while.', clear_at: 'next_user_message' },
      { role: 'system', content: [], output_config: { effort: 'high' } },
    ];
    // The environment message as a string now (the breakpoint moved on): the same prefix.
    const again = await post(double, { ...base, messages: history(env) }, '/v1/messages');
    assert.equal(again.status, 200, again.text);
    // A changed system message before the assistant turn changes its prefix.
    const changed = await post(double, { ...base, messages: history('Environment: darwin') }, '/v1/messages');
    assert.equal(changed.status, 400);
    assert.match(JSON.parse(changed.text).error.message, /^messages\.2\.content\.0: .*bound to a different conversation/);
    // count_tokens takes them too.
    const count = await post(double, { ...base, messages: history(env) }, '/v1/messages/count_tokens');
    assert.equal(count.status, 200, count.text);
    // Adaptive thinking is accepted.
    const adaptive = await post(double, { ...base, thinking: { type: 'adaptive' }, messages: history(env) }, '/v1/messages');
    assert.equal(adaptive.status, 200, adaptive.text);
    assert.deepEqual(double.errors.length, 1);
  } finally {
    await double.close();
  }
});

test('role "system" messages are refused where the API refuses them, and do not answer a tool_use', async () => {
  const double = await startAnthropicDouble({ script: [] });
  try {
    const use = { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read', input: {} }] };
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] };
    const cases = [
      [[{ role: 'system', content: 's' }, kUser], /^messages\.0: use the top-level `system` parameter/],
      [[kUser, { role: 'assistant', content: 'a' }, { role: 'system', content: 's' }, kUser], /^messages\.2: role "system" must follow a user message/],
      // Between a tool_use turn and its results: the call is unanswered.
      [[kUser, use, { role: 'system', content: 's' }, result], /^messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1/],
      [[kUser, { role: 'system' }], /needs content or output_config/],
      [[kUser, { role: 'system', content: [] }], /needs content or output_config/],
      [[kUser, { role: 'system', content: [{ type: 'image', source: {} }] }], /content\.0\.type: Input tag 'image'/],
      [[kUser, { role: 'system', content: 's', clear_at: 'later' }], /clear_at: Input should be/],
      [[kUser, { role: 'system', content: 's', output_config: { effort: 'huge' } }], /output_config\.effort/],
      [[kUser, { role: 'system', content: 's', name: 'x' }], /messages\.1\.name: Extra inputs/],
      [[{ ...kUser, clear_at: 'never' }], /only permitted on role "system"/],
      [[kUser, { role: 'developer', content: 's' }], /messages\.1\.role: Input should be 'user', 'assistant' or 'system'/],
    ];
    for (const [messages, want] of cases) {
      const res = await post(double, { model: 'm', max_tokens: 10, messages }, '/v1/messages');
      assert.equal(res.status, 400, `${JSON.stringify(messages)} was accepted`);
      assert.match(JSON.parse(res.text).error.message, want);
    }
    // The thinking and context_management shapes.
    for (const [extra, want] of [[{ thinking: { type: 'enabled', budget_tokens: 10 } }, /budget_tokens/],
      [{ thinking: { type: 'sometimes' } }, /thinking\.type/],
      [{ context_management: { edits: [{ type: 'clear_everything' }] } }, /edits\.0\.type/]]) {
      const res = await post(double, { model: 'm', max_tokens: 10, messages: [kUser], ...extra }, '/v1/messages');
      assert.equal(res.status, 400);
      assert.match(JSON.parse(res.text).error.message, want);
    }
    assert.equal(double.refused.length, cases.length + 3);
    assert.ok(double.refused.every((r) => r.url === '/v1/messages'));
  } finally {
    await double.close();
  }
});

test('a subagent\'s requests play their own script', async () => {
  const double = await startAnthropicDouble({
    script: [{ text: 'main 1' }, { text: 'main 2' }], subScript: [{ text: 'sub 1' }],
    matchSub: (body) => JSON.stringify(body.system ?? '').includes('You are a subagent'),
  });
  try {
    const ask = async (system) => JSON.parse((await post(double, { model: 'm', max_tokens: 10, system, tools: kTools, messages: [kUser] }, '/v1/messages')).text).content.at(-1).text;
    assert.equal(await ask('main'), 'main 1');
    assert.equal(await ask('You are a subagent'), 'sub 1');
    assert.equal(await ask('You are a subagent'), 'Subagent done.');
    assert.equal(await ask('main'), 'main 2');
    assert.equal(double.mainRequests().length, 2);
    assert.equal(double.subRequests().length, 2);
  } finally {
    await double.close();
  }
});
