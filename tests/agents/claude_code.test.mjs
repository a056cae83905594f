// What a real agent shows the model: Claude Code (pinned in tools/npm/agents) runs headless
// against a scripted model double (lib/anthropic_double.mjs) with contextd as its MCP server,
// over Streamable HTTP and over stdio. The assertions read the requests the double received,
// i.e. exactly what a model would have read: contextd's tool results as Claude Code renders
// them, budget warnings, force-return notices, nested depths, and the trail afterwards.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { runClaude, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { lastResult, branchIdIn, excerpt, exchangesOf } from './lib/transcript.mjs';
import { BINARY, startHttpServer, cleanup, tempDataDir } from '../e2e/harness.mjs';

const FS_SERVER = new URL('../../tools/npm/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
  import.meta.url).pathname;
// A GitHub token shape (ghp_ + 36 characters).
const SECRET = 'ghp_' + 'Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm12'.slice(0, 36);
const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);

// Prints what the model read for one tool result, so that the CI log shows it.
function show(label, exchange) {
  console.log(`--- ${label}: ${exchange.name}${exchange.isError ? ' (is_error)' : ''}\n${excerpt(exchange.result, 1200)}`);
}

function contextdCli(...args) {
  return execFileSync(BINARY, args, { encoding: 'utf8', timeout: 20000 });
}

function workspace() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-agent-ws-')));
  writeFileSync(join(ws, 'config.txt'), `port = 8080\ngithub_token = ${SECRET}\n`);
  // About 390 tokens as server-filesystem returns it (text and structured result, 13 tokens a
  // line each): reading it in a 500-token branch crosses 80% of the budget but not 100%.
  writeFileSync(join(ws, 'notes.txt'), Array.from({ length: 15 }, (_, i) => `note ${i}: the parser lives in src/parse.c`).join('\n'));
  writeFileSync(join(ws, 'big.txt'), Array.from({ length: 3000 }, (_, i) => `line ${i} of a large file with words`).join('\n'));
  return ws;
}

// CONTEXTD_AGENT_DUMP_DIR=dir keeps every request the double received, as dir/<label>.json.
function dump(label, double) {
  const dir = process.env.CONTEXTD_AGENT_DUMP_DIR;
  if (dir) writeFileSync(join(dir, `claude-${label}.json`), JSON.stringify(double.requests, null, 1));
}

function failWith(run, double) {
  return `claude exited ${run.code} (${run.signal ?? 'no signal'})\nstdout: ${excerpt(run.stdout, 2000)}\n` +
    `stderr: ${excerpt(run.stderr, 2000)}\ndouble errors: ${double.errors.join('\n')}\n` +
    `requests: ${double.requests.map((r) => `${r.method} ${r.url}`).join(', ')}`;
}

test('Claude Code over HTTP: branch, built-in Read/Bash, upstream reads, warning, nested force-return, return', { skip: missing ?? false, timeout: 180000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['upstreams:', '  - name: fs', '    stdio:', '      command: node',
    `      args: [${JSON.stringify(FS_SERVER)}, ${JSON.stringify(ws)}]`, '    timeout_seconds: 20', ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  let parent = null;
  const double = await startAnthropicDouble({
    script: [
      { text: 'I will open a branch for this.', tools: [{ name: 'mcp__contextd__branch_create', input: { description: 'find the port', prompt: 'Read config.txt and notes.txt and report the port and where the parser is', budget: 500 } }] },
      // Built-in tools in parallel: contextd never sees these (the model gateway will).
      { tools: [{ name: 'Read', input: { file_path: join(ws, 'config.txt') } }, { name: 'Bash', input: { command: 'wc -l notes.txt', description: 'count lines' } }] },
      // Claude Code defers upstream tools behind its tool search. Loading one with ToolSearch
      // changes the request's `tools`, so Claude Code's own next request replays thinking blocks
      // after a changed prefix (a 400 it recovers from by dropping them, and a prompt-cache
      // rewrite); a deferred tool called by name works without that, so the script does so.
      { tools: [{ name: 'mcp__contextd__fs__read_text_file', input: { path: join(ws, 'notes.txt') } }] },
      (body) => {
        parent = branchIdIn(lastResult([body], 'branch_create').result);
        return { tools: [{ name: 'mcp__contextd__branch_create', input: { description: 'read the big file', prompt: 'skim big.txt', budget: 60, parent_branch_id: parent } }] };
      },
      { tools: [{ name: 'mcp__contextd__fs__read_text_file', input: { path: join(ws, 'big.txt') } }] },
      { tools: [{ name: 'mcp__contextd__branch_status', input: {} }] },
      () => ({ tools: [{ name: 'mcp__contextd__branch_return', input: { branch_id: parent, message: 'port is 8080; the parser is in src/parse.c' } }] }),
      { tools: [{ name: 'mcp__contextd__context_view', input: {} }] },
      { text: 'The port is 8080 and the parser is in src/parse.c.' },
    ],
  });
  try {
    const run = await runClaude({
      prompt: 'Find the port in config.txt and where the parser is.', modelUrl: double.url, cwd: ws,
      mcpConfig: writeMcpConfig(ws, { url: server.url }),
      allowedTools: ['Read', 'Bash', 'mcp__contextd'],
    });
    dump('http', double);
    assert.equal(run.code, 0, failWith(run, double));
    assert.deepEqual(double.errors, [], 'no thinking block was replayed after a changed prefix');
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    const bodies = double.mainRequests();
    assert.equal(bodies.length, 9, failWith(run, double));
    // The folding tools are in the first request's tool list (contextd marks them
    // anthropic/alwaysLoad), so the model needs no tool-search turn before its first branch.
    const tools = bodies[0].tools.map((t) => t.name);
    for (const name of ['mcp__contextd__branch_create', 'mcp__contextd__branch_return', 'mcp__contextd__branch_status']) {
      assert.ok(tools.includes(name), `${name} is offered to the model from the start: ${tools.join(', ')}`);
    }

    // branch_create as the model reads it: the id, depth 0, the budget and what to do next.
    const created = lastResult(bodies.slice(0, 2), 'branch_create');
    show('branch_create', created);
    assert.equal(branchIdIn(created.result), parent);
    assert.match(created.result, /"depth":\s*0|depth 0/);
    assert.match(created.result, /500/);
    assert.match(created.result, /call branch_return/);
    assert.ok(!/later issue/.test(created.result), created.result);

    // The built-in tools' results reach the model without passing through contextd, secrets
    // included: only a model gateway can scrub them. Shown in the log, not asserted either way.
    const read = lastResult(bodies.slice(0, 3), 'Read');
    show('Read (built-in)', read);
    assert.match(read.result, /port = 8080/);

    // An upstream read through contextd crosses 80% of the branch budget: the warning reaches the
    // model along with the file.
    const notes = lastResult(bodies.slice(0, 4), 'fs__read_text_file');
    show('fs__read_text_file (80% warning)', notes);
    assert.match(notes.result, /src\/parse\.c/);
    assert.match(notes.result, /budget \d+% used: \d+\/500 tokens in br_[0-9a-f]{32}.*call branch_return/s);

    // The nested branch is at depth 1.
    const nested = lastResult(bodies.slice(0, 5), 'branch_create');
    show('branch_create (nested)', nested);
    assert.match(nested.result, /"depth":\s*1|depth 1/);
    const child = branchIdIn(nested.result);
    assert.notEqual(child, parent);

    // The big file exhausts the nested branch: the model reads the force-return notice, not the file.
    const big = lastResult(bodies.slice(0, 6), 'fs__read_text_file');
    show('fs__read_text_file (budget exhausted)', big);
    assert.equal(big.isError, true);
    assert.match(big.result, new RegExp(`budget exhausted: \\d+/60 tokens; branch ${child} was returned with partial results; active branch is now ${parent}`));
    assert.ok(!big.result.includes('line 2999 of a large file'));

    const status = lastResult(bodies.slice(0, 7), 'branch_status');
    show('branch_status', status);
    assert.ok(status.result.includes(parent) && status.result.includes(child), status.result);
    assert.match(status.result, /budget_exhausted/);

    const returned = lastResult(bodies, 'branch_return');
    show('branch_return', returned);
    assert.match(returned.result, /port is 8080; the parser is in src\/parse\.c/);
    assert.match(returned.result, /tokens_folded/);

    // context_view as the model reads it: the folded view itself, not only its counters.
    const view = lastResult(bodies, 'context_view');
    show('context_view', view);
    assert.match(view.result, new RegExp(`= branch ${parent} \\[folded: \\d+ tokens -> \\d+\\] find the port :: port is 8080`));
    assert.equal(JSON.parse(run.stdout).result, 'The port is 8080 and the parser is in src/parse.c.');

    // The trail keeps what the branches did, readable with the CLI while the server runs.
    const list = contextdCli('trail', 'list', '--data-dir', dataDir);
    console.log(`--- contextd trail list\n${list}`);
    assert.match(list, new RegExp(`${parent}\\s+depth 0\\s+completed`));
    assert.match(list, new RegExp(`${child}\\s+depth 1\\s+budget_exhausted`));
    const session = /session (\S+)/.exec(list)[1];
    const shown = contextdCli('trail', 'show', session, '--data-dir', dataDir);
    console.log(`--- contextd trail show\n${excerpt(shown, 1500)}`);
    assert.match(shown, /port is 8080/);
  } finally {
    await double.close();
    await server.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});

test('Claude Code over stdio: a branch past its deadline is reported to the model at its next call', { skip: missing ?? false, timeout: 120000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  let branch = null;
  const double = await startAnthropicDouble({
    script: [
      { tools: [{ name: 'mcp__contextd__branch_create', input: { description: 'quick look', prompt: 'look at config.txt', timeout_seconds: 1 } }] },
      (body) => {
        branch = branchIdIn(lastResult([body], 'branch_create').result);
        return { tools: [{ name: 'Bash', input: { command: 'sleep 2; cat config.txt | head -1', description: 'wait past the deadline' } }] };
      },
      { tools: [{ name: 'mcp__contextd__branch_status', input: {} }] },
      { text: 'The branch timed out; the port is 8080.' },
    ],
  });
  try {
    const run = await runClaude({
      prompt: 'Look at config.txt quickly.', modelUrl: double.url, cwd: ws,
      mcpConfig: writeMcpConfig(ws, { command: BINARY, args: ['serve', '--transport', 'stdio', '--data-dir', dataDir] }),
      allowedTools: ['Bash', 'mcp__contextd'],
    });
    dump('stdio', double);
    assert.equal(run.code, 0, failWith(run, double));
    assert.deepEqual(double.errors, []);
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    const bodies = double.mainRequests();
    assert.equal(bodies.length, 4, failWith(run, double));
    const created = lastResult(bodies, 'branch_create');
    show('branch_create (stdio)', created);
    assert.match(created.result, /call branch_return/);
    const bash = lastResult(bodies, 'Bash');
    assert.match(bash.result, /port = 8080/);
    const status = lastResult(bodies, 'branch_status');
    show('branch_status after the deadline', status);
    assert.ok(branch, 'branch_create returned an id');
    assert.match(status.result, new RegExp(`branch ${branch} was force-returned \\(deadline passed \\(timeout 1 s\\)\\) with partial results`));
    assert.equal(exchangesOf(bodies[3], 'branch_status').length, 1);
  } finally {
    await double.close();
    cleanup(dataDir);
    cleanup(ws);
  }
});
