// The Chat Completions double on its own (no gateway): the JSON it answers, the chunks it streams
// (the usage chunk only when asked), its models and 404s, and the tool-call pairing it enforces
// as the API does (a double that accepted an unanswered call would let a broken fold pass).
// Run: node --test tests/agents/
import test from 'node:test';
import assert from 'node:assert/strict';
import { postJson } from './lib/http_client.mjs';
import { startChatDouble, pairingProblem } from './lib/chat_double.mjs';

const chunksOf = (text) => text.split('\n\n').filter(Boolean).map((block) => {
  assert.match(block, /^data: /);
  const data = block.slice(6);
  return data === '[DONE]' ? data : JSON.parse(data);
});

test('answers JSON, streams chunks with the usage chunk only when asked, lists models, 404s the rest', async () => {
  const double = await startChatDouble({ script: [
    { text: 'hi', calls: [{ id: 'c1', name: 'read', arguments: { path: 'a' } }] },
    { text: 'streamed', usage: { prompt_tokens: 50, cached_tokens: 32, completion_tokens: 3 } },
    { text: 'plain stream' },
  ] });
  const post = (body, path = '/chat/completions') => postJson(`${double.url}${path}`, body, { authorization: 'Bearer k' });
  try {
    const messages = [{ role: 'user', content: 'x' }];
    const json = await post({ model: 'm', messages });
    assert.equal(json.status, 200);
    const body = JSON.parse(json.text);
    assert.equal(body.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual(body.choices[0].message.tool_calls, [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } }]);
    assert.equal(body.usage.total_tokens, body.usage.prompt_tokens + body.usage.completion_tokens);

    const streamed = await post({ model: 'm', messages, stream: true, stream_options: { include_usage: true } });
    assert.match(streamed.type, /text\/event-stream/);
    const chunks = chunksOf(streamed.text);
    assert.equal(chunks.at(-1), '[DONE]');
    const usage = chunks.at(-2);
    assert.deepEqual(usage.choices, []);
    assert.deepEqual([usage.usage.prompt_tokens, usage.usage.prompt_tokens_details.cached_tokens, usage.usage.completion_tokens], [50, 32, 3]);
    assert.ok(chunks.slice(0, -2).every((c) => c.usage === null));
    assert.equal(chunks.slice(0, -2).map((c) => c.choices[0].delta.content ?? '').join(''), 'streamed');

    const plain = chunksOf((await post({ model: 'm', messages, stream: true })).text);
    assert.ok(plain.slice(0, -1).every((c) => !('usage' in c) && c.choices.length === 1));

    const models = await fetch(`${double.url}/models`);
    assert.equal((await models.json()).data[0].id, 'gpt-double');
    const missing = await post({}, '/responses');
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.text).error.code, 'unknown_url');
    assert.equal(double.chatRequests().length, 3);
    assert.deepEqual(double.problems, []);
  } finally {
    await double.close();
  }
});

test('refuses a request whose tool calls and tool messages do not pair up', async () => {
  const call = (id) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } });
  const asking = { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] };
  assert.equal(pairingProblem([{ role: 'user', content: 'x' }, asking,
    { role: 'tool', tool_call_id: 'b', content: '' }, { role: 'tool', tool_call_id: 'a', content: '' },
    { role: 'user', content: 'y' }]), null);
  assert.match(pairingProblem([asking, { role: 'tool', tool_call_id: 'a', content: '' }, { role: 'user', content: 'y' }]), /did not have response messages: b/);
  assert.match(pairingProblem([asking]), /did not have response messages: a, b/);
  assert.match(pairingProblem([{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'a', content: '' }]), /must be a response/);

  const double = await startChatDouble({ script: [{ text: 'never' }] });
  try {
    const res = await postJson(`${double.url}/chat/completions`, { model: 'm', messages: [asking] });
    assert.equal(res.status, 400);
    assert.equal(JSON.parse(res.text).error.type, 'invalid_request_error');
    assert.equal(double.problems.length, 1);
  } finally {
    await double.close();
  }
});
