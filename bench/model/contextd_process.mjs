// Starts `contextd serve` over HTTP on a free port with a generated config and a throwaway data
// dir, for the model benchmarks; resolves once it prints its URL.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const sdkRoot = resolve(new URL('.', import.meta.url).pathname, '../../tools/npm/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/');

// An MCP client (the SDK of tools/npm/e2e) connected over Streamable HTTP to `mcpUrl`, sending
// `headers` on every request (the conversation id, as Claude Code does), named as Claude Code.
export async function connectMcp(mcpUrl, headers = {}) {
  const { Client } = await import(join(sdkRoot, 'client/index.js'));
  const { StreamableHTTPClientTransport } = await import(join(sdkRoot, 'client/streamableHttp.js'));
  const client = new Client({ name: 'claude-code', version: '2.1.332' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
  return client;
}

// {binary, yaml, prefix: temp dir prefix, launcher: [cmd, ...args] to run contextd under (e.g.
// valgrind), startSeconds} -> {origin, mcpUrl, pid, stop, stderr}. A contextd that exits before
// listening rejects with an Error carrying `.stderr` and `.exitCode`.
export async function spawnContextd({ binary, yaml, prefix = 'contextd-model-bench-', launcher = null, startSeconds = 20 }) {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, yaml);
  const args = ['serve', '--transport', 'http', '--listen', '127.0.0.1:0', '--data-dir', dataDir,
    '--config', config, '--log-level', 'warn'];
  const proc = launcher
    ? spawn(launcher[0], [...launcher.slice(1), binary, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const gone = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await gone;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const mcpUrl = await new Promise((resolveUrl, reject) => {
      const timer = setTimeout(() => reject(new Error(`contextd did not start in ${startSeconds} s; stderr:\n${stderr}`)),
        startSeconds * 1000);
      proc.stderr.on('data', (chunk) => {
        stderr = (stderr + chunk.toString()).slice(-20000);
        const m = stderr.match(/listening on (http:\/\/\S+\/mcp)/);
        if (m) { clearTimeout(timer); resolveUrl(m[1]); }
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        const e = new Error(`contextd exited ${code} before listening; stderr:\n${stderr}`);
        e.stderr = stderr;
        e.exitCode = code;
        reject(e);
      });
    });
    return { origin: new URL(mcpUrl).origin, mcpUrl, pid: proc.pid, stop, stderr: () => stderr };
  } catch (e) {
    await stop();
    throw e;
  }
}
