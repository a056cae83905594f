// The e2e tests' NATS side: Debian's nats-server started on a free loopback port with its store in
// a temporary directory (stopped and removed by close()), and the NATS JavaScript client from
// tools/npm/events. `natsMissing` says why either is unavailable ('' when both are there).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanup } from './harness.mjs';

export const NATS_SERVER = process.env.CONTEXTD_NATS_SERVER ??
  ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((p) => existsSync(p));

export let nats = null;
try {
  // CommonJS: imported through its file.
  const mod = await import(new URL('../../tools/npm/events/node_modules/nats/index.js', import.meta.url));
  nats = mod.default ?? mod;
} catch { /* natsMissing says so */ }

export const natsMissing = !NATS_SERVER ? 'nats-server not installed (scripts/install-deps.sh installs it)'
  : !nats ? 'the nats npm client is not installed (tools/npm/events; scripts/install-deps.sh)' : '';

export async function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// Polls `fn` every 25 ms until it returns a truthy value (returned), or throws after `ms`.
export async function until(what, fn, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// A nats-server owned by the test (with JetStream and its store when `jetstream`): start(),
// stop() (an outage; the store stays), close(). Not started yet.
export async function natsServer({ jetstream = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-nats-'));
  const port = await freePort();
  let proc = null;
  const accepting = () => new Promise((resolve) => {
    const c = tcpConnect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
    c.on('error', () => resolve(false));
  });
  const server = {
    url: `nats://127.0.0.1:${port}`,
    async start() {
      const args = ['-a', '127.0.0.1', '-p', String(port), '-l', join(dir, 'nats.log')];
      if (jetstream) args.push('-js', '-sd', join(dir, 'js'));
      proc = spawn(NATS_SERVER, args, { stdio: 'ignore' });
      await until('nats-server to accept connections', accepting);
    },
    async stop() {
      if (!proc) return;
      const exited = new Promise((r) => proc.on('exit', r));
      proc.kill('SIGTERM');
      await exited;
      proc = null;
    },
    async close() { await server.stop(); cleanup(dir); },
  };
  return server;
}
