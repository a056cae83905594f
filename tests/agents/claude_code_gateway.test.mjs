// What the model receives when contextd is Claude Code's model endpoint too
// (ANTHROPIC_BASE_URL -> contextd -> the scripted double): the pinned Claude Code opens a branch in
// the same turn as a built-in Read, runs Bash inside it and returns; the double must receive the
// Read result with its secret redacted, and from the request that carries branch_return's result
// on, the folded transcript: the branch's work gone, its summary in the one result that stands
// for it, and every message before the fold byte-identical (the double refuses a thinking block
// replayed after a changed prefix, as the provider does).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { runClaude, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { lastResult, branchIdIn, excerpt, toolExchanges } from './lib/transcript.mjs';
import { BINARY, startHttpServer, cleanup, tempDataDir } from '../e2e/harness.mjs';

// A GitHub token shape (ghp_ + 36 characters).
const SECRET = 'ghp_' + 'Zx9Cv8Bn7Mq6Wf5Ek4Rt3Yh2Uj1Ik0OlPa34'.slice(0, 36);
const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);

function workspace() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-gw-ws-')));
  writeFileSync(join(ws, 'config.txt'), `port = 8080\ngithub_token = ${SECRET}\n`);
  writeFileSync(join(ws, 'big.txt'), Array.from({ length: 400 }, (_, i) => `line ${i} of a large file with words`).join('\n'));
  return ws;
}

// Messages without cache_control markers (clients move the breakpoint to the newest block).
function withoutMarkers(messages) {
  return messages.map((m) => {
    const copy = structuredClone(m);
    for (const b of Array.isArray(copy.content) ? copy.content : []) delete b.cache_control;
    return copy;
  });
}

// contextd with its model gateway in front of `double`, and Claude Code run in `ws` against it
// (ANTHROPIC_BASE_URL = contextd, contextd as its MCP server); the double's requests are dumped
// to $CONTEXTD_AGENT_DUMP_DIR/claude-<label>.json when set.
async function runThroughGateway({ double, dataDir, ws, prompt, allowedTools, label }) {
  const config = join(dataDir, 'contextd.yaml');
  // What these tests check inside the branch is the parent's history as sent (`branch_view:
  // inherited`, contextd before issue 33); the isolated view, the default, is branch_view.test.mjs's.
  writeFileSync(config, ['context_folding:', '  branch_view: inherited',
    'model_gateway:', '  anthropic:', `    base_url: ${double.url}`, ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  const origin = new URL(server.url).origin;
  const run = await runClaude({
    prompt, modelUrl: origin, cwd: ws, mcpConfig: writeMcpConfig(ws, { url: server.url }), allowedTools,
  });
  const dir = process.env.CONTEXTD_AGENT_DUMP_DIR;
  if (dir) writeFileSync(join(dir, `claude-${label}.json`), JSON.stringify(double.requests, null, 1));
  return { server, origin, run };
}

function failWith(run, double) {
  return `claude exited ${run.code} (${run.signal ?? 'no signal'})\nstdout: ${excerpt(run.stdout, 2000)}\n` +
    `stderr: ${excerpt(run.stderr, 2000)}\ndouble errors: ${double.errors.join('\n')}\n` +
    `requests: ${double.requests.map((r) => `${r.method} ${r.url}`).join(', ')}`;
}

test('Claude Code through the model gateway: built-in work folds away, the secret is redacted, the prefix stays', { skip: missing ?? false, timeout: 180000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  let branch = null;
  const double = await startAnthropicDouble({
    script: [
      // branch_create in the same turn as the branch's first command.
      { tools: [
        { name: 'mcp__contextd__branch_create', input: { description: 'find the port', prompt: 'Read config.txt and big.txt; report the port', budget: 20000 } },
        { name: 'Read', input: { file_path: join(ws, 'config.txt') } }] },
      (body) => {
        branch = branchIdIn(lastResult([body], 'branch_create').result);
        return { tools: [{ name: 'Bash', input: { command: 'head -200 big.txt', description: 'skim the big file' } }] };
      },
      () => ({ tools: [{ name: 'mcp__contextd__branch_return', input: { message: 'port is 8080 (config.txt line 1)' } }] }),
      { tools: [{ name: 'Bash', input: { command: 'echo done', description: 'after the branch' } }] },
      { text: 'The port is 8080.' },
    ],
  });
  let server = null;
  try {
    const started = await runThroughGateway({ double, dataDir, ws, prompt: 'Find the port in config.txt.',
      allowedTools: ['Read', 'Bash', 'mcp__contextd'], label: 'gateway' });
    server = started.server;
    const { origin, run } = started;
    assert.equal(run.code, 0, failWith(run, double));
    assert.deepEqual(double.errors, [], 'no thinking block arrived after a changed prefix');
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    const bodies = double.mainRequests();
    assert.equal(bodies.length, 5, failWith(run, double));
    assert.equal(JSON.parse(run.stdout).result, 'The port is 8080.');

    // The secret never reached the provider; the model read the redacted Read result.
    for (const r of double.requests) assert.ok(!r.raw.includes(SECRET), `request ${r.url} carries the secret`);
    const read = lastResult(bodies.slice(0, 2), 'Read');
    console.log(`--- Read (built-in) as the model read it\n${excerpt(read.result, 600)}`);
    assert.match(read.result, /port = 8080/);
    assert.match(read.result, /REDACTED/);

    // Before the return, the branch's work is in the transcript.
    assert.ok(bodies[2].messages.some((m) => JSON.stringify(m).includes('line 150 of a large file')));
    // The request carrying branch_return's result is folded: task, the create turn, one result.
    const folded = bodies[3];
    console.log(`--- folded request messages\n${excerpt(JSON.stringify(folded.messages, null, 1), 2500)}`);
    assert.equal(folded.messages.length, 3);
    const text = JSON.stringify(folded.messages);
    assert.ok(!text.includes('line 150 of a large file'), 'the Bash result is folded away');
    assert.ok(!text.includes('github_token'), 'the Read result is folded away');
    const stands = toolExchanges(folded).find((e) => e.name.endsWith('branch_create'));
    assert.match(stands.result, new RegExp(`\\[branch ${branch} returned; \\d+ tokens folded away\\]`));
    assert.match(stands.result, /port is 8080 \(config.txt line 1\)/);
    assert.match(toolExchanges(folded).find((e) => e.name === 'Read').result, /folded with the branch/);
    // Everything before the fold point is what the previous request carried.
    assert.deepEqual(folded.messages.slice(0, 2), bodies[2].messages.slice(0, 2));
    // Later requests repeat the fold byte for byte, and grow from it.
    const after = bodies[4];
    assert.deepEqual(withoutMarkers(after.messages.slice(0, 3)), withoutMarkers(folded.messages));
    assert.ok(JSON.stringify(after.messages[2]).includes('port is 8080 (config.txt line 1)'));

    // The gateway's counters.
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    // (tenant and project labels too since decision 0022)
    assert.match(metrics, /contextd_model_requests_total\{api="anthropic",project="default",status="200",tenant="local"\} [1-9]/);
    assert.match(metrics, /contextd_model_folds_total\{api="anthropic"\} 1/);
    const list = execFileSync(BINARY, ['trail', 'list', '--data-dir', dataDir], { encoding: 'utf8', timeout: 20000 });
    assert.match(list, new RegExp(`${branch}\\s+depth 0\\s+completed`));
    // The built-in work is in the branch's trail, scrubbed, and unfoldable.
    const unfolded = execFileSync(BINARY, ['trail', 'unfold', branch, '--data-dir', dataDir], { encoding: 'utf8', timeout: 20000 });
    console.log(`--- contextd trail unfold ${branch}\n${excerpt(unfolded, 1200)}`);
    assert.match(unfolded, /tool_call.*Read/);
    assert.match(unfolded, /tool_call.*Bash/);
    assert.match(unfolded, /line 150 of a large file/);
    assert.ok(!unfolded.includes(SECRET));
  } finally {
    await double.close();
    await server?.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});

test('Claude Code through the model gateway: built-in results count against the branch budget (warning at 80%, fold at 100%)', { skip: missing ?? false, timeout: 180000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  let branch = null;
  const double = await startAnthropicDouble({
    script: [
      { tools: [
        { name: 'mcp__contextd__branch_create', input: { description: 'skim', prompt: 'skim big.txt', budget: 2000 } },
        { name: 'Bash', input: { command: 'head -175 big.txt', description: 'first part' } }] },
      (body) => {
        branch = branchIdIn(lastResult([body], 'branch_create').result);
        return { tools: [{ name: 'Bash', input: { command: 'head -400 big.txt', description: 'all of it' } }] };
      },
      { text: 'The branch ran out of budget.' },
    ],
  });
  let server = null;
  try {
    const started = await runThroughGateway({ double, dataDir, ws, prompt: 'Skim big.txt.',
      allowedTools: ['Bash', 'mcp__contextd'], label: 'gateway-budget' });
    server = started.server;
    const { run } = started;
    assert.equal(run.code, 0, failWith(run, double));
    assert.deepEqual(double.errors, []);
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    const bodies = double.mainRequests();
    assert.equal(bodies.length, 3, failWith(run, double));

    // 80%: a text block after the tool results of the user message that crossed it.
    const crossed = bodies[1].messages.at(-1);
    const blocks = crossed.content;
    const warning = blocks.findIndex((b) => b.type === 'text' && b.text.startsWith('[contextd] budget'));
    console.log(`--- the warning as the model read it\n${JSON.stringify(blocks[warning])}`);
    assert.ok(warning > 0, JSON.stringify(blocks.map((b) => b.type)));
    assert.ok(blocks.slice(0, warning).every((b) => b.type === 'tool_result'));
    assert.match(blocks[warning].text, new RegExp(`budget \\d+% used: \\d+/2000 tokens in ${branch}`));

    // 100%: folded at the tail where contextd decided it, with the notice.
    const folded = bodies[2];
    console.log(`--- after the force-return\n${excerpt(JSON.stringify(folded.messages.slice(1)), 1500)}`);
    assert.equal(folded.messages.length, 3);
    assert.ok(!JSON.stringify(folded.messages).includes('line 150 of a large file'));
    const stands = toolExchanges(folded).find((e) => e.name.endsWith('branch_create'));
    assert.match(stands.result, new RegExp(`\\[branch ${branch} force-returned \\(budget_exhausted\\)`));
    assert.deepEqual(withoutMarkers(folded.messages.slice(0, 2)), withoutMarkers(bodies[1].messages.slice(0, 2)));
    const list = execFileSync(BINARY, ['trail', 'list', '--data-dir', dataDir], { encoding: 'utf8', timeout: 20000 });
    assert.match(list, new RegExp(`${branch}\\s+depth 0\\s+budget_exhausted`));
  } finally {
    await double.close();
    await server?.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});

test('Claude Code through the model gateway: a memory reaches the model in branch_create\'s result and folds away with the branch', { skip: missing ?? false, timeout: 180000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  // A bank seeded through the CLI, as a team sharing one would, in the workspace's project:
  // Claude Code sends its working directory as its root (decision 0022).
  const bank = join(dataDir, 'bank.jsonl');
  const project = `p_${createHash('sha256').update(realpathSync(ws)).digest('hex').slice(0, 16)}`;
  const memory = { id: 'mem_0000000000000000000000000000seed', tenant: 'local', project,
    title: 'Ports live in config.txt', description: 'When looking for the service port.',
    content: 'Read config.txt first; the port line is its first line.' };
  writeFileSync(bank, JSON.stringify(memory) + '\n');
  execFileSync(BINARY, ['memory', 'import', bank, '--data-dir', dataDir], { encoding: 'utf8', timeout: 20000 });
  const double = await startAnthropicDouble({
    script: [
      { tools: [{ name: 'mcp__contextd__branch_create', input: { description: 'find the service port', prompt: 'Look for the port in the config', budget: 8000 } }] },
      () => ({ tools: [{ name: 'mcp__contextd__branch_return', input: { message: 'port is 8080' } }] }),
      { text: 'The port is 8080.' },
    ],
  });
  let server = null;
  try {
    const started = await runThroughGateway({ double, dataDir, ws, prompt: 'Find the port.',
      allowedTools: ['mcp__contextd'], label: 'memory' });
    server = started.server;
    const { run } = started;
    assert.equal(run.code, 0, failWith(run, double));
    assert.deepEqual(double.errors, []);
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    const bodies = double.mainRequests();
    assert.equal(bodies.length, 3, failWith(run, double));
    // What the model read of branch_create (Claude Code shows the structured result): the memory
    // with its id, outcome, title, content and tokens, its content once.
    const created = lastResult(bodies.slice(0, 2), 'branch_create');
    console.log(`--- branch_create as the model read it\n${excerpt(created.result, 1200)}`);
    // The structured result is the first line (Claude Code may append its own reminder blocks).
    const shown = JSON.parse(created.result.split('\n')[0]).injected_context;
    assert.deepEqual(shown.map((m) => [m.id, m.outcome, m.title, m.content]),
      [[memory.id, 'success', memory.title, memory.content]]);
    assert.ok(shown[0].tokens > 0);
    assert.equal(created.result.split(memory.content).length, 2, 'the content is shown once');
    // Once returned, the branch folds, the injected memory with it: only the summary stays.
    const folded = JSON.stringify(bodies[2].messages);
    assert.ok(!folded.includes('Read config.txt first'), 'the memory folded away with the branch');
    assert.ok(folded.includes('port is 8080'), folded);
  } finally {
    await double.close();
    await server?.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});
