// Runs the real Codex CLI (`codex exec`, pinned in tools/npm/agents) offline: a throwaway HOME and
// CODEX_HOME, a config.toml whose only model provider is a local Responses API double, contextd as
// its MCP server (Streamable HTTP or stdio), telemetry and update checks off, and every outbound
// proxy-able connection sent to a trap that refuses it. Each run is bounded by a timeout that kills
// the whole process group. Not thread-safe: one run per call, awaited.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CODEX_BINARY = process.env.CODEX_BINARY ??
  new URL('../../../tools/npm/agents/node_modules/.bin/codex', import.meta.url).pathname;

export function codexAvailable() {
  return existsSync(CODEX_BINARY);
}

// A model Codex 0.171 has metadata for (`codex debug models`), so that it builds the request it
// would build for a real model; the double answers to any name.
export const kDefaultModel = 'gpt-5.5';
const kApiKeyEnv = 'CONTEXTD_DOUBLE_API_KEY';
export const kApiKey = 'sk-contextd-double';

const tomlString = (s) => JSON.stringify(String(s));   // a TOML basic string is a JSON string
const tomlArray = (a) => `[${a.map(tomlString).join(', ')}]`;

// The config.toml text. `mcp` is {url} for Streamable HTTP or {command, args} for stdio, or null.
export function codexConfig({ modelUrl, mcp, workspace, model = kDefaultModel }) {
  const lines = [
    `model = ${tomlString(model)}`,
    'model_provider = "contextd_double"',
    // Runs the model's shell commands without asking and without a sandbox: the test is the
    // sandbox (a temp workspace), and bubblewrap is not usable as root in a container anyway.
    'approval_policy = "never"',
    'sandbox_mode = "danger-full-access"',
    'check_for_update_on_startup = false',
    '',
    // Plugins sync from GitHub at startup; offline that is only a failed connection and a warning.
    '[features]',
    'plugins = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    '[otel]',
    'exporter = "none"',
    'trace_exporter = "none"',
    'metrics_exporter = "none"',
    'log_user_prompt = false',
    '',
    '[model_providers.contextd_double]',
    'name = "contextd responses double"',
    `base_url = ${tomlString(modelUrl)}`,
    'wire_api = "responses"',
    `env_key = ${tomlString(kApiKeyEnv)}`,
    // A failure should fail the test, not be retried into a timeout.
    'request_max_retries = 0',
    'stream_max_retries = 0',
    'stream_idle_timeout_ms = 20000',
    '',
  ];
  if (workspace) {
    lines.push(`[projects.${tomlString(workspace)}]`, 'trust_level = "trusted"', '');
  }
  if (mcp) {
    lines.push('[mcp_servers.contextd]');
    if (mcp.url) {
      lines.push(`url = ${tomlString(mcp.url)}`);
    } else {
      lines.push(`command = ${tomlString(mcp.command)}`, `args = ${tomlArray(mcp.args ?? [])}`);
    }
    lines.push('startup_timeout_sec = 20', 'tool_timeout_sec = 30', '');
  }
  return lines.join('\n');
}

// Listens on 127.0.0.1 port 0 as the HTTP(S) proxy Codex is told to use for everything but
// 127.0.0.1: it records the first line of each attempt (e.g. "CONNECT chatgpt.com:443") and closes
// the connection, so an attempt to reach the internet fails at once and shows up in the report.
async function startProxyTrap() {
  const attempts = [];
  const sockets = new Set();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.once('data', (chunk) => {
      attempts.push(chunk.toString('latin1').split('\r\n')[0]);
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    });
    socket.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    attempts,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// Where a tool named `name` is offered to the model: directly in the request's `tools`, inside a
// namespace there, or (Codex defers MCP tools) in a tool_search_output item of the input.
// Returns {name, namespace, tool} or null.
export function findTool(body, name) {
  const search = (tools, namespace) => {
    for (const t of tools ?? []) {
      if (t.type === 'namespace') {
        const hit = search(t.tools, t.name);
        if (hit) return hit;
      } else if (t.name === name || t.name?.endsWith(`__${name}`)) {
        return { name: t.name, namespace, tool: t };
      }
    }
    return null;
  };
  const direct = search(body.tools, undefined);
  if (direct) return direct;
  for (const item of body.input ?? []) {
    if (item.type === 'tool_search_output') {
      const hit = search(item.tools, undefined);
      if (hit) return hit;
    }
  }
  return null;
}

// Runs `codex exec <prompt>` in `workspace` (a fresh temp dir if not given) and resolves with
// {code, signal, timedOut, stdout, stderr, root, home, workspace, config, proxyAttempts, ms}; the
// temp root (HOME, CODEX_HOME) is removed afterwards unless `keep`. `prepare({home, codexHome,
// configFile, workspace})`, when given, runs after config.toml is written and before Codex starts
// (to edit the config, e.g. with `contextd connect codex`); `config` is the file Codex then read.
// It never rejects for a failed or timed-out run: the caller asserts and shows stdout/stderr.
export async function runCodexExec({ prompt, modelUrl, model, mcp = null, workspace, timeoutMs = 45000,
  extraArgs = [], env = {}, keep = false, prepare = null } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'contextd-codex-'));
  const home = join(root, 'home');
  const codexHome = join(home, '.codex');
  mkdirSync(codexHome, { recursive: true });
  const ws = workspace ?? join(root, 'workspace');
  mkdirSync(ws, { recursive: true });
  const configFile = join(codexHome, 'config.toml');
  writeFileSync(configFile, codexConfig({ modelUrl, mcp, workspace: ws, model }));
  if (prepare) await prepare({ home, codexHome, configFile, workspace: ws });
  const config = readFileSync(configFile, 'utf8');

  const trap = await startProxyTrap();
  const args = ['exec', '--strict-config', '--skip-git-repo-check', '--ephemeral', '--color', 'never',
    '-C', ws, ...extraArgs, prompt];
  const started = process.hrtime.bigint();
  const child = spawn(CODEX_BINARY, args, {
    cwd: ws,
    detached: true,   // its own process group, so a timeout kills everything it started
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: home, CODEX_HOME: codexHome, TMPDIR: root, LANG: 'C.UTF-8', TERM: 'dumb',
      [kApiKeyEnv]: kApiKey,
      HTTP_PROXY: trap.url, HTTPS_PROXY: trap.url, ALL_PROXY: trap.url,
      http_proxy: trap.url, https_proxy: trap.url, all_proxy: trap.url,
      NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
      RUST_LOG: process.env.CODEX_RUST_LOG ?? 'error',
      ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => { stdout += c; });
  child.stderr.on('data', (c) => { stderr += c; });
  let timedOut = false;
  const killGroup = (signal) => {
    try { process.kill(-child.pid, signal); } catch { /* already gone */ }
  };
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup('SIGTERM');
    setTimeout(() => killGroup('SIGKILL'), 2000).unref();
  }, timeoutMs);
  const { code, signal } = await new Promise((resolve) => {
    child.on('close', (c, s) => resolve({ code: c, signal: s }));
  });
  clearTimeout(timer);
  // Whatever it left behind in its group (an MCP server it spawned over stdio, a shell) goes too.
  killGroup('SIGKILL');
  await trap.close();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  // The root holds HOME, CODEX_HOME, TMPDIR and the default workspace; a caller's workspace is
  // the caller's to remove.
  if (!keep) rmSync(root, { recursive: true, force: true });
  return { code, signal, timedOut, stdout, stderr, root, home, workspace: ws, config,
    proxyAttempts: trap.attempts, ms };
}

// A one-line description of a run for assertion messages, with the ends of its output.
export function describeRun(run) {
  const tail = (s, n = 3000) => (s.length > n ? `…${s.slice(-n)}` : s);
  return `codex exec exited code=${run.code} signal=${run.signal} timedOut=${run.timedOut} ` +
    `after ${Math.round(run.ms)} ms\n--- stdout ---\n${tail(run.stdout)}\n--- stderr ---\n${tail(run.stderr)}`;
}
