// The isolated branch view (issue 33) as the real agents meet it: Claude Code (Messages) and Codex
// (Responses) with contextd as their model endpoint and MCP server, against the scripted doubles.
// While a branch is open the model must receive `system` and `tools` as sent, the conversation's
// opening (the messages before the model's first turn) as sent, one user message opening the
// branch ("[contextd] Branch <id>": its description and prompt, branch_create's answer and the
// answers of the calls made beside it) and then the branch's own turns; nothing the parent did
// after its opening. The parent reads a file holding PARENT_MARKER, opens a branch that reads a
// file holding BRANCH_MARKER and runs a command, a nested branch inside reads INNER_MARKER; each
// return resumes the enclosing view with the branch folded; a branch force-returned by its budget
// (a big read) ends its view at that request. A restart of contextd mid-branch: on the shared
// (PostgreSQL) store the branch outlives the process and the new one forwards the view's opening
// byte for byte; on SQLite the branch is force-returned with the process, which ends its view.
// Also `branch_view: inherited` (the old behaviour) and `branch_view_keep_opening: false`; and
// the client's own compaction while a branch is open (Claude Code's /compact, Codex's
// auto-compact): what the model writes then becomes the client's whole history, so the
// compaction request must carry the parent's history, not the branch's view.
// The doubles refuse a thinking block / reasoning item replayed behind a changed prefix and an
// unanswered call, so every view must also be one the provider accepts, request after request.
// Prints the requests, the view counters and the tokens spared (/metrics).
//
// Run: CONTEXTD_BINARY=build/debug/src/cli/contextd node --test tests/agents/branch_view.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { startClaudeStream, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { branchIdIn, excerpt, messageText, kViewOpening as OPEN, openedBranchId } from './lib/transcript.mjs';
import { startChain, fileOf, dumpSession } from './lib/long_session.mjs';
import { codexAvailable, CODEX_BINARY, describeRun } from './lib/codex.mjs';
import { toolOutputFor, outputText } from './lib/responses_double.mjs';
import { runCodexSession, stepKit, scriptBuilders, metric, viewOpeningText } from './lib/codex_session.mjs';
import { startPostgres, postgresMissing } from './lib/postgres.mjs';
import { BINARY, cleanup, startHttpServer, tempDataDir } from '../e2e/harness.mjs';

const noBinary = existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`;
const claudeSkip = claudeMissing() ?? noBinary ?? false;
const codexSkip = !codexAvailable() ? `the Codex CLI is not installed at ${CODEX_BINARY} (run scripts/install-deps.sh)`
  : noBinary ?? false;

// Text only a tool result holds (never a tool call's input, the prompt or a branch's arguments),
// so that finding it in a request says whose work reached the model.
const PARENT_MARKER = 'PARENT_MARKER_q7';
const BRANCH_MARKER = 'BRANCH_MARKER_k2';
const INNER_MARKER = 'INNER_MARKER_w5';
const BIG_MARKER = 'BIG_MARKER_z9';
// Printed by commands that compute them: only their outputs hold them.
const SAME_TURN = 'SAME_TURN_42';
const SAME_TURN_CMD = 'echo "SAME_TURN_$((20+22))"';
const BRANCH_CMD = 'BRANCH_CMD_42';
const BRANCH_CMD_CMD = 'echo "BRANCH_CMD_$((6*7))"';
const TASK = 'Survey the files of this workspace (TASK_TEXT_m4).';
const TASK_MARK = 'TASK_TEXT_m4';
const A = { description: 'survey the branch file', prompt: 'Read branch.txt and run the command (PROMPT_A_v1).' };
const A1 = { description: 'look at the inner file', prompt: 'Read inner.txt (PROMPT_A1_v2).' };
const C = { description: 'skim the big file', prompt: 'Read big.txt (PROMPT_C_v3).' };
const SUMMARY_A1 = 'SUMMARY_A1: inner.txt holds 30 lines';
const SUMMARY_A = 'SUMMARY_A: branch.txt holds 30 lines and the command printed 42';

function workspace(prefix) {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), `${prefix}-`)));
  writeFileSync(join(ws, 'parent.txt'), fileOf(PARENT_MARKER, 20));
  writeFileSync(join(ws, 'branch.txt'), fileOf(BRANCH_MARKER, 30));
  writeFileSync(join(ws, 'inner.txt'), fileOf(INNER_MARKER, 30));
  writeFileSync(join(ws, 'big.txt'), fileOf(BIG_MARKER, 900));
  return ws;
}

// The view counters of /metrics (summed over their other labels; 0 when there is none).
async function viewNumbers(origin) {
  const text = await (await fetch(`${origin}/metrics`)).text();
  return {
    isolated: metric(text, 'contextd_model_branch_view_requests_total', { view: 'isolated' }),
    inherited: metric(text, 'contextd_model_branch_view_requests_total', { view: 'inherited' }),
    spared: metric(text, 'contextd_model_branch_view_tokens_spared_total'),
    listed: text.split('\n').filter((l) => l.startsWith('contextd_model_branch_view')).join('\n'),
    text,
  };
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages (Claude Code)

// Messages without cache_control markers (clients move the breakpoint to the newest block; the
// provider's prefix, and the double's thinking binding, ignore them).
function withoutMarkers(messages) {
  return messages.map((m) => {
    const copy = structuredClone(m);
    for (const b of Array.isArray(copy.content) ? copy.content : []) delete b.cache_control;
    return copy;
  });
}

// The index of the first assistant message (the opening is what comes before it).
const openingEnd = (messages) => {
  const i = messages.findIndex((m) => m.role === 'assistant');
  return i < 0 ? messages.length : i;
};

// Where the branch whose branch_create answered with `branch` was opened in a client body:
// {create (its assistant message), answer (the user message answering it)}.
function createdAt(body, branch) {
  const messages = body.messages;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    const ids = m.content.filter((b) => b.type === 'tool_use' && b.name.endsWith('branch_create')).map((b) => b.id);
    if (!ids.length) continue;
    const next = messages[i + 1];
    const hit = (next?.content ?? []).some?.((b) => b.type === 'tool_result' && ids.includes(b.tool_use_id) &&
      JSON.stringify(b.content).includes(branch));
    if (hit) return { create: i, answer: i + 1 };
  }
  return null;
}

// A one-line picture of a request's messages for failure messages.
const shape = (body) => body.messages.map((m, i) => `${i}:${m.role}[${typeof m.content === 'string' ? 'str'
  : m.content.map((b) => b.type).join(',')}] ${excerpt(messageText(m) || JSON.stringify(m.content), 90).replace(/\n/g, ' ')}`).join('\n  ');

// Checks that model request `q` (what the double received) is the isolated view of `branch`,
// given `c` (what Claude Code sent for the same turn): system and tools as sent, the opening as
// sent, one user message opening the branch, then (`exactTail`) the branch's own turns as sent.
// `present`/`absent`: markers that must / must not reach the model. Returns the opening message.
function assertIsolated(label, q, c, { branch, args, keepOpening = true, exactTail = true, present = [], absent = [] }) {
  const where = `${label}: the model received\n  ${shape(q)}`;
  assert.equal(JSON.stringify(q.system), JSON.stringify(c.system), `${label}: system as sent`);
  assert.equal(JSON.stringify(q.tools), JSON.stringify(c.tools), `${label}: tools as sent`);
  const n = keepOpening ? openingEnd(c.messages) : 0;
  assert.ok(openingEnd(c.messages) > 0 && openingEnd(c.messages) < c.messages.length, `${label}: the client's transcript has an opening`);
  assert.deepEqual(q.messages.slice(0, n), c.messages.slice(0, n), `${label}: the opening as sent\n${where}`);
  const open = q.messages[n];
  assert.ok(open && open.role === 'user', `${label}: a user message opens the branch\n${where}`);
  const text = messageText(open);
  assert.ok(text.startsWith(`${OPEN}${branch}`), `${label}: the opening message starts with "${OPEN}${branch}"\n${where}`);
  assert.ok(text.includes(args.prompt) && text.includes(args.description), `${label}: it holds the description and prompt: ${excerpt(text, 600)}`);
  assert.ok(text.includes(branch), `${label}: it holds branch_create's answer`);
  const at = createdAt(c, branch);
  assert.ok(at, `${label}: the client's transcript holds the create of ${branch}`);
  if (exactTail) {
    assert.deepEqual(q.messages.slice(n + 1), c.messages.slice(at.answer + 1), `${label}: the branch's own turns as sent\n${where}`);
  }
  const all = JSON.stringify(q.messages);
  for (const m of present) assert.ok(all.includes(m), `${label}: ${m} should reach the model\n${where}`);
  for (const m of absent) assert.ok(!all.includes(m), `${label}: ${m} must not reach the model\n${where}`);
  return open;
}

function assertParentView(label, q, { present = [], absent = [] }) {
  const where = `${label}: the model received\n  ${shape(q)}`;
  const all = JSON.stringify(q.messages);
  assert.ok(!q.messages.some((m) => m.role === 'user' && messageText(m).startsWith(OPEN)), `${label}: no branch view\n${where}`);
  for (const m of present) assert.ok(all.includes(m), `${label}: ${m} should reach the model\n${where}`);
  for (const m of absent) assert.ok(!all.includes(m), `${label}: ${m} must not reach the model\n${where}`);
}

const bash = (command) => ({ name: 'Bash', input: { command, description: command.slice(0, 40) } });
const read = (ws, file) => ({ name: 'Read', input: { file_path: join(ws, file) } });
const CC = (tool) => `mcp__contextd__${tool}`;
// The id of the branch just opened: in an isolated view branch_create's answer reaches the model
// inside the branch's opening message, otherwise as its tool_result.
const idOf = (body) => openedBranchId(body);

// Claude Code's main requests as it sent them (the recorder) and as the model received them.
function bodiesOf(chain, double) {
  const isMain = (r) => r.method === 'POST' && r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') &&
    Array.isArray(r.json?.tools) && r.json.tools.length > 0;
  return { client: chain.recorder.requests.filter(isMain).map((r) => r.json), model: double.mainRequests() };
}

// Runs Claude Code through recorder -> contextd -> double on `script`, with `folding` lines in
// contextd's `context_folding:` and `yaml` top-level lines. `onChain(chain)` runs once the chain is up.
async function runClaudeSession({ label, script, folding = [], yaml = [], ws, dataDir, onChain = null, timeoutMs = 150000, followUps = [] }) {
  const double = await startAnthropicDouble({ script });
  const chain = await startChain({ double, dataDir, folding, yaml });
  if (onChain) onChain(chain);
  const session = startClaudeStream({
    prompt: TASK, modelUrl: chain.modelUrl, cwd: ws, mcpConfig: writeMcpConfig(ws, { url: chain.mcpUrl }),
    allowedTools: ['Read', 'Bash', 'mcp__contextd'], timeoutMs, followUps,
  });
  const run = await session.done;
  dumpSession(`branch-view-${label}`, double, chain.recorder);
  const failWith = () => `claude exited ${run.code} (${run.signal ?? 'no signal'})\nstderr: ${excerpt(run.stderr, 2000)}\n` +
    `double refused: ${JSON.stringify(double.refused, null, 1)}\nlast events: ${excerpt(JSON.stringify(run.events.slice(-3)), 2000)}\n` +
    `contextd: ${excerpt(chain.server.stderr().slice(-3000), 3000)}`;
  return { double, chain, run, failWith };
}

test('Claude Code: a branch sees the opening and its own work, a nested branch its own, the parent resumes folded; a budget force-return ends the view', { skip: claudeSkip, timeout: 240000 }, async () => {
  const ws = workspace('contextd-view-ws');
  const dataDir = tempDataDir();
  const ids = {};
  const script = [
    /* 0 */ { tools: [read(ws, 'parent.txt')] },
    // A, with a command beside it in the same turn: its answer belongs in A's opening message.
    /* 1 */ { tools: [{ name: CC('branch_create'), input: { ...A, budget: 30000 } }, bash(SAME_TURN_CMD)] },
    /* 2 */ (body) => { ids.A = idOf(body); return { tools: [read(ws, 'branch.txt')] }; },
    /* 3 */ { tools: [bash(BRANCH_CMD_CMD)] },
    /* 4 */ { tools: [{ name: CC('branch_create'), input: { ...A1, budget: 20000 } }] },
    /* 5 */ (body) => { ids.A1 = idOf(body); return { tools: [read(ws, 'inner.txt')] }; },
    /* 6 */ { tools: [{ name: CC('branch_return'), input: { message: SUMMARY_A1 } }] },
    /* 7 */ { tools: [{ name: CC('branch_return'), input: { message: SUMMARY_A } }] },
    // C: a big read in a small budget, force-returned by the request that carries it.
    /* 8 */ { tools: [{ name: CC('branch_create'), input: { ...C, budget: 2000 } }] },
    /* 9 */ (body) => { ids.C = idOf(body); return { tools: [read(ws, 'big.txt')] }; },
    /* 10 */ { tools: [bash('echo after c')] },
    /* 11 */ { text: 'All surveyed.' },
  ];
  let session = null;
  try {
    session = await runClaudeSession({ label: 'claude', script, ws, dataDir });
    const { double, chain, run, failWith } = session;
    assert.equal(run.code, 0, failWith());
    assert.deepEqual(double.refused, [], `the provider checks held on every request\n${failWith()}`);
    assertThinkingKept(double, `no thinking block dropped, none missing from a tool loop\n${failWith()}`);
    const { client, model } = bodiesOf(chain, double);
    assert.equal(model.length, script.length, failWith());
    assert.equal(client.length, model.length);
    console.log(`--- ids ${JSON.stringify(ids)}`);

    // Before any branch: the parent as sent.
    assert.deepEqual(model[1].messages, client[1].messages);
    assert.ok(JSON.stringify(model[1].messages).includes(PARENT_MARKER));
    // The client's own transcript still holds everything (sanity: the markers do reach contextd).
    const unfolded = JSON.stringify(client[7].messages);
    for (const m of [PARENT_MARKER, BRANCH_MARKER, BRANCH_CMD, SAME_TURN]) assert.ok(unfolded.includes(m), `the client sent ${m}`);

    // A: the opening, its opening message (the command run beside the create included), its work.
    const notParent = [PARENT_MARKER];
    const openA = assertIsolated('A, first request', model[2], client[2], { branch: ids.A, args: A,
      present: [SAME_TURN, TASK_MARK], absent: notParent });
    assert.equal(model[2].messages.length, openingEnd(client[2].messages) + 1, 'nothing after the opening message yet');
    console.log(`--- A's opening message as the model read it\n${excerpt(messageText(openA), 1500)}`);
    assertIsolated('A, after its read', model[3], client[3], { branch: ids.A, args: A, present: [BRANCH_MARKER], absent: notParent });
    assertIsolated('A, after its command', model[4], client[4], { branch: ids.A, args: A, present: [BRANCH_MARKER, BRANCH_CMD], absent: notParent });
    for (const i of [3, 4]) {
      assert.deepEqual(withoutMarkers(model[i].messages.slice(0, model[2].messages.length)), withoutMarkers(model[2].messages),
        `A's view grows from request 2 on (request ${i})`);
    }

    // A1, nested: neither the parent's file nor A's own work (nor A's prompt and opening message).
    const notA = [PARENT_MARKER, BRANCH_MARKER, BRANCH_CMD, SAME_TURN, A.prompt];
    assertIsolated('A1, first request', model[5], client[5], { branch: ids.A1, args: A1, absent: notA });
    assert.equal(model[5].messages.length, openingEnd(client[5].messages) + 1);
    assertIsolated('A1, after its read', model[6], client[6], { branch: ids.A1, args: A1, present: [INNER_MARKER], absent: notA });
    assert.deepEqual(withoutMarkers(model[6].messages.slice(0, model[5].messages.length)), withoutMarkers(model[5].messages));

    // A1 returned: A's view resumes, unchanged up to A1's create turn, with A1 folded.
    assertIsolated('A after A1 returned', model[7], client[7], { branch: ids.A, args: A, exactTail: false,
      present: [BRANCH_MARKER, BRANCH_CMD, SUMMARY_A1, `[branch ${ids.A1} returned;`], absent: [PARENT_MARKER, INNER_MARKER] });
    assert.deepEqual(withoutMarkers(model[7].messages.slice(0, model[4].messages.length)), withoutMarkers(model[4].messages),
      'A\'s view is what request 4 carried, A1\'s create turn included');

    // A returned: the parent's transcript with A folded (A1 inside it too).
    assertParentView('parent after A returned', model[8], { present: [PARENT_MARKER, SUMMARY_A, `[branch ${ids.A} returned;`],
      absent: [BRANCH_MARKER, BRANCH_CMD, INNER_MARKER, SUMMARY_A1] });
    assert.deepEqual(withoutMarkers(model[8].messages.slice(0, model[1].messages.length)), withoutMarkers(model[1].messages),
      'the parent\'s prefix is what request 1 carried');

    // C: its own view (the parent's summary of A is not the opening), then force-returned.
    assertIsolated('C, first request', model[9], client[9], { branch: ids.C, args: C,
      absent: [PARENT_MARKER, SUMMARY_A, BRANCH_MARKER] });
    // (contextd's partial summary quotes the start of the read: its later lines tell.)
    const bigLate = `${BIG_MARKER} line 500`;
    assertParentView('parent after C was force-returned', model[10], {
      present: [PARENT_MARKER, SUMMARY_A, `[branch ${ids.C} force-returned (budget`], absent: [bigLate, '[contextd] Branch'] });
    assert.ok(JSON.stringify(client[10].messages).includes(bigLate), 'Claude Code sent the big read');
    assertParentView('parent after C', model[11], { present: [PARENT_MARKER, 'after c'], absent: [bigLate] });

    const views = [2, 3, 4, 5, 6, 7, 9];
    const numbers = await viewNumbers(chain.origin);
    const sent = (bodies, i) => Math.ceil(JSON.stringify(bodies[i].messages).length / 4);
    const sparedHere = views.reduce((n, i) => n + sent(client, i) - sent(model, i), 0);
    console.log(`--- Claude Code: ${model.length} model requests, ${views.length} in a branch view; metrics: ` +
      `isolated ${numbers.isolated}, inherited ${numbers.inherited}, tokens spared ${numbers.spared} ` +
      `(the messages of the view requests: ${sparedHere} tokens fewer than sent, chars/4)\n${numbers.listed}`);
    assert.equal(numbers.isolated, views.length, `one isolated view per request sent inside a branch\n${numbers.listed}`);
    assert.equal(numbers.inherited, 0);
    assert.ok(numbers.spared > 0, numbers.listed);
  } finally {
    await session?.double.close();
    await session?.chain.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});


// Runs Claude Code on `script` and restarts contextd (stopped, then started on the same data dir,
// config and port, so Claude Code's MCP URL stays valid) while the recorder holds main request
// `restartBefore` (set by the script). Resolves with the session and {stopped, second}.
async function runWithRestart({ label, script, ws, dataDir, yaml = [], restart }) {
  let mainSeen = 0;
  let restarted = null;
  const session = await runClaudeSession({ label, script, ws, dataDir, yaml, onChain: (chain) => {
    chain.recorder.gate = async (record) => {
      const main = record.method === 'POST' && record.url.startsWith('/v1/messages') && !record.url.includes('count_tokens') &&
        Array.isArray(record.json?.tools) && record.json.tools.length > 0;
      if (!main) return;
      if (mainSeen++ !== restart.before || restarted) return;
      const first = chain.server;
      const stopped = await first.stop();
      const second = await startHttpServer({ dataDir, args: ['--config', chain.config], listen: new URL(first.url).host });
      restarted = { stopped, second };
      chain.server = second;
      chain.origin = new URL(second.url).origin;
      chain.recorder.target = chain.origin;
    };
  } });
  return { session, restarted };
}

test('Claude Code: contextd restarted mid-branch (SQLite): the branch does not outlive its process (force-returned), and its view ends', { skip: claudeSkip, timeout: 200000 }, async () => {
  const ws = workspace('contextd-view-restart-ws');
  const dataDir = tempDataDir();
  const ids = {};
  const restart = { before: null };
  const script = [
    /* 0 */ { tools: [read(ws, 'parent.txt')] },
    /* 1 */ { tools: [{ name: CC('branch_create'), input: { ...A, budget: 30000 } }] },
    /* 2 */ (body) => { ids.A = idOf(body); return { tools: [read(ws, 'branch.txt')] }; },
    // The next request reaches a new contextd.
    /* 3 */ () => { restart.before = 4; return { tools: [bash(BRANCH_CMD_CMD)] }; },
    /* 4 */ { tools: [bash('echo after the restart')] },
    /* 5 */ { text: 'Done after the restart.' },
  ];
  let session = null;
  try {
    const out = await runWithRestart({ label: 'restart-sqlite', script, ws, dataDir, restart });
    session = out.session;
    const { double, chain, run, failWith } = session;
    assert.ok(out.restarted, 'contextd was restarted mid-branch');
    assert.equal(run.code, 0, failWith());
    assert.deepEqual(double.refused, [], `the provider checks held on every request\n${failWith()}`);
    assertThinkingKept(double, `no thinking block dropped, none missing from a tool loop\n${failWith()}`);
    const { client, model } = bodiesOf(chain, double);
    assert.equal(model.length, script.length, failWith());
    for (const i of [2, 3]) {
      assertIsolated(`A, request ${i}`, model[i], client[i], { branch: ids.A, args: A, present: i > 2 ? [BRANCH_MARKER] : [], absent: [PARENT_MARKER] });
    }
    // The branch ended with the old process (a SQLite store is not shared: the shutdown or the
    // start-up recovery force-returns what was left active): the request after the restart is the
    // parent's, the branch folded as force-returned, its prefix what the parent's last request carried.
    assertParentView('the request after the restart', model[4], {
      present: [PARENT_MARKER, `[branch ${ids.A} force-returned (`], absent: [`${BRANCH_MARKER} line 20`, BRANCH_CMD] });
    assert.deepEqual(withoutMarkers(model[4].messages.slice(0, model[1].messages.length)), withoutMarkers(model[1].messages));
    const numbers = await viewNumbers(chain.origin);
    console.log(`--- SQLite restart: the second contextd counted isolated ${numbers.isolated}, inherited ${numbers.inherited}`);
    assert.equal(numbers.isolated + numbers.inherited, 0, 'no branch view after the restart');
  } finally {
    await session?.double.close();
    await session?.chain.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});

test('Claude Code: contextd restarted mid-branch (shared PostgreSQL store) forwards the same view bytes', { skip: claudeSkip || postgresMissing() || false, timeout: 200000 }, async () => {
  const ws = workspace('contextd-view-restart-pg-ws');
  const dataDir = tempDataDir();
  const ids = {};
  const restart = { before: null };
  const script = [
    /* 0 */ { tools: [read(ws, 'parent.txt')] },
    /* 1 */ { tools: [{ name: CC('branch_create'), input: { ...A, budget: 30000 } }] },
    /* 2 */ (body) => { ids.A = idOf(body); return { tools: [read(ws, 'branch.txt')] }; },
    // The next request reaches a new contextd, and so does branch_return (the MCP session is shared).
    /* 3 */ () => { restart.before = 4; return { tools: [bash(BRANCH_CMD_CMD)] }; },
    /* 4 */ { tools: [{ name: CC('branch_return'), input: { message: SUMMARY_A } }] },
    /* 5 */ { text: 'Done after the restart.' },
  ];
  let session = null;
  let pg = null;
  try {
    pg = await startPostgres();
    const yaml = ['store:', '  backend: postgres', '  postgres:', `    url: ${pg.url}`];
    const out = await runWithRestart({ label: 'restart-pg', script, ws, dataDir, yaml, restart });
    session = out.session;
    const { double, chain, run, failWith } = session;
    assert.ok(out.restarted, 'contextd was restarted mid-branch');
    console.log(`--- restart: the first contextd exited ${JSON.stringify(out.restarted.stopped)}`);
    assert.equal(run.code, 0, failWith());
    assert.deepEqual(double.refused, [], `the provider checks held on every request\n${failWith()}`);
    assertThinkingKept(double, `no thinking block dropped, none missing from a tool loop\n${failWith()}`);
    const { client, model } = bodiesOf(chain, double);
    assert.equal(model.length, script.length, failWith());

    // Requests 2 and 3 went to the first contextd, 4 to the second: all three in A's view.
    for (const i of [2, 3, 4]) {
      assertIsolated(`A, request ${i}${i === 4 ? ' (after the restart)' : ''}`, model[i], client[i],
        { branch: ids.A, args: A, present: i > 2 ? [BRANCH_MARKER] : [], absent: [PARENT_MARKER] });
    }
    const n = openingEnd(client[4].messages);
    const before = JSON.stringify(withoutMarkers(model[3].messages.slice(0, n + 1)));
    const after = JSON.stringify(withoutMarkers(model[4].messages.slice(0, n + 1)));
    console.log(`--- the view's opening (${n} message(s) and the branch's opening message): ${before.length} bytes before the restart, ${after.length} after`);
    assert.equal(after, before, 'the opening message is repeated byte for byte after the restart');
    assert.deepEqual(withoutMarkers(model[4].messages.slice(0, model[3].messages.length)), withoutMarkers(model[3].messages),
      'the view after the restart grows from the one before');
    // The return, through the new contextd: the parent resumes with the branch folded.
    assertParentView('parent after the return', model[5], { present: [PARENT_MARKER, SUMMARY_A, `[branch ${ids.A} returned;`],
      absent: [BRANCH_MARKER, BRANCH_CMD] });
    const numbers = await viewNumbers(chain.origin);
    console.log(`--- PostgreSQL restart: the second contextd counted isolated ${numbers.isolated} (request 4)`);
    assert.equal(numbers.isolated, 1, numbers.listed);
  } finally {
    await session?.double.close();
    await session?.chain.stop();
    await pg?.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});

test('Claude Code: `branch_view: inherited` sends the parent\'s history into the branch; `branch_view_keep_opening: false` leaves the opening out', { skip: claudeSkip, timeout: 240000 }, async () => {
  const script = () => {
    const ids = {};
    return { ids, turns: (ws) => [
      /* 0 */ { tools: [read(ws, 'parent.txt')] },
      /* 1 */ { tools: [{ name: CC('branch_create'), input: { ...A, budget: 30000 } }] },
      /* 2 */ (body) => { ids.A = idOf(body); return { tools: [read(ws, 'branch.txt')] }; },
      /* 3 */ { tools: [{ name: CC('branch_return'), input: { message: SUMMARY_A } }] },
      /* 4 */ { text: 'Done.' },
    ] };
  };
  const runOne = async (label, folding, check) => {
    const ws = workspace(`contextd-view-${label}-ws`);
    const dataDir = tempDataDir();
    const { ids, turns } = script();
    let session = null;
    try {
      session = await runClaudeSession({ label, script: turns(ws), folding, ws, dataDir });
      const { double, chain, run, failWith } = session;
      assert.equal(run.code, 0, failWith());
      assert.deepEqual(double.refused, [], failWith());
      assertThinkingKept(double, failWith());
      const { client, model } = bodiesOf(chain, double);
      assert.equal(model.length, 5, failWith());
      await check({ ids, client, model, numbers: await viewNumbers(chain.origin) });
      // Either way, the parent resumes folded.
      assertParentView(`${label}: after the return`, model[4], { present: [PARENT_MARKER, SUMMARY_A], absent: [BRANCH_MARKER] });
    } finally {
      await session?.double.close();
      await session?.chain.stop();
      cleanup(dataDir);
      cleanup(ws);
    }
  };

  await runOne('inherited', ['  branch_view: inherited'], ({ ids, client, model, numbers }) => {
    // The old behaviour: inside the branch the model reads the parent's history, as sent.
    for (const i of [2, 3]) {
      assert.deepEqual(model[i].messages, client[i].messages, `inherited: request ${i} as sent`);
      assertParentView(`inherited: request ${i}`, model[i], { present: [PARENT_MARKER, ids.A] });
    }
    console.log(`--- inherited: isolated ${numbers.isolated}, inherited ${numbers.inherited}, spared ${numbers.spared}`);
    assert.equal(numbers.inherited, 2, numbers.listed);
    assert.equal(numbers.isolated, 0, numbers.listed);
    assert.equal(numbers.spared, 0, numbers.listed);
  });

  await runOne('no-opening', ['  branch_view_keep_opening: false'], ({ ids, client, model, numbers }) => {
    // The view starts with the branch's opening message: the task and Claude Code's reminders
    // (its first user message) are left out with the parent's history.
    assertIsolated('no opening: first request', model[2], client[2], { branch: ids.A, args: A, keepOpening: false,
      absent: [PARENT_MARKER, TASK_MARK] });
    assert.equal(model[2].messages.length, 1, shape(model[2]));
    assertIsolated('no opening: after its read', model[3], client[3], { branch: ids.A, args: A, keepOpening: false,
      present: [BRANCH_MARKER], absent: [PARENT_MARKER, TASK_MARK] });
    console.log(`--- keep_opening false: isolated ${numbers.isolated}, spared ${numbers.spared}`);
    assert.equal(numbers.isolated, 2, numbers.listed);
    assert.ok(numbers.spared > 0, numbers.listed);
  });
});

// Claude Code's compaction request is an ordinary main request whose last user message opens so.
const kCompactPrompt = 'CRITICAL: Respond with TEXT ONLY';
const lastUserText = (body) => messageText([...body.messages].reverse().find((m) => m.role === 'user') ?? {});

test('Claude Code /compact while a branch is open: the compaction request summarises the parent\'s history, not the branch\'s view', { skip: claudeSkip, timeout: 200000 }, async () => {
  // What the model writes for a compaction request becomes the client's whole history: written
  // from the branch's isolated view, it would drop everything the parent did after its opening.
  const ws = workspace('contextd-view-compact-ws');
  const dataDir = tempDataDir();
  const ids = {};
  const steps = [
    { tools: [read(ws, 'parent.txt')] },
    { tools: [{ name: CC('branch_create'), input: { ...A, budget: 30000 } }] },
    (body) => { ids.A = idOf(body); return { tools: [read(ws, 'branch.txt')] }; },
    // Claude Code goes idle with A open; the user types /compact, then asks it to go on.
    { text: 'Pausing with the branch open.' },
    { tools: [bash(BRANCH_CMD_CMD)] },
    { tools: [{ name: CC('branch_return'), input: { message: SUMMARY_A } }] },
    { text: 'Done.' },
  ];
  let step = 0;
  const compactions = [];
  const dispatch = (body, double) => {
    if (lastUserText(body).includes(kCompactPrompt)) {
      compactions.push(double.requests.length - 1);
      return { text: '<summary>SUMMARY_COMPACT: the user asked for a survey; a branch is open.</summary>' };
    }
    let turn = steps[step++];
    if (typeof turn === 'function') turn = turn(body, double);
    return turn ?? { text: 'Done.' };
  };
  let session = null;
  try {
    session = await runClaudeSession({ label: 'compact', script: Array.from({ length: 20 }, () => dispatch), ws, dataDir,
      followUps: ['/compact', 'Go on with the survey.'] });
    const { double, chain, run, failWith } = session;
    assert.equal(run.code, 0, failWith());
    assert.equal(compactions.length, 1, `one compaction request\n${failWith()}`);
    const compaction = double.requests[compactions[0]].json;
    const sent = chain.recorder.requests.map((r) => r.json).find((b) => b && Array.isArray(b.messages) && lastUserText(b).includes(kCompactPrompt));
    assert.ok(JSON.stringify(sent.messages).includes(PARENT_MARKER), 'Claude Code sent its whole history to be compacted');
    console.log(`--- the compaction request as the model received it\n  ${shape(compaction)}`);
    assert.ok(!compaction.messages.some((m) => m.role === 'user' && messageText(m).startsWith(OPEN)),
      `the compaction request was sent as branch ${ids.A}'s isolated view:\n  ${shape(compaction)}`);
    assert.ok(JSON.stringify(compaction.messages).includes(PARENT_MARKER), 'the parent\'s work reaches the compaction');
  } finally {
    await session?.double.close();
    await session?.chain.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});

// ---------------------------------------------------------------------------------------------
// OpenAI Responses (Codex)

// The raw JSON text of each input item of a request body as it was sent.
const rawItems = (bodyText) => JSON.parse(bodyText).input.map((item) => JSON.stringify(item));
const itemText = (item) => (typeof item?.content === 'string' ? item.content
  : (item?.content ?? []).map((p) => p?.text ?? '').join(''));

test('Codex: a branch sees the opening and its own work, a nested branch its own, the parent resumes folded; a budget force-return ends the view', { skip: codexSkip, timeout: 300000 }, async () => {
  const dataDir = tempDataDir();
  const ws = workspace('contextd-view-codex-ws');
  const steps = [];
  let kit;
  const { add, shell, create, enter, ret } = scriptBuilders(steps, () => kit, branchIdIn);

  add(({ s }) => { kit = stepKit(s); return null; });
  shell('parent', 'cat parent.txt');
  // A, with a command beside it in the same turn.
  add(({ body, index }) => ({ calls: [kit.call(body, index, 'createA', 'branch_create', { ...A, budget: 30000 }),
    kit.shell(body, index, 'same', SAME_TURN_CMD)] }));
  enter('A', 'branchRead', 'cat branch.txt');
  shell('branchCmd', BRANCH_CMD_CMD);
  create('A1', { ...A1, budget: 20000 });
  enter('A1', 'inner', 'cat inner.txt');
  ret('A1', SUMMARY_A1);
  ret('A', SUMMARY_A);
  create('C', { ...C, budget: 2000 });
  enter('C', 'big', 'cat big.txt');
  shell('afterC', 'echo after-C');
  add(() => ({ text: 'All surveyed.' }));

  let result;
  try {
    result = await runCodexSession({ dataDir, steps, workspace: ws, prompt: TASK, summarise: () => 'no compaction expected',
      contextdYaml: ['context_folding:', '  branch_creation_rate_limit: 60/minute'] });
  } finally {
    cleanup(ws);
  }
  const { run, double, state: s } = result;
  try {
    if (process.env.CONTEXTD_AGENT_DUMP_DIR) {
      writeFileSync(join(process.env.CONTEXTD_AGENT_DUMP_DIR, 'branch-view-codex.json'),
        JSON.stringify(double.requests.map(({ rawBody, ...r }) => r), null, 1));
    }
    const dump = () => `${describeRun(run)}\n--- session ---\n${s.log.join('\n')}\n--- double problems ---\n` +
      `${excerpt(JSON.stringify(double.problems), 3000)}\n--- contextd ---\n${excerpt(result.server.stderr().slice(-3000), 3000)}`;
    assert.ok(!run.timedOut && run.code === 0, dump());
    assert.equal(s.step, steps.length, `the session ran to its end\n${dump()}`);
    assert.deepEqual(run.proxyAttempts, []);
    assert.deepEqual(double.problems, [], `every request accepted (reasoning bound to its prefix, calls paired)\n${dump()}`);
    assert.deepEqual(double.dropped, [], `no reasoning item dropped behind a changed prefix\n${dump()}`);
    assert.equal(s.compactions.length, 0);
    const requests = double.responseRequests();
    const bodies = requests.map((r) => r.json);
    const ids = { A: s.vars.AId, A1: s.vars.A1Id, C: s.vars.CId };
    const at = (key) => s.calls[key].index;   // the request answered with that call
    console.log(`--- ids ${JSON.stringify(ids)}; calls at ${JSON.stringify(Object.fromEntries(Object.entries(s.calls).map(([k, v]) => [k, v.index])))}`);

    // The opening: everything Codex sent before the model's first turn (its first request's input).
    const opening = rawItems(requests[0].bodyText);
    assert.ok(opening.length > 0 && bodies[0].input.every((i) => i.type === 'message'), 'the first request is the opening');
    const showItems = (body) => body.input.map((i, k) => `${k}:${i.type}${i.role ? `/${i.role}` : ''}${i.call_id ? ` ${i.call_id}` : ''} ` +
      excerpt(i.type === 'message' ? itemText(i) : i.output !== undefined ? outputText(i) : i.arguments ?? '', 80).replace(/\n/g, ' ')).join('\n  ');
    const inView = (i, key, args, { present = [], absent = [] }) => {
      const label = `${key}, request ${i}`;
      const body = bodies[i];
      const where = `${label}: the model received\n  ${showItems(body)}`;
      assert.equal(JSON.stringify(body.tools), JSON.stringify(bodies[0].tools), `${label}: tools as sent`);
      assert.equal(body.instructions, bodies[0].instructions);
      assert.deepEqual(rawItems(requests[i].bodyText).slice(0, opening.length), opening, `${label}: the opening as sent\n${where}`);
      const open = body.input[opening.length];
      assert.ok(open?.type === 'message' && open.role === 'user' && itemText(open).startsWith(`${OPEN}${ids[key]}`),
        `${label}: one user message opens the branch\n${where}`);
      assert.ok(itemText(open).includes(args.prompt) && itemText(open).includes(args.description), itemText(open));
      assert.ok(!body.input.slice(opening.length + 1).some((it) => it.type === 'message' && itemText(it).startsWith(OPEN)), where);
      const all = JSON.stringify(body.input);
      for (const m of present) assert.ok(all.includes(m), `${label}: ${m} should reach the model\n${where}`);
      for (const m of absent) assert.ok(!all.includes(m), `${label}: ${m} must not reach the model\n${where}`);
      return open;
    };
    const inParent = (i, { present = [], absent = [] }) => {
      const body = bodies[i];
      const where = `parent, request ${i}: the model received\n  ${showItems(body)}`;
      assert.ok(!body.input.some((it) => it.type === 'message' && itemText(it).startsWith(OPEN)), `no branch view\n${where}`);
      const all = JSON.stringify(body.input);
      for (const m of present) assert.ok(all.includes(m), `${m} should reach the model\n${where}`);
      for (const m of absent) assert.ok(!all.includes(m), `${m} must not reach the model\n${where}`);
    };
    const range = (from, to) => Array.from({ length: Math.max(0, to - from + 1) }, (_, k) => from + k);

    // Before A: the parent as sent.
    for (const i of range(0, at('createA'))) inParent(i, {});
    assert.ok(JSON.stringify(bodies[at('createA')].input).includes(PARENT_MARKER));
    // A (outside A1): the opening, A's opening message (the command beside the create included),
    // A's work; never the parent's read.
    const aOwn = [...range(at('createA') + 1, at('createA1')), ...range(at('retA1') + 1, at('retA'))];
    const openA = inView(aOwn[0], 'A', A, { present: [SAME_TURN, TASK_MARK], absent: [PARENT_MARKER] });
    console.log(`--- A's opening message as the model read it\n${excerpt(itemText(openA), 1500)}`);
    assert.equal(bodies[aOwn[0]].input.length, opening.length + 1, 'nothing after the opening message yet');
    for (const i of aOwn.slice(1)) inView(i, 'A', A, { present: [SAME_TURN], absent: [PARENT_MARKER] });
    // Each request of A's view starts with the one before (and the double verified its reasoning).
    for (const i of range(at('createA') + 2, at('createA1'))) {
      assert.deepEqual(rawItems(requests[i].bodyText).slice(0, bodies[i - 1].input.length), rawItems(requests[i - 1].bodyText),
        `A's view at request ${i} grows from request ${i - 1}`);
    }
    inView(at('createA1'), 'A', A, { present: [BRANCH_MARKER, BRANCH_CMD] });
    // A1, nested: neither the parent's file nor A's own work.
    const a1 = range(at('createA1') + 1, at('retA1'));
    inView(a1[0], 'A1', A1, { absent: [PARENT_MARKER, BRANCH_MARKER, BRANCH_CMD, SAME_TURN, A.prompt] });
    assert.equal(bodies[a1[0]].input.length, opening.length + 1);
    inView(at('retA1'), 'A1', A1, { present: [INNER_MARKER], absent: [PARENT_MARKER, BRANCH_MARKER, BRANCH_CMD, SAME_TURN, A.prompt] });
    // A1 returned: A's view resumes with A1 folded, unchanged up to A1's create turn.
    const resumed = at('retA1') + 1;
    inView(resumed, 'A', A, { present: [BRANCH_MARKER, BRANCH_CMD, SUMMARY_A1, `[branch ${ids.A1} returned;`],
      absent: [PARENT_MARKER, INNER_MARKER] });
    const upToCreateA1 = rawItems(requests[at('createA1')].bodyText);
    const createA1Call = s.calls.createA1.call_id;
    const cut = upToCreateA1.length;
    assert.deepEqual(rawItems(requests[resumed].bodyText).slice(0, cut), upToCreateA1,
      'A\'s view is what it was when A1 was created');
    assert.ok(outputText(toolOutputFor(bodies[resumed], createA1Call)).includes(SUMMARY_A1));
    // A returned: the parent's history with A folded.
    for (const i of range(at('retA') + 1, at('createC'))) {
      inParent(i, { present: [PARENT_MARKER, SUMMARY_A, `[branch ${ids.A} returned;`], absent: [BRANCH_MARKER, BRANCH_CMD, INNER_MARKER, SUMMARY_A1] });
    }
    const parentBefore = rawItems(requests[at('createA')].bodyText);
    assert.deepEqual(rawItems(requests[at('retA') + 1].bodyText).slice(0, parentBefore.length), parentBefore,
      'the parent\'s history up to A\'s create turn is what it was');
    // C: its own view, then force-returned by the big read: the parent's history from then on.
    for (const i of range(at('createC') + 1, at('big'))) inView(i, 'C', C, { absent: [PARENT_MARKER, SUMMARY_A, BRANCH_MARKER] });
    for (const i of range(at('big') + 1, bodies.length - 1)) {
      inParent(i, { present: [PARENT_MARKER, SUMMARY_A, `[branch ${ids.C} force-returned (budget`], absent: [`${BIG_MARKER} line 500`] });
    }

    const views = [...aOwn, ...a1, ...range(at('createC') + 1, at('big'))].length;
    const metrics = await (await fetch(`${result.origin}/metrics`)).text();
    const isolated = metric(metrics, 'contextd_model_branch_view_requests_total', { view: 'isolated' });
    const spared = metric(metrics, 'contextd_model_branch_view_tokens_spared_total');
    console.log(`--- Codex: ${bodies.length} model requests (${s.searches} tool searches), ${views} in a branch view; ` +
      `metrics: isolated ${isolated}, tokens spared ${spared}\n` +
      metrics.split('\n').filter((l) => l.startsWith('contextd_model_branch_view')).join('\n'));
    assert.equal(isolated, views);
    assert.ok(spared > 0);
  } finally {
    await result.stop();
    cleanup(dataDir);
  }
});

test('Codex compacting while a branch is open: the compaction request summarises the parent\'s history, not the branch\'s view', { skip: codexSkip, timeout: 200000 }, async () => {
  // Codex replaces its history with what the model writes for its compaction request (tools: [],
  // its checkpoint prompt last): written from the branch's isolated view, that summary would drop
  // everything the parent did after its opening.
  const dataDir = tempDataDir();
  const ws = workspace('contextd-view-codex-compact-ws');
  const kLimit = 200000;
  let kit;
  let compaction = null;
  const steps = [
    ({ s }) => { kit = stepKit(s); return null; },
    ({ body, index }) => ({ calls: [kit.shell(body, index, 'parent', 'cat parent.txt')] }),
    ({ body, index }) => ({ calls: [kit.call(body, index, 'createA', 'branch_create', { ...A, budget: 30000 })] }),
    // Inside A: a usage past Codex's auto-compact limit, so it compacts before its next request.
    ({ body, index, s }) => {
      s.vars.AId = branchIdIn(viewOpeningText(body) ?? kit.take(body, 'createA', index));
      return { calls: [kit.shell(body, index, 'branchRead', 'cat branch.txt')], usage: { input_tokens: kLimit * 2, output_tokens: 10 } };
    },
    ({ body, index }) => ({ calls: [kit.shell(body, index, 'branchCmd', BRANCH_CMD_CMD)] }),
    () => ({ text: 'Surveyed.' }),
  ];
  let result;
  try {
    result = await runCodexSession({ dataDir, steps, workspace: ws, prompt: TASK, autoCompactLimit: kLimit,
      summarise: (s, body) => { compaction = body; return `Progress: branch ${s.vars.AId} is open; go on inside it.`; } });
  } finally {
    cleanup(ws);
  }
  const { run, double, state: s } = result;
  try {
    const dump = () => `${describeRun(run)}\n--- session ---\n${s.log.join('\n')}\n--- double problems ---\n` +
      `${excerpt(JSON.stringify(double.problems), 3000)}`;
    assert.ok(!run.timedOut && run.code === 0, dump());
    assert.equal(s.compactions.length, 1, `Codex compacted once\n${dump()}`);
    const items = compaction.input.map((i, k) => `${k}:${i.type}${i.role ? `/${i.role}` : ''} ${excerpt(i.type === 'message' ? itemText(i)
      : i.output !== undefined ? outputText(i) : i.arguments ?? '', 80).replace(/\n/g, ' ')}`).join('\n  ');
    console.log(`--- Codex's compaction request as the model received it\n  ${items}`);
    assert.equal(viewOpeningText(compaction), null, `the compaction request was sent as branch ${s.vars.AId}'s isolated view:\n  ${items}`);
    assert.ok(JSON.stringify(compaction.input).includes(PARENT_MARKER), 'the parent\'s work reaches the compaction');
  } finally {
    await result.stop();
    cleanup(dataDir);
  }
});
