// Runs the pinned Claude Code CLI (tools/npm/agents) headless against a model double, with a
// throwaway HOME, no telemetry and no network but 127.0.0.1. Claude Code refuses
// --dangerously-skip-permissions as root (as CI runs), so every tool it may use is listed.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CLAUDE = new URL('../../../tools/npm/agents/node_modules/.bin/claude', import.meta.url).pathname;

export function claudeMissing() {
  return existsSync(CLAUDE) ? null : `Claude Code is not installed at ${CLAUDE} (run scripts/install-deps.sh)`;
}

// An --mcp-config file naming contextd `contextd` (so its tools are mcp__contextd__*): over HTTP
// ({url}) or stdio ({command, args}).
export function writeMcpConfig(dir, server) {
  const entry = server.url ? { type: 'http', url: server.url } : { type: 'stdio', command: server.command, args: server.args ?? [] };
  const path = join(dir, 'mcp.json');
  writeFileSync(path, JSON.stringify({ mcpServers: { contextd: entry } }));
  return path;
}

// The environment Claude Code runs in: the given HOME, no telemetry, no network but 127.0.0.1,
// the double's key, ANTHROPIC_BASE_URL = `modelUrl` (left to the settings files when undefined),
// and `env` on top.
function agentEnv({ home, modelUrl, env }) {
  return {
    PATH: process.env.PATH, HOME: home, TMPDIR: tmpdir(), LANG: 'C.UTF-8',
    ...(modelUrl === undefined ? {} : { ANTHROPIC_BASE_URL: modelUrl }), ANTHROPIC_API_KEY: 'sk-ant-api03-model-double',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1', NO_PROXY: '127.0.0.1',
    MCP_TIMEOUT: '30000', MCP_TOOL_TIMEOUT: '60000',
    ...env,
  };
}

// Runs `claude -p PROMPT` in `cwd` and resolves with {code, signal, stdout, stderr, result}
// (result: the parsed --output-format json object, when there is one). Kills the process group
// after `timeoutMs`.
// `home`: use this HOME (kept) instead of a throwaway one; `modelUrl` undefined leaves
// ANTHROPIC_BASE_URL to Claude Code's settings files.
export async function runClaude({ prompt, modelUrl, mcpConfig, allowedTools, cwd, timeoutMs = 90000, env = {}, home: givenHome }) {
  const home = givenHome ?? mkdtempSync(join(tmpdir(), 'contextd-claude-home-'));
  const args = ['-p', prompt, '--output-format', 'json', '--model', 'claude-sonnet-4-5',
    '--allowedTools', allowedTools.join(','), '--max-turns', '30'];
  if (mcpConfig) args.push('--mcp-config', mcpConfig, '--strict-mcp-config');
  const child = spawn(CLAUDE, args, {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: agentEnv({ home, modelUrl, env }),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => { stdout += c; });
  child.stderr.on('data', (c) => { stderr += c; });
  const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
  const { code, signal } = await new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  clearTimeout(timer);
  if (!givenHome) rmSync(home, { recursive: true, force: true });
  let result = null;
  try { result = JSON.parse(stdout); } catch { /* not JSON: reported by the caller */ }
  return { code, signal, stdout, stderr, result };
}

// Runs a `claude` subcommand (e.g. `mcp get contextd`) in `cwd` with HOME `home`, offline, and
// resolves with {code, stdout, stderr}.
export async function claudeCommand(args, { cwd, home, env = {}, timeoutMs = 60000 }) {
  const child = spawn(CLAUDE, args, {
    cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH, HOME: home, TMPDIR: tmpdir(), LANG: 'C.UTF-8',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1', NO_PROXY: '127.0.0.1', MCP_TIMEOUT: '30000', ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => { stdout += c; });
  child.stderr.on('data', (c) => { stderr += c; });
  const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
  const code = await new Promise((resolve) => child.on('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

// Runs `claude -p --input-format stream-json --output-format stream-json` in `cwd`: `prompt` is
// the first user message; the returned `session.say(text)` writes another user message while
// Claude Code runs (it reaches the model with the next request, as a message typed during a turn
// does: Claude Code 2.1.332 appends it to the next tool results as "The user sent a new message
// while you were working: ..."). `followUps`: user messages (a slash command such as `/compact`
// included) written one at a time, each after the next `result` event; stdin closes at the first
// `result` event after they are all written, so the session ends. Resolves `session.done` with
// {code, signal, stdout, stderr, events} (the parsed stdout lines). Kills the process group after
// `timeoutMs`. Options as runClaude's.
export function startClaudeStream({ prompt, modelUrl, mcpConfig, allowedTools, cwd, timeoutMs = 180000, env = {}, maxTurns = 80, model = 'claude-sonnet-4-5', followUps = [] }) {
  const home = mkdtempSync(join(tmpdir(), 'contextd-claude-home-'));
  const args = ['-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose',
    '--model', model, '--allowedTools', allowedTools.join(','), '--max-turns', String(maxTurns)];
  if (mcpConfig) args.push('--mcp-config', mcpConfig, '--strict-mcp-config');
  const child = spawn(CLAUDE, args, {
    cwd,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: agentEnv({ home, modelUrl, env }),
  });
  let stdout = '';
  let stderr = '';
  const events = [];
  const pending = [...followUps];
  const write = (text) => {
    if (child.stdin.writableEnded) return;
    child.stdin.write(`${JSON.stringify({ type: 'user', message: { role: 'user', content: text } })}\n`);
  };
  child.stdout.on('data', (c) => {
    stdout += c;
    let nl;
    while ((nl = stdout.indexOf('\n', session.parsed)) >= 0) {
      const line = stdout.slice(session.parsed, nl);
      session.parsed = nl + 1;
      let event = null;
      try { event = JSON.parse(line); } catch { continue; }
      events.push(event);
      if (event.type !== 'result') continue;
      if (pending.length) write(pending.shift());
      else child.stdin.end();
    }
  });
  child.stderr.on('data', (c) => { stderr += c; });
  child.stdin.on('error', () => {});
  const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
  const session = {
    parsed: 0,
    events,
    say: (text) => write(text),
    done: new Promise((resolve) => child.on('close', (code, signal) => {
      clearTimeout(timer);
      rmSync(home, { recursive: true, force: true });
      resolve({ code, signal, stdout, stderr, events });
    })),
  };
  write(prompt);
  return session;
}
