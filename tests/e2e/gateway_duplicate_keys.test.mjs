// One reading of every JSON document (decision 0029), MCP side: a tools/call whose arguments name
// a member twice is refused with -32600 naming the path, and the upstream receives nothing (the
// upstream, a small stdio MCP server written here, logs every line it reads); the same call
// without the duplicate reaches it. contextd over real HTTP on 127.0.0.1, driven by the official
// SDK client and by raw fetch for the bodies no serializer writes.
import test from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer, connectHttp, cleanup, tempDataDir, textOf } from './harness.mjs';

const SECRET = 'AKIAZ7VRSQ5TJX4MRNQW';

const UPSTREAM = `
import { createInterface } from 'node:readline';
import { appendFileSync } from 'node:fs';
const log = process.argv[2];
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  appendFileSync(log, line + '\\n');
  const m = JSON.parse(line);
  if (m.method === 'initialize') {
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: 'recorder', version: '1' } } });
  } else if (m.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: m.id, result: { tools: [{ name: 'echo',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }] } });
  } else if (m.method === 'tools/call') {
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: String(m.params.arguments.text) }] } });
  } else if (m.method && m.id !== undefined) {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  }
});
`;

test('gateway: tools/call with a duplicate argument key is refused and never reaches the upstream', async () => {
  const dataDir = tempDataDir();
  const script = join(dataDir, 'recorder.mjs');
  const log = join(dataDir, 'upstream.log');
  writeFileSync(script, UPSTREAM);
  writeFileSync(log, '');
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['upstreams:', '  - name: rec', '    stdio:', '      command: node',
    `      args: [${JSON.stringify(script)}, ${JSON.stringify(log)}]`, ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const { client, transport } = await connectHttp(server.url);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('rec__echo'), names.join(','));
    const calls = () => readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"tools/call"'));
    const headers = {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-session-id': transport.sessionId, 'mcp-protocol-version': transport.protocolVersion ?? '2025-06-18',
    };
    const bodies = [
      ['params.arguments: duplicate key "text"',
        `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rec__echo","arguments":{"text":"hello","text":"${SECRET}"}}}`],
      ['params.arguments: duplicate key "text"',
        `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rec__echo","arguments":{"text":"hello","t\\u0065xt":"${SECRET}"}}}`],
      ['top level: duplicate key "params"',
        `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rec__echo","arguments":{"text":"hello"}},"params":{"name":"rec__echo","arguments":{"text":"${SECRET}"}}}`],
    ];
    for (const [where, body] of bodies) {
      const res = await fetch(server.url, { method: 'POST', headers, body });
      const text = await res.text();
      assert.equal(res.status, 400, text);
      const reply = JSON.parse(text);
      assert.equal(reply.id, 7, text);
      assert.equal(reply.error.code, -32600, text);
      assert.ok(reply.error.message.includes(where), `${reply.error.message} should name ${where}`);
    }
    assert.deepEqual(calls(), [], 'the upstream received a tools/call');
    // The same call without the duplicate goes through: the log above could have seen one.
    const ok = await client.callTool({ name: 'rec__echo', arguments: { text: 'hello' } });
    assert.equal(textOf(ok), 'hello');
    assert.equal(calls().length, 1);
    assert.ok(!readFileSync(log, 'utf8').includes(SECRET));
    await client.close();
  } finally {
    await server.stop();
    cleanup(dataDir);
  }
});
