// The Anthropic Messages double on its own (no agent): the SSE it streams, the JSON it answers
// without streaming, count_tokens, models, HEAD /, its 404s, and the thinking-signature binding
// as the provider documents it: a replayed thinking block whose prefix changed is refused (and
// only then: a moved cache_control marker is not a change), as are a gap in the run of thinking
// blocks, a moved block and one put back after its removal; drop_block drops them instead and says
// so; a tool loop must carry its turn's thinking back. Run: node --test tests/agents/
import test from 'node:test';
import assert from 'node:assert/strict';
import { postJson, sseEvents } from './lib/http_client.mjs';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';

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

// The documented binding of thinking blocks (lib/thinking_binding.mjs): the prefix leaves thinking
// blocks out, the blocks a request keeps must be an unbroken run of the original sequence, and a
// block put back after its removal invalidates those produced while it was gone.
const kAdaptive = { type: 'adaptive' };
const kBase = { model: 'm', max_tokens: 10, system: kSystem, tools: kTools, thinking: kAdaptive };
const kBeta = 'thinking-binding-controls-2026-08-01';
const kDropBlock = { ...kAdaptive, block_binding: { prefix_mismatch_behavior: 'drop_block' } };
const user = (text) => ({ role: 'user', content: [{ type: 'text', text }] });
const withoutThinking = (messages, ...at) =>
  messages.map((m, i) => (at.includes(i) ? { ...m, content: m.content.filter((b) => b.type !== 'thinking') } : m));
const send = (double, messages, extra = {}, headers = {}) =>
  postJson(`${double.url}/v1/messages`, { ...kBase, ...extra, messages }, { 'x-api-key': 'k', ...headers });

// Plays `n` turns, each answered by the double and followed by a new user message (not a tool
// result): [u0, a0, u1, a1, ..., un]. The thinking block of a<k> is at messages.<2k+1>.content.0.
async function userTurns(double, n, messages = [user('task 0')]) {
  for (let k = 0; k < n; k++) {
    const res = await send(double, messages);
    assert.equal(res.status, 200, res.text);
    messages = [...messages, { role: 'assistant', content: JSON.parse(res.text).content }, user(`task ${messages.length}`)];
  }
  return messages;
}

function assertUnbound(res, path) {
  assert.equal(res.status, 400, res.text);
  const { error } = JSON.parse(res.text);
  assert.equal(error.type, 'invalid_request_error');
  assert.ok(error.message.startsWith(`${path}: Invalid \`signature\` in \`thinking\` block. The block is bound to a different conversation.`), error.message);
}

test('thinking blocks may be removed from the start, from the end or all; a gap, a move or a changed prefix is refused', async () => {
  const double = await startAnthropicDouble();
  try {
    const h = await userTurns(double, 3);  // thinking at messages 1, 3, 5
    assert.equal((await send(double, h)).status, 200);
    // Parameters outside system/tools/messages do not count.
    const other = await send(double, h, { max_tokens: 99, thinking: { type: 'enabled', budget_tokens: 2048 }, metadata: { user_id: 'u' }, tool_choice: { type: 'auto' } });
    assert.equal(other.status, 200, other.text);
    for (const [removed, why] of [[[1], 'the oldest'], [[1, 3], 'the two oldest'], [[5], 'the newest'], [[3, 5], 'the two newest'], [[1, 3, 5], 'all']]) {
      const res = await send(double, withoutThinking(h, ...removed));
      assert.equal(res.status, 200, `${why} removed: ${res.text}`);
    }
    // A gap: the middle one removed, so the one after it is refused.
    assertUnbound(await send(double, withoutThinking(h, 3)), 'messages.5.content.0');
    // Moved: the two newest swapped.
    const swapped = structuredClone(h);
    [swapped[3].content[0], swapped[5].content[0]] = [h[5].content[0], h[3].content[0]];
    assertUnbound(await send(double, swapped), 'messages.3.content.0');
    // A changed message invalidates the blocks after it, and every later one: the first is named.
    const changed = structuredClone(h);
    changed[2] = user('task 2, rewritten');
    assertUnbound(await send(double, changed), 'messages.3.content.0');
    const later = structuredClone(h);
    later[4] = user('task 4, rewritten');
    assertUnbound(await send(double, later), 'messages.5.content.0');
    // Without thinking blocks after the change, nothing is bound to it.
    assert.equal((await send(double, withoutThinking(changed, 3, 5))).status, 200);
    assert.deepEqual(double.refused.map((r) => r.message.split(':')[0]), ['messages.5.content.0', 'messages.3.content.0', 'messages.3.content.0', 'messages.5.content.0']);
    assert.deepEqual([double.dropped, double.degraded], [[], []]);
  } finally {
    await double.close();
  }
});

test('a thinking block put back after its removal invalidates the blocks produced while it was gone', async () => {
  const double = await startAnthropicDouble();
  try {
    const h = await userTurns(double, 3);
    // The oldest removed for one more turn (a3 at messages 7)...
    const gone = await userTurns(double, 1, withoutThinking(h, 1));
    assert.equal((await send(double, gone)).status, 200);
    // ...and put back: a3's block was produced while it was gone.
    const back = gone.map((m, i) => (i === 1 ? h[1] : m));
    assertUnbound(await send(double, back), 'messages.7.content.0');
    // The newest removed, a reply, and the newest put back: the reply's block is refused.
    const endGone = await userTurns(double, 1, withoutThinking(h, 5));
    assertUnbound(await send(double, endGone.map((m, i) => (i === 5 ? h[5] : m))), 'messages.7.content.0');
  } finally {
    await double.close();
  }
});

test('a changed mid-conversation system message invalidates the thinking blocks after it, not those before', async () => {
  const double = await startAnthropicDouble();
  try {
    const h = await userTurns(double, 1);
    const env = (text) => ({ role: 'system', content: text });
    const withEnv = await userTurns(double, 1, [...h, env('Environment: linux')]);  // [u0, a0, u1, sys, a1, u2]
    assert.equal((await send(double, withEnv)).status, 200);
    const changed = withEnv.map((m, i) => (i === 3 ? env('Environment: darwin') : m));
    assertUnbound(await send(double, changed), 'messages.4.content.0');
  } finally {
    await double.close();
  }
});

test('the refusal names the setting; block_binding needs its beta and one of two behaviours', async () => {
  const double = await startAnthropicDouble();
  try {
    const h = await userTurns(double, 1);
    const changed = [user('task 0, rewritten'), ...h.slice(1)];
    const plain = JSON.parse((await send(double, changed)).text).error.message;
    assert.equal(plain, 'messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different ' +
      'conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block". That ' +
      'setting requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header.');
    const error = { ...kAdaptive, block_binding: { prefix_mismatch_behavior: 'error' } };
    const withBeta = await send(double, changed, { thinking: error }, { 'anthropic-beta': `context-management-2025-06-27, ${kBeta}` });
    assert.equal(JSON.parse(withBeta.text).error.message, plain.replace(/ That setting requires .*$/, ''));
    for (const [thinking, headers, want] of [
      [kDropBlock, {}, 'thinking.adaptive.block_binding: Extra inputs are not permitted'],
      [{ type: 'enabled', budget_tokens: 2048, block_binding: { prefix_mismatch_behavior: 'drop_block' } }, { 'anthropic-beta': 'other-beta' }, 'thinking.enabled.block_binding: Extra inputs are not permitted'],
      [{ ...kAdaptive, block_binding: { prefix_mismatch_behavior: 'ignore' } }, { 'anthropic-beta': kBeta }, "thinking.adaptive.block_binding.prefix_mismatch_behavior: Input should be 'error' or 'drop_block'"],
      [{ ...kAdaptive, block_binding: { on_mismatch: 'drop_block' } }, { 'anthropic-beta': kBeta }, 'thinking.adaptive.block_binding.on_mismatch: Extra inputs are not permitted'],
    ]) {
      const res = await send(double, h, { thinking }, headers);
      assert.equal(res.status, 400, res.text);
      assert.equal(JSON.parse(res.text).error.message, want);
    }
    assert.equal(double.refused.length, 6);
  } finally {
    await double.close();
  }
});

test('drop_block drops the invalid blocks, answers, and reports them in input_transformations (JSON and SSE)', async () => {
  const double = await startAnthropicDouble();
  try {
    const h = await userTurns(double, 3);
    const beta = { 'anthropic-beta': kBeta };
    const kept = await send(double, h, { thinking: kDropBlock }, beta);
    assert.deepEqual(JSON.parse(kept.text).input_transformations, [], 'block_binding set, nothing dropped');
    assert.equal(JSON.parse((await send(double, h)).text).input_transformations, undefined, 'no block_binding, no field');

    const changed = h.map((m, i) => (i === 2 ? user('task 2, rewritten') : m));
    const res = await send(double, changed, { thinking: kDropBlock }, beta);
    assert.equal(res.status, 200, res.text);
    const reply = JSON.parse(res.text);
    const dropped = [
      { type: 'thinking_dropped', path: 'messages.3.content.0', reason: 'prefix_binding_mismatch' },
      { type: 'thinking_dropped', path: 'messages.5.content.0', reason: 'prefix_binding_mismatch' },
    ];
    assert.deepEqual(reply.input_transformations, dropped);
    assert.equal(reply.content[0].type, 'thinking');
    const index = double.requests.length - 1;
    assert.deepEqual(double.dropped, dropped.map(({ type, ...d }) => ({ index, ...d })));
    // The reply's block follows the blocks that were kept: the history without the dropped ones
    // and with the reply is accepted without drop_block.
    const next = [...withoutThinking(changed, 3, 5), { role: 'assistant', content: reply.content }, user('task 8')];
    assert.equal((await send(double, next)).status, 200);

    const streamed = await send(double, changed, { thinking: kDropBlock, stream: true }, beta);
    const events = sse(streamed.text);
    assert.equal(events[0].type, 'message_start');
    assert.deepEqual(events[0].message.input_transformations, dropped);
    assert.equal(assemble(events).content[0].type, 'thinking');
    assert.equal(double.dropped.length, 4);
    assert.deepEqual(double.refused, []);
  } finally {
    await double.close();
  }
});

test('in a tool loop the turn\'s thinking must come back: otherwise the double answers without thinking and says so', async () => {
  const read = { tools: [{ name: 'read', input: {} }] };
  const double = await startAnthropicDouble({ script: [read, read, read, read, read] });
  try {
    // [u0, a0 (thinking, tool_use), r0, a1 (thinking, tool_use), r1]
    let h = [user('task 0')];
    for (let k = 0; k < 2; k++) {
      const reply = JSON.parse((await send(double, h)).text);
      const use = reply.content.find((b) => b.type === 'tool_use');
      h = [...h, { role: 'assistant', content: reply.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'x' }] }];
    }
    assert.equal((await send(double, h)).status, 200);
    // The oldest removed: a fine chain, but the tool loop is one turn, so it is still needed.
    const adaptive = await send(double, withoutThinking(h, 1));
    assert.equal(adaptive.status, 200, adaptive.text);
    assert.deepEqual(JSON.parse(adaptive.text).content.map((b) => b.type), ['tool_use']);
    assert.equal(double.degraded.length, 1);
    assert.equal(double.degraded[0].index, double.requests.length - 1);
    assert.match(double.degraded[0].message, /^messages\.1: /);
    // Manual thinking: the API's 400, recorded as degraded (thinking_binding.mjs says why).
    const enabled = await send(double, withoutThinking(h, 3), { thinking: { type: 'enabled', budget_tokens: 2048 } });
    assert.equal(enabled.status, 200, enabled.text);
    assert.equal(double.degraded.length, 2);
    assert.match(double.degraded[1].message, /^messages\.3: /);
    // Without thinking on, nothing is required.
    assert.equal((await send(double, withoutThinking(h, 1, 3), { thinking: undefined })).status, 200);
    assert.equal(double.degraded.length, 2);
  } finally {
    await double.close();
  }
});

test('the thinking of a finished earlier turn may be left out while a later tool loop runs', async () => {
  const double = await startAnthropicDouble({ script: [{ tools: [{ name: 'read', input: {} }] }, { text: 'done' }, { tools: [{ name: 'read', input: {} }] }] });
  try {
    let h = [user('task 0')];
    const step = async (next) => {
      const reply = JSON.parse((await send(double, h)).text);
      const use = reply.content.find((b) => b.type === 'tool_use');
      h = [...h, { role: 'assistant', content: reply.content }, use ? { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'x' }] } : user(next)];
    };
    await step();
    await step('task 1');
    await step();  // [u0, a0, r0, a1 (text), u1, a2, r2]: a0 and a1 finished before u1
    const res = await send(double, withoutThinking(h, 1, 3), { thinking: { type: 'enabled', budget_tokens: 2048 } });
    assert.equal(res.status, 200, res.text);
    assertThinkingKept(double);
    assert.deepEqual(double.refused, []);
  } finally {
    await double.close();
  }
});
