// Tests of overhead.mjs's parts that need no contextd: the conversation is deterministic and of
// the advertised size, and the double answers both ways at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { BASE_MESSAGES, buildConversation, requestBody, startDouble, percentile, bodyOf, branchParentMessages, branchCreateTurn,
  branchResultTurn, branchConfig } from './overhead.mjs';

test('the conversation is deterministic, ~400 KB, Claude Code shaped, with secrets', () => {
  const a = requestBody(buildConversation(1, BASE_MESSAGES), BASE_MESSAGES, false);
  const b = requestBody(buildConversation(1, BASE_MESSAGES), BASE_MESSAGES, false);
  assert.ok(a.equals(b));
  assert.ok(a.length > 350_000 && a.length < 450_000, `${a.length} bytes`);
  const body = JSON.parse(a.toString());
  assert.equal(body.tools.length, 20);
  assert.equal(body.messages.length, BASE_MESSAGES);
  for (let i = 1; i < body.messages.length; i++) {
    const m = body.messages[i];
    assert.equal(m.role, i % 2 ? 'assistant' : 'user');
    if (m.role === 'user') assert.equal(m.content[0].tool_use_id, body.messages[i - 1].content.at(-1).id);
  }
  const markers = body.messages.flatMap((m) => m.content).filter((c) => c.cache_control);
  assert.equal(markers.length, 1);
  assert.ok(body.messages.at(-1).content.at(-1).cache_control);
  assert.match(a.toString(), /AKIA[A-Z2-7]{16}/);
});

test('the double answers JSON and SSE, the first event at once', async () => {
  const d = await startDouble();
  const agent = new Agent({ keepAlive: true });
  try {
    const conv = buildConversation(2, 6);
    for (const stream of [false, true]) {
      const body = requestBody(conv, 5, stream);
      const text = await new Promise((resolve, reject) => {
        const req = request(`${d.url}/v1/messages`, { method: 'POST', agent }, (res) => {
          let s = '';
          res.on('data', (c) => { s += c; });
          res.on('end', () => resolve(s));
        });
        req.on('error', reject);
        req.end(body);
      });
      if (stream) assert.match(text, /^event: message_start\n/);
      else assert.equal(JSON.parse(text).type, 'message');
      assert.ok(d.last().equals(body));
    }
  } finally {
    agent.destroy();
    await d.close();
  }
});

test('percentile', () => {
  assert.equal(percentile([3, 1, 2, 4], 50), 2);
  assert.equal(percentile([3, 1, 2, 4], 99), 4);
});

test('branch mode: the parent ends with a tool result, the branch opens with a create call and its result', () => {
  const lane = 10;
  const conv = buildConversation(1, BASE_MESSAGES + 2 * lane);
  const n = branchParentMessages(lane);
  const parent = conv.messages.slice(0, n);
  assert.equal(parent.at(-1).role, 'user');
  assert.equal(parent.at(-1).content[0].type, 'tool_result');
  const create = branchCreateTurn(3);
  assert.equal(create.content[1].name, 'mcp__contextd__branch_create');
  const result = branchResultTurn(create, { branch_id: 'br_1' });
  const branch = conv.messages.slice(n, n + 2 * lane);
  assert.equal(branch[0].role, 'assistant');
  const body = JSON.parse(bodyOf(conv, [...parent, create, result, ...branch]).toString());
  assert.equal(body.messages.length, n + 2 + 2 * lane);
  assert.equal(body.messages[n + 1].content[0].tool_use_id, create.content[1].id);
  assert.ok(body.messages.at(-1).content.at(-1).cache_control);
  assert.match(branchConfig('http://127.0.0.1:9', 'inherited'), /context_folding:\n(?: {2}\S.*\n)* {2}branch_view: inherited\nmodel_gateway:\n {2}anthropic:\n {4}base_url: http:\/\/127.0.0.1:9\n/);
  assert.doesNotMatch(branchConfig('http://127.0.0.1:9', null), /branch_view/);
});
