// End-to-end: the official TypeScript SDK client drives the built binary over stdio and HTTP.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startHttpServer, connectHttp, connectStdio, cleanup, BINARY, CONFORMANCE_BINARY, tempDataDir } from './harness.mjs';

test('http: initialize, ping, list tools, call a fixture tool with progress', async () => {
  const server = await startHttpServer({ args: ['--conformance-fixtures'], binary: CONFORMANCE_BINARY });
  try {
    const { client, transport } = await connectHttp(server.url);
    assert.ok(transport.sessionId && transport.sessionId.length >= 32, 'session id of >= 128 bits');
    assert.equal(client.getServerVersion().name, 'contextd');
    await client.ping();
    const tools = await client.listTools();
    const names = tools.tools.map((t) => t.name);
    assert.ok(names.includes('branch_create'), `branch tools listed: ${names}`);
    assert.ok(names.includes('test_simple_text'), `fixture tools listed: ${names}`);
    const progress = [];
    const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
      { onprogress: (p) => progress.push(p) });
    assert.ok(!result.isError);
    assert.ok(progress.length >= 1, 'progress notifications arrived');
    await transport.terminateSession();
    await client.close();
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0, 'SIGTERM stops the server cleanly');
    cleanup(server.dataDir);
  }
});

test('http: fixture tools do not exist without the flag', async () => {
  const server = await startHttpServer();
  try {
    const { client } = await connectHttp(server.url);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!names.includes('test_simple_text'));
    await client.close();
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

test('stdio: initialize, list tools, EOF exits 0', async () => {
  const { client, transport, dataDir } = await connectStdio();
  try {
    await client.ping();
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.deepEqual(names.filter((n) => n.startsWith('branch_')).sort(),
      ['branch_create', 'branch_return', 'branch_status']);
  } finally {
    await client.close();
    cleanup(dataDir);
  }
});

test('stdio: nothing but protocol on stdout, exit 0 on EOF, parse error answered', async () => {
  const dataDir = tempDataDir();
  const proc = spawn(BINARY, ['serve', '--transport', 'stdio', '--data-dir', dataDir], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (c) => { out += c.toString(); });
  proc.stdin.write('{not json\n');
  proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }) + '\n');
  proc.stdin.end();
  const code = await new Promise((resolve) => proc.on('exit', resolve));
  assert.equal(code, 0);
  const lines = out.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.length, 2);
  assert.equal(lines[0].error.code, -32700);
  assert.equal(lines[1].id, 1);
  assert.equal(lines[1].result.protocolVersion, '2025-11-25');
  cleanup(dataDir);
});
