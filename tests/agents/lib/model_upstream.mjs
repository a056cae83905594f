// What tests/agents/model_gateway.test.mjs puts behind contextd's model gateway besides the
// scripted double: an upstream (http or https, 127.0.0.1 port 0) whose handler each test writes,
// that records every request byte for byte and every socket it accepted; a throwaway CA and leaf
// certificate made with the openssl CLI; and contextd started with a `model_gateway:` config.
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpServer, tempDataDir, cleanup } from '../../e2e/harness.mjs';

// Starts an upstream whose `handle(req, res, record)` runs once the request body is read
// (record = {method, url, headers, rawHeaders, raw, socket}); `tls` = {key, cert} makes it https.
// Resolves with {url, port, requests, sockets, handle (settable), close()}.
export async function startUpstream({ tls = null, handle = null } = {}) {
  const upstream = { requests: [], sockets: new Set(), handle, url: '', port: 0 };
  const onRequest = (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const record = {
        method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders,
        raw: Buffer.concat(chunks).toString('utf8'), socket: req.socket,
      };
      upstream.requests.push(record);
      if (!upstream.handle) { res.writeHead(500); res.end('no handler'); return; }
      upstream.handle(req, res, record);
    });
  };
  const server = tls ? createHttpsServer({ key: tls.key, cert: tls.cert }, onRequest)
    : createHttpServer(onRequest);
  server.on(tls ? 'secureConnection' : 'connection', (socket) => {
    upstream.sockets.add(socket);
    socket.on('close', () => upstream.sockets.delete(socket));
  });
  // A client that refuses the certificate shows up here, not as a request.
  server.on('tlsClientError', () => {});
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.port = server.address().port;
  upstream.url = `${tls ? 'https' : 'http'}://127.0.0.1:${upstream.port}`;
  upstream.close = () => new Promise((resolve) => {
    for (const s of upstream.sockets) s.destroy();
    server.closeAllConnections?.();
    server.close(() => resolve());
  });
  return upstream;
}

// A port on 127.0.0.1 that nothing listens on (bound, then closed).
export async function closedPort() {
  const server = createHttpServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// A CA and a leaf for 127.0.0.1 and localhost (subjectAltName), signed by that CA, in a temp dir:
// {dir, caFile, key, cert} (key and cert as PEM strings). Needs the openssl CLI.
export function makeCa(name) {
  const dir = mkdtempSync(join(tmpdir(), `contextd-ca-${name}-`));
  const run = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], timeout: 20000 });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem',
    '-days', '2', '-subj', `/CN=contextd test CA ${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'leaf.key', '-out', 'leaf.csr',
    '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'leaf.ext'), ['basicConstraints=CA:FALSE',
    'subjectAltName=IP:127.0.0.1,DNS:localhost', 'extendedKeyUsage=serverAuth', ''].join('\n'));
  run('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'leaf.pem', '-days', '2', '-extfile', 'leaf.ext');
  return {
    dir, caFile: join(dir, 'ca.pem'),
    key: readFileSync(join(dir, 'leaf.key')), cert: readFileSync(join(dir, 'leaf.pem')),
  };
}

// Starts contextd (HTTP, port 0, fresh data dir) with `model_gateway: {anthropic: anthropic,
// openai: openai, max_body_bytes}` (sections left out when not given; `providers`: the
// model_gateway.providers.<name> mapping, of which anthropic and openai are aliases; `folding`:
// `context_folding:` keys). Resolves with the harness's server plus {origin, stop()} (stop also
// removes the data dir).
export async function startGateway({ anthropic = null, openai = null, autoFold = null, maxBodyBytes = null, providers = null, folding = null }) {
  const dataDir = tempDataDir();
  const lines = [];
  if (folding) {
    lines.push('context_folding:');
    for (const [k, v] of Object.entries(folding)) lines.push(`  ${k}: ${JSON.stringify(v)}`);
  }
  lines.push('model_gateway:');
  if (maxBodyBytes !== null) lines.push(`  max_body_bytes: ${maxBodyBytes}`);
  if (providers) {
    lines.push('  providers:');
    for (const [name, keys] of Object.entries(providers)) {
      lines.push(`    ${name}:`);
      for (const [k, v] of Object.entries(keys)) lines.push(`      ${k}: ${JSON.stringify(v)}`);
    }
  }
  for (const [section, keys] of Object.entries({ anthropic, openai, auto_fold: autoFold })) {
    if (!keys) continue;
    lines.push(`  ${section}:`);
    for (const [k, v] of Object.entries(keys)) lines.push(`    ${k}: ${JSON.stringify(v)}`);
  }
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, `${lines.join('\n')}\n`);
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  return {
    ...server,
    origin: new URL(server.url).origin,
    async stop() {
      const exited = await server.stop();
      cleanup(dataDir);
      return exited;
    },
  };
}

// Resolves with `promise`, or rejects after `ms` naming `what` (bounds a wait; never a sleep).
export function within(promise, ms, what) {
  let timer;
  const bound = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

// An SSE event as the Messages API writes it.
export function sse(type, data = {}) {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}
