// Tests of overhead.mjs's parts that need no contextd: the conversation is deterministic and of
// the advertised size, and the double answers both ways at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { BASE_MESSAGES, buildConversation, requestBody, startDouble, percentile } from './overhead.mjs';

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
