// Lessons at the start of a task, through the model gateway, with the pinned Claude Code (issue
// 35): a bank holding a lesson about the workspace's project P and lessons of two other projects
// (team scope, so visible to P) that share words with the task but are about something else.
// Claude Code names its project as `contextd connect claude-code` makes it do
// (ANTHROPIC_CUSTOM_HEADERS="X-Contextd-Project: <dir>"). The double must receive, in the first
// request that offers tools, exactly P's lesson, once, as one text block appended to the last
// user message; every later request of the thread carries the same block bytes at the same
// message; requests without tools carry none; the item's history records the injection into the
// conversation. With `X-Contextd-Memory: off` nothing is injected. Every request passes the
// double's checks (prefix binding of thinking, tool pairing).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { runClaude, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { excerpt } from './lib/transcript.mjs';
import { BINARY, startHttpServer, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);
const OPEN = '<contextd-lessons>';
const CLOSE = '</contextd-lessons>';

// The workspace: a small service whose port is in config.txt.
function workspace() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-lessons-ws-')));
  writeFileSync(join(ws, 'config.txt'), 'port = 8080\nworkers = 4\n');
  return ws;
}

// The project id of a directory, as the server derives it from X-Contextd-Project or a root
// (decision 0022): p_ + 16 hex digits of the SHA-256 of the canonical path.
function projectOf(dir) {
  return `p_${createHash('sha256').update(realpathSync(dir)).digest('hex').slice(0, 16)}`;
}

// P's lesson (active, confidence 5/6 from two successes) and two other projects' lessons, team
// scope, sharing "service", "port" and "find" with the task.
function bank(project) {
  const lesson = { id: 'mem_00000000000000000000000000lesson', tenant: 'local', project, scope: 'project',
    title: 'The service port is in config.txt', description: 'When looking for the port this service listens on.',
    content: 'Read config.txt at the repository root; its first line is the port (port = 8080).',
    success_count: 2 };
  const distractors = [
    { id: 'mem_000000000000000000000000000dist1', tenant: 'local', project: 'p_1111111111111111', scope: 'team',
      title: 'Forward a Kubernetes service port to a laptop', description: 'When a pod must be reached from a developer machine.',
      content: 'Run kubectl port-forward svc/api 9000:80 and keep that terminal open.' },
    { id: 'mem_000000000000000000000000000dist2', tenant: 'local', project: 'p_2222222222222222', scope: 'team',
      title: 'Find which process holds a port', description: 'When a server fails to start with address already in use.',
      content: 'Run ss -ltnp, find the process listening on the port and stop it.' },
  ];
  return { lesson, distractors };
}

// Every text block holding the lessons tag in `body`: {message, block, value}.
function lessonBlocks(body) {
  const found = [];
  body.messages.forEach((m, message) => {
    if (typeof m.content === 'string') {
      if (m.content.includes(OPEN)) found.push({ message, block: -1, value: m.content });
      return;
    }
    m.content.forEach((b, block) => {
      if (JSON.stringify(b).includes(OPEN)) found.push({ message, block, value: b });
    });
  });
  return found;
}

function withoutMarker(block) {
  const copy = structuredClone(block);
  delete copy.cache_control;
  return copy;
}

function failWith(run, double) {
  return `claude exited ${run.code} (${run.signal ?? 'no signal'})\nstdout: ${excerpt(run.stdout, 2000)}\n` +
    `stderr: ${excerpt(run.stderr, 2000)}\ndouble errors: ${double.errors.join('\n')}\n` +
    `requests: ${double.requests.map((r) => `${r.method} ${r.url}`).join(', ')}`;
}

function memoryShow(dataDir, id) {
  return JSON.parse(execFileSync(BINARY, ['memory', 'show', id, '--json', '--data-dir', dataDir],
    { encoding: 'utf8', timeout: 20000 }));
}

// One Claude Code task through a fresh contextd (its own data dir, the bank imported before it
// starts) whose model gateway forwards to a fresh double: Read config.txt, then answer.
// `headers` are ANTHROPIC_CUSTOM_HEADERS lines.
async function runTask({ ws, items, headers, label }) {
  const dataDir = tempDataDir();
  const bankFile = join(dataDir, 'bank.jsonl');
  writeFileSync(bankFile, items.map((m) => JSON.stringify(m)).join('\n') + '\n');
  const imported = execFileSync(BINARY, ['memory', 'import', bankFile, '--data-dir', dataDir], { encoding: 'utf8', timeout: 20000 });
  assert.match(imported, new RegExp(`imported ${items.length}, refused 0`));
  const double = await startAnthropicDouble({
    script: [
      { tools: [{ name: 'Read', input: { file_path: join(ws, 'config.txt') } }] },
      { tools: [{ name: 'Bash', input: { command: 'head -1 config.txt', description: 'the port line' } }] },
      { text: 'The service listens on port 8080.' },
    ],
  });
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['model_gateway:', '  anthropic:', `    base_url: ${double.url}`, ''].join('\n'));
  let server = null;
  try {
    server = await startHttpServer({ dataDir, args: ['--config', config] });
    const run = await runClaude({
      prompt: 'Find the port this service listens on.', modelUrl: new URL(server.url).origin, cwd: ws,
      mcpConfig: writeMcpConfig(ws, { url: server.url }), allowedTools: ['Read', 'Bash', 'mcp__contextd'],
      env: { ANTHROPIC_CUSTOM_HEADERS: headers.join('\n') },
    });
    const dir = process.env.CONTEXTD_AGENT_DUMP_DIR;
    if (dir) writeFileSync(join(dir, `claude-lessons-${label}.json`), JSON.stringify(double.requests, null, 1));
    return { dataDir, double, run, server };
  } catch (e) {
    await double.close();
    await server?.stop();
    cleanup(dataDir);
    throw e;
  }
}

// The double refused nothing and changed nothing about thinking; Claude Code finished.
function assertClean(run, double) {
  assert.equal(run.code, 0, failWith(run, double));
  assert.deepEqual(double.errors, [], 'the double refused nothing');
  assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
  assert.equal(JSON.parse(run.stdout).result, 'The service listens on port 8080.');
}

test('Claude Code through the model gateway: the project\'s lesson at the start of the task, once, repeated byte for byte; none with X-Contextd-Memory: off', { skip: missing ?? false, timeout: 180000 }, async () => {
  const ws = workspace();
  const project = projectOf(ws);
  const { lesson, distractors } = bank(project);
  const items = [lesson, ...distractors];
  const runs = [];
  try {
    // Memory on (the default), the project named as `contextd connect claude-code` names it.
    const on = await runTask({ ws, items, headers: [`X-Contextd-Project: ${ws}`], label: 'on' });
    runs.push(on);
    assertClean(on.run, on.double);
    const bodies = on.double.mainRequests();
    assert.equal(bodies.length, 3, failWith(on.run, on.double));
    // The gateway read the project from Claude Code's custom header: P, the MCP session's.
    const metrics = await (await fetch(`${new URL(on.server.url).origin}/metrics`)).text();
    assert.match(metrics, new RegExp(`contextd_model_requests_total\\{api="anthropic",project="${project}",status="200",tenant="local"\\} 3`));

    // The first request that offers tools: one block, the last of the last (user) message.
    const first = lessonBlocks(bodies[0]);
    console.log(`--- the lessons as the model read them\n${JSON.stringify(first.map((f) => f.value), null, 1)}`);
    assert.equal(first.length, 1, JSON.stringify(first));
    const at = first[0];
    const last = bodies[0].messages.at(-1);
    assert.equal(at.message, bodies[0].messages.length - 1, 'in the last message');
    assert.equal(last.role, 'user');
    assert.ok(Array.isArray(last.content) && at.block === last.content.length - 1, 'appended as its last block');
    assert.ok(!last.content.some((b) => b.type === 'tool_result'), 'a new task: no tool results');
    assert.equal(at.value.type, 'text');
    const text = at.value.text;
    assert.ok(text.startsWith(OPEN) && text.endsWith(CLOSE), text);
    // Exactly P's lesson, once; no other project's.
    const ids = [...text.matchAll(/\[(mem_[A-Za-z0-9]+)\]/g)].map((m) => m[1]);
    assert.deepEqual(ids, [lesson.id], text);
    assert.equal(text.split('\n').filter((l) => l.includes(`[${lesson.id}]`)).length, 1, text);
    for (const d of distractors) assert.ok(!JSON.stringify(bodies[0]).includes(d.id), `${d.id} injected`);

    // Every later request of the thread: the same block, byte for byte, at the same message, and
    // no second one (no new user turn: the later requests end with tool results).
    for (const [i, body] of bodies.entries()) {
      const found = lessonBlocks(body);
      assert.equal(found.length, 1, `request ${i}: ${JSON.stringify(found)}`);
      assert.equal(found[0].message, at.message, `request ${i}: the same message`);
      assert.equal(found[0].block, at.block, `request ${i}: the same block`);
      assert.deepEqual(withoutMarker(found[0].value), withoutMarker(at.value), `request ${i}: the same bytes`);
      assert.equal(found[0].value.text, text);
    }
    // Requests without tools (title, side requests) get none.
    for (const r of on.double.requests) {
      if (r.json && !(Array.isArray(r.json.tools) && r.json.tools.length)) {
        assert.ok(!r.raw.includes(OPEN), `a request without tools carries lessons: ${r.url}`);
      }
    }

    // The item's history records the injection into the conversation; the others' none.
    const shown = memoryShow(on.dataDir, lesson.id);
    console.log(`--- contextd memory show ${lesson.id} --json: injections\n${JSON.stringify(shown.injections, null, 1)}`);
    const injected = shown.history.filter((h) => h.action === 'injected');
    assert.equal(injected.length, 1, JSON.stringify(shown.history));
    assert.match(injected[0].actor, /^conversation:\S+$/);
    assert.equal(shown.injections.length, 1);
    assert.equal(shown.injections[0].into.kind, 'conversation');
    assert.equal(`conversation:${shown.injections[0].into.id}`, injected[0].actor);
    for (const d of distractors) assert.deepEqual(memoryShow(on.dataDir, d.id).injections, [], d.id);

    // Memory off for this conversation: the same task, a fresh server and bank, no lessons.
    const off = await runTask({ ws, items, headers: [`X-Contextd-Project: ${ws}`, 'X-Contextd-Memory: off'], label: 'off' });
    runs.push(off);
    assertClean(off.run, off.double);
    assert.equal(off.double.mainRequests().length, 3, failWith(off.run, off.double));
    for (const r of off.double.requests) assert.ok(!r.raw.includes(OPEN), `lessons with memory off: ${r.url}`);
    assert.deepEqual(memoryShow(off.dataDir, lesson.id).injections, []);
  } finally {
    for (const r of runs) {
      await r.double.close();
      await r.server?.stop();
      cleanup(r.dataDir);
    }
    cleanup(ws);
  }
});
