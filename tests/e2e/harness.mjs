// Shared helpers for the end-to-end tests: start the built contextd binary (HTTP on 127.0.0.1
// port 0, or stdio) in a fresh data directory, and connect the official MCP TypeScript SDK client.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const sdkRoot = new URL('../../tools/npm/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Client } = await import(new URL('client/index.js', sdkRoot));
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdkRoot));
const { StdioClientTransport } = await import(new URL('client/stdio.js', sdkRoot));
export const sdkTypes = await import(new URL('types.js', sdkRoot));
export { Client };

export const BINARY = process.env.CONTEXTD_BINARY ?? new URL('../../build/debug/src/cli/contextd', import.meta.url).pathname;
// The test binary: contextd plus `serve --conformance-fixtures` (the production binary has no fixtures).
export const CONFORMANCE_BINARY = process.env.CONTEXTD_CONFORMANCE_BINARY ??
  new URL('../../build/debug/src/cli/contextd-conformance', import.meta.url).pathname;

export function tempDataDir() {
  return mkdtempSync(join(tmpdir(), 'contextd-e2e-'));
}

// Starts `contextd serve --transport http` and resolves with {proc, url, dataDir, stop()} once the
// server prints its listening line. `listen`: host:port (port 0 picks a free one; a given port lets
// a restarted server keep its clients' URL).
export async function startHttpServer({ dataDir = tempDataDir(), args = [], env = {}, binary = BINARY,
  listen = '127.0.0.1:0' } = {}) {
  const proc = spawn(binary, ['serve', '--transport', 'http', '--listen', listen,
    '--data-dir', dataDir, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start; stderr:\n${stderr}`)), 20000);
    proc.stderr.on('data', (chunk) => {
      stderr += chunk.toString();
      const m = stderr.match(/listening on (http:\/\/\S+\/mcp)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}; stderr:\n${stderr}`)); });
  });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  let stopping = false;
  return {
    proc, url, dataDir, exited,
    stderr: () => stderr,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill(signal);
      } else if (!stopping) {
        // It ended before anyone stopped it: show why (a failed test often only sees a closed
        // connection).
        process.stderr.write(`contextd exited by itself (code ${proc.exitCode}, signal ` +
          `${proc.signalCode}); its stderr:\n${stderr}\n`);
      }
      stopping = true;
      return exited;
    },
  };
}

// `capabilities` are the client's (e.g. {sampling: {}, elicitation: {}}); set their request
// handlers on the returned client before calling anything that needs them.
export async function connectHttp(url, name = 'e2e', capabilities = {}) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport };
}

export async function connectStdio({ dataDir = tempDataDir(), args = [] } = {}) {
  const client = new Client({ name: 'e2e-stdio', version: '1.0.0' }, { capabilities: {} });
  const transport = new StdioClientTransport({
    command: BINARY, args: ['serve', '--transport', 'stdio', '--data-dir', dataDir, ...args], stderr: 'pipe',
  });
  await client.connect(transport);
  return { client, transport, dataDir };
}

export function cleanup(dir) {
  try { rmSync(dir, { recursive: true, force: true }); } catch { /* best effort */ }
}

// The text of a tool result (all text parts joined).
export function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}
