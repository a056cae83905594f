// One reading of every JSON document (decision 0029): a model request whose body names a member
// twice, at the top level (`messages` twice) or deep inside a tool result (`content` twice, also
// spelled with an escape), is refused by the model gateway with a 400 in the provider's shape
// naming the path, and nothing reaches the upstream; the same body without the duplicate goes
// through. All three model APIs, on real HTTP against a test upstream on 127.0.0.1.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startUpstream, startGateway } from './lib/model_upstream.mjs';
import { BINARY } from '../e2e/harness.mjs';

const missing = !existsSync(BINARY) ? `contextd is not built at ${BINARY}` : null;
const opts = (timeout) => ({ skip: missing ?? false, timeout });
const SECRET = 'AKIAZ7VRSQ5TJX4MRNQW';

const answers = {
  anthropic: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'ok' }],
    stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } },
  chat: { id: 'c1', object: 'chat.completion', model: 'm', choices: [{ index: 0, finish_reason: 'stop',
    message: { role: 'assistant', content: 'ok' } }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
  responses: { id: 'resp_1', object: 'response', model: 'm', status: 'completed',
    output: [{ type: 'message', id: 'm1', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] }],
    usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 } },
};

async function withGateway(fn) {
  const upstream = await startUpstream({
    handle: (req, res, record) => {
      const kind = record.url.includes('chat') ? 'chat' : record.url.includes('responses') ? 'responses' : 'anthropic';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(kind === 'anthropic' && record.url.includes('count_tokens') ? { input_tokens: 3 } : answers[kind]));
    },
  });
  const gw = await startGateway({ anthropic: { base_url: upstream.url }, openai: { base_url: `${upstream.url}/v1` } });
  try {
    await fn(gw, upstream);
  } finally {
    await gw.stop();
    await upstream.close();
  }
}

const headers = {
  anthropic: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
  openai: { 'content-type': 'application/json', authorization: 'Bearer k' },
};

// Posts `body` (a string: JSON.stringify cannot write a duplicate) and returns {status, error}.
async function post(gw, path, body) {
  const res = await fetch(`${gw.origin}${path}`, {
    method: 'POST', headers: path.includes('/messages') ? headers.anthropic : headers.openai, body,
  });
  const text = await res.text();
  let parsed;
  assert.doesNotThrow(() => { parsed = JSON.parse(text); }, `not JSON: ${text}`);
  return { status: res.status, text, body: parsed };
}

function assertRefused(reply, provider, path) {
  assert.equal(reply.status, 400, reply.text);
  if (provider === 'anthropic') {
    assert.equal(reply.body.type, 'error', reply.text);
    assert.equal(reply.body.error.type, 'invalid_request_error', reply.text);
  } else {
    assert.equal(reply.body.error.type, 'invalid_request_error', reply.text);
  }
  assert.ok(reply.body.error.message.includes(path), `${reply.body.error.message} should name ${path}`);
  assert.ok(!reply.text.includes(SECRET));
}

const toolUse = '{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"env"}}]}';
const anthropicCases = [
  ['top level: duplicate key "messages"',
    `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"messages":[{"role":"user","content":"${SECRET}"}]}`],
  ['messages.2.content.0: duplicate key "content"',
    `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"run env"},${toolUse},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok","content":"${SECRET}"}]}]}`],
  ['messages.2.content.0: duplicate key "content"',
    `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"run env"},${toolUse},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok","\\u0063ontent":"${SECRET}"}]}]}`],
  ['messages.2.content.0.content.0: duplicate key "text"',
    `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"run env"},${toolUse},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok","text":"${SECRET}"}]}]}]}`],
];
const anthropicValid = `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"run env"},${toolUse},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`;

test('Messages (and count_tokens): a duplicate key anywhere is a 400 naming the path; nothing goes upstream', opts(60000), async () => {
  await withGateway(async (gw, upstream) => {
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      for (const [where, body] of anthropicCases) assertRefused(await post(gw, path, body), 'anthropic', where);
    }
    assert.equal(upstream.requests.length, 0, 'nothing may reach the upstream');
    const ok = await post(gw, '/v1/messages', anthropicValid);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(upstream.requests.length, 1);
  });
});

const toolCall = '{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\\"command\\":\\"env\\"}"}}]}';
const chatCases = [
  ['top level: duplicate key "messages"',
    `{"model":"m","messages":[{"role":"user","content":"hi"}],"messages":[{"role":"user","content":"${SECRET}"}]}`],
  ['messages.2: duplicate key "content"',
    `{"model":"m","messages":[{"role":"user","content":"run env"},${toolCall},{"role":"tool","tool_call_id":"call_1","content":"ok","content":"${SECRET}"}]}`],
  ['messages.2.content.0: duplicate key "text"',
    `{"model":"m","messages":[{"role":"user","content":"run env"},${toolCall},{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"ok","t\\u0065xt":"${SECRET}"}]}]}`],
];
const chatValid = `{"model":"m","messages":[{"role":"user","content":"run env"},${toolCall},{"role":"tool","tool_call_id":"call_1","content":"ok"}]}`;

test('Chat Completions: a duplicate key anywhere is a 400 naming the path; nothing goes upstream', opts(60000), async () => {
  await withGateway(async (gw, upstream) => {
    for (const [where, body] of chatCases) assertRefused(await post(gw, '/v1/chat/completions', body), 'openai', where);
    assert.equal(upstream.requests.length, 0, 'nothing may reach the upstream');
    const ok = await post(gw, '/v1/chat/completions', chatValid);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(upstream.requests.length, 1);
  });
});

const call = '{"type":"function_call","call_id":"call_1","name":"bash","arguments":"{\\"command\\":\\"env\\"}"}';
const responsesCases = [
  ['top level: duplicate key "input"',
    `{"model":"m","input":[{"role":"user","content":"hi"}],"input":[{"role":"user","content":"${SECRET}"}]}`],
  ['input.2: duplicate key "output"',
    `{"model":"m","input":[{"role":"user","content":"run env"},${call},{"type":"function_call_output","call_id":"call_1","output":"ok","output":"${SECRET}"}]}`],
  ['input.0.content.0: duplicate key "text"',
    `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi","text":"${SECRET}"}]}]}`],
];
const responsesValid = `{"model":"m","input":[{"role":"user","content":"run env"},${call},{"type":"function_call_output","call_id":"call_1","output":"ok"}]}`;

test('Responses: a duplicate key anywhere is a 400 naming the path; nothing goes upstream', opts(60000), async () => {
  await withGateway(async (gw, upstream) => {
    for (const [where, body] of responsesCases) assertRefused(await post(gw, '/v1/responses', body), 'openai', where);
    assert.equal(upstream.requests.length, 0, 'nothing may reach the upstream');
    const ok = await post(gw, '/v1/responses', responsesValid);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(upstream.requests.length, 1);
  });
});
