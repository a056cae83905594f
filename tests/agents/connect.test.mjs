// `contextd connect claude-code` as the pinned Claude Code (tools/npm/agents) reads it: after
// connect, `claude mcp get contextd` shows the server from the files connect wrote, and
// `claude -p` (no ANTHROPIC_BASE_URL in its environment) sends its model requests to the URL in
// the settings file and lists contextd's tools, reached through the same URL. `contextd status`
// then sees the agent's MCP traffic, and --undo takes it all back. At project scope the MCP
// session and the model requests are in one project: the directory's (X-Contextd-Project).
// contextd serves both at one base URL: /mcp, and the model gateway (/v1/*), which forwards to
// the scripted Anthropic double.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { startAnthropicDouble } from './lib/anthropic_double.mjs';
import { runClaude, claudeCommand, claudeMissing } from './lib/claude.mjs';
import { excerpt } from './lib/transcript.mjs';
import { BINARY, startHttpServer, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);

// Asynchronous: the front and the double run in this process and must keep serving.
function contextd(args, env = {}, cwd = undefined) {
  return new Promise((resolve) => {
    execFile(resolvePath(BINARY), args, { cwd, encoding: 'utf8', timeout: 20000, env: { ...process.env, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code ?? error.signal) : 0, stdout, stderr }));
  });
}

async function setup(script = [{ text: 'Connected through contextd.' }]) {
  const dataDir = tempDataDir();
  const double = await startAnthropicDouble({ script });
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['model_gateway:', '  anthropic:', `    base_url: ${double.url}`, ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  const front = { url: server.url.replace(/\/mcp$/, ''), close: async () => {} };
  const home = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-connect-home-')));
  const project = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-connect-project-')));
  return {
    dataDir, server, double, front, home, project,
    async close() {
      await front.close();
      await double.close();
      await server.stop();
      for (const d of [dataDir, home, project]) cleanup(d);
    },
  };
}

test('connect --project: Claude Code reads the MCP server and sends model requests to the configured URL', { skip: missing ?? false, timeout: 180000 }, async () => {
  // One call of a contextd tool: the MCP session's project is fixed (and logged) at its first
  // scoped request.
  const t = await setup([{ tools: [{ name: 'mcp__contextd__memory_search', input: { query: 'port' } }] },
    { text: 'Connected through contextd.' }]);
  try {
    const before = JSON.stringify({ permissions: { allow: ['Read'] }, env: { KEEP: 'me' } }, null, 2) + '\n';
    writeFileSync(join(t.project, 'placeholder.txt'), 'x\n');
    mkdirSync(join(t.project, '.claude'));
    writeFileSync(join(t.project, '.claude', 'settings.json'), before);

    const connect = await contextd(['connect', 'claude-code', '--project', t.project, '--url', t.front.url, '--data-dir', t.dataDir], { HOME: t.home });
    console.log(connect.stdout);
    assert.equal(connect.code, 0, connect.stderr);
    const settings = JSON.parse(readFileSync(join(t.project, '.claude', 'settings.json'), 'utf8'));
    assert.deepEqual(Object.keys(settings), ['permissions', 'env']);
    // The model requests name the project, as the MCP session's root does (issue 35).
    assert.deepEqual(settings.env, { KEEP: 'me', ANTHROPIC_BASE_URL: t.front.url,
      ANTHROPIC_CUSTOM_HEADERS: `X-Contextd-Project: ${t.project}` });

    // Claude Code's own view of the project's MCP servers.
    const get = await claudeCommand(['mcp', 'get', 'contextd'], { cwd: t.project, home: t.home });
    console.log(get.stdout);
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, /Scope: Project config \(shared via \.mcp\.json\)/);
    assert.match(get.stdout, /Type: http/);
    assert.ok(get.stdout.includes(`URL: ${t.front.url}/mcp`), get.stdout);
    const list = await claudeCommand(['mcp', 'list'], { cwd: t.project, home: t.home });
    assert.ok(list.stdout.includes(`contextd: ${t.front.url}/mcp (HTTP)`), list.stdout);

    // A headless run: no ANTHROPIC_BASE_URL in the environment, only the settings file.
    const run = await runClaude({ prompt: 'Say hello.', allowedTools: ['Read', 'mcp__contextd'], cwd: t.project, home: t.home, timeoutMs: 90000 });
    assert.equal(run.code, 0, `claude: ${excerpt(run.stderr, 2000)} ${excerpt(run.stdout, 1000)}`);
    const main = t.double.requests.filter((r) => r.method === 'POST' && r.url.startsWith('/v1/messages'));
    assert.ok(main.length > 0, `the double saw: ${t.double.requests.map((r) => `${r.method} ${r.url}`).join(', ')}`);
    // .mcp.json servers need a one-time approval in interactive sessions; `claude -p` uses them.
    const tools = main.flatMap((r) => (r.json?.tools ?? []).map((tool) => tool.name));
    assert.ok(tools.includes('mcp__contextd__branch_create'), `tools: ${tools.join(', ')}`);
    // One project for both: the MCP session's (its root, the working directory) and the model
    // requests' (the header from the settings file), p_ + 16 hex of the directory's SHA-256.
    const project = `p_${createHash('sha256').update(t.project).digest('hex').slice(0, 16)}`;
    assert.ok(t.server.stderr().includes(`: project ${project} ${t.project}`), excerpt(t.server.stderr(), 3000));
    const metrics = await (await fetch(`${t.front.url}/metrics`)).text();
    assert.match(metrics, new RegExp(`contextd_model_requests_total\\{api="anthropic",project="${project}",status="200",tenant="local"\\} [1-9]`));

    const status = await contextd(['status', '--url', t.front.url], { HOME: t.home }, t.project);
    console.log(status.stdout);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /server: up/);
    assert.match(status.stdout, /mcp: \d+ open session\(s\), [1-9]\d* request\(s\) answered/);
    // The model requests went through contextd's gateway, and status sees them.
    assert.match(status.stdout, /model: [1-9]\d* request\(s\) to the Anthropic API/);
    assert.ok(status.stdout.includes(`.mcp.json mcpServers.contextd: ${t.front.url}/mcp (this server)`), status.stdout);
    assert.ok(status.stdout.includes(`env.ANTHROPIC_CUSTOM_HEADERS X-Contextd-Project: ${t.project} (this directory)`), status.stdout);

    const undo = await contextd(['connect', 'claude-code', '--project', t.project, '--undo', '--data-dir', t.dataDir], { HOME: t.home });
    assert.equal(undo.code, 0, undo.stderr);
    assert.equal(readFileSync(join(t.project, '.claude', 'settings.json'), 'utf8'), before);
    assert.equal(existsSync(join(t.project, '.mcp.json')), false);
    const gone = await claudeCommand(['mcp', 'get', 'contextd'], { cwd: t.project, home: t.home });
    assert.notEqual(gone.code, 0, gone.stdout);
  } finally {
    await t.close();
  }
});

test('connect --user: ~/.claude.json and ~/.claude/settings.json, and $CLAUDE_CONFIG_DIR', { skip: missing ?? false, timeout: 180000 }, async () => {
  const t = await setup();
  try {
    const connect = await contextd(['connect', 'claude-code', '--user', '--url', t.front.url, '--data-dir', t.dataDir], { HOME: t.home, CLAUDE_CONFIG_DIR: '' });
    assert.equal(connect.code, 0, connect.stderr);
    assert.ok(existsSync(join(t.home, '.claude.json')));
    // No single project at user scope: no project header, and the output says why.
    assert.match(connect.stdout, /note: no X-Contextd-Project at user scope/);
    const userEnv = JSON.parse(readFileSync(join(t.home, '.claude', 'settings.json'), 'utf8')).env;
    assert.deepEqual(userEnv, { ANTHROPIC_BASE_URL: t.front.url });
    const get = await claudeCommand(['mcp', 'get', 'contextd'], { cwd: t.project, home: t.home });
    console.log(get.stdout);
    assert.match(get.stdout, /Scope: User config/);
    assert.ok(get.stdout.includes(`URL: ${t.front.url}/mcp`), get.stdout);
    // A user-scope server needs no approval: Claude Code connects to it.
    assert.match(get.stdout, /Status: ✔ Connected|Status: ✓ Connected/);

    const run = await runClaude({ prompt: 'Say hello.', allowedTools: ['Read'], cwd: t.project, home: t.home, timeoutMs: 90000 });
    assert.equal(run.code, 0, `claude: ${excerpt(run.stderr, 2000)}`);
    assert.ok(t.double.requests.some((r) => r.method === 'POST' && r.url.startsWith('/v1/messages')));

    // With CLAUDE_CONFIG_DIR both files move there.
    const configDir = join(t.home, 'elsewhere');
    const ccd = await contextd(['connect', 'claude-code', '--user', '--url', t.front.url, '--data-dir', t.dataDir], { HOME: t.home, CLAUDE_CONFIG_DIR: configDir });
    assert.equal(ccd.code, 0, ccd.stderr);
    assert.ok(existsSync(join(configDir, '.claude.json')));
    assert.ok(existsSync(join(configDir, 'settings.json')));
    const getCcd = await claudeCommand(['mcp', 'get', 'contextd'], { cwd: t.project, home: t.home, env: { CLAUDE_CONFIG_DIR: configDir } });
    assert.match(getCcd.stdout, /Scope: User config/);
    assert.ok(getCcd.stdout.includes(`URL: ${t.front.url}/mcp`), getCcd.stdout);
  } finally {
    await t.close();
  }
});
