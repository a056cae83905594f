// End-to-end: no input ends the process (issue 30). Bytes that are not UTF-8 (raw 0xFF and %FF)
// in every /api/v1 path, the live stream, the MCP headers and the model gateway's headers, sent
// over raw sockets to the built binary with a token file: each answer is an error in its
// protocol's JSON with the bytes replaced, the server answers the next request, and /metrics
// shows contextd_internal_errors_total.
import test from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer, cleanup, tempDataDir } from './harness.mjs';

const TOKEN = 'robust-token-0123456789abcdef';

// One raw HTTP/1.1 exchange on a fresh connection (Connection: close); resolves with
// {status, headers, body} (body as a Buffer, de-chunked).
function rawRequest(port, head, body = Buffer.alloc(0)) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    socket.setTimeout(10000, () => socket.destroy(new Error('timed out')));
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      const headText = all.subarray(0, end).toString('latin1');
      const [statusLine, ...lines] = headText.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      let rest = all.subarray(end + 4);
      if (headers['transfer-encoding'] === 'chunked') {
        const parts = [];
        for (;;) {
          const nl = rest.indexOf('\r\n');
          const len = parseInt(rest.subarray(0, nl).toString('latin1'), 16);
          if (!len) break;
          parts.push(rest.subarray(nl + 2, nl + 2 + len));
          rest = rest.subarray(nl + 2 + len + 2);
        }
        rest = Buffer.concat(parts);
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest });
    });
    // Not end(): a half-closed connection tells the listener the client left.
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  });
}

// A GET whose target is `target` (a latin1 string: '\xff' is the byte 0xFF).
function get(port, target, extra = '') {
  return rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    `Authorization: Bearer ${TOKEN}\r\nConnection: close\r\n${extra}\r\n`);
}

// The body parsed as JSON after checking it is valid UTF-8.
function json(r) {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(r.body);
  return JSON.parse(text);
}

test('http: ids that are not UTF-8 on every /api/v1 path, the stream, /mcp and /v1 headers', { timeout: 60000 }, async () => {
  const dir = tempDataDir();
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `acme:${TOKEN}\n`);
  const config = join(dir, 'contextd.yaml');
  writeFileSync(config, 'model_gateway:\n  anthropic:\n    base_url: "http://127.0.0.1:9"\n');
  const server = await startHttpServer({ dataDir: join(dir, 'data'), args: ['--auth-token-file', tokens, '--config', config] });
  const port = Number(new URL(server.url).port);
  try {
    const templates = ['/api/v1/sessions/X/stream', '/api/v1/sessions/X/scopes', '/api/v1/scopes/X/events',
      '/api/v1/scopes/X/events/X', '/api/v1/X', '/api/v1/search?q=X', '/api/v1/scopes/X/events?offset=X'];
    for (const bad of ['\xff', '%FF', '\xc0\xaf']) {
      for (const t of templates) {
        const target = t.replaceAll('X', bad);
        const r = await get(port, target);
        assert.ok([200, 400, 404].includes(r.status), `${JSON.stringify(target)} -> ${r.status}`);
        const body = json(r);
        if (r.status !== 200) assert.equal(typeof body.error, 'string', JSON.stringify(body));
        const next = await get(port, '/api/v1/sessions');
        assert.equal(next.status, 200, `the server answers after ${JSON.stringify(target)}`);
      }
    }
    const stream = json(await get(port, '/api/v1/sessions/\xff/stream'));
    assert.ok(stream.error.includes('\ufffd'), JSON.stringify(stream));

    // /mcp: an unknown Mcp-Session-Id and a Last-Event-ID that are not UTF-8.
    const ping = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}');
    const mcp = await rawRequest(port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
      `Authorization: Bearer ${TOKEN}\r\nMcp-Session-Id: \xff\xfe\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\nContent-Length: ${ping.length}\r\nConnection: close\r\n\r\n`, ping);
    assert.ok(mcp.status >= 400, String(mcp.status));
    json(mcp);
    const resume = await get(port, '/mcp', 'Mcp-Session-Id: \xff\r\nLast-Event-ID: \xff\r\nAccept: text/event-stream\r\n');
    assert.ok(resume.status >= 400, String(resume.status));
    json(resume);

    // The model gateway: a project header that is not UTF-8 gets the provider's error shape.
    const msg = Buffer.from('{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}');
    const model = await rawRequest(port, `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
      `x-api-key: sk-test\r\nanthropic-version: 2023-06-01\r\nx-contextd-project: \xff\xfe\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${msg.length}\r\nConnection: close\r\n\r\n`, msg);
    assert.ok(model.status >= 400, String(model.status));
    const error = json(model);
    assert.equal(error.type, 'error', JSON.stringify(error));

    const metrics = (await get(port, '/metrics')).body.toString('utf8');
    assert.match(metrics, /contextd_internal_errors_total\{where="executor"\} 0/);
    assert.match(metrics, /contextd_internal_errors_total\{where="http"\} 0/);
    assert.equal(server.proc.exitCode, null, 'the server is still running');
  } finally {
    await server.stop();
    cleanup(dir);
  }
});
