// Auto-fold as the pinned Claude Code's model receives it (ANTHROPIC_BASE_URL -> contextd -> the
// scripted double), for an agent that never branches.
// - A model that does not think: Claude Code reads one file after another; the Read results older
//   than the last `keep` tool uses reach the model as handles once the conversation passes the
//   trigger and the step pays by the cache bill (the model reads on until it does), every
//   tool_use still answered, every request the previous one plus its tail except at
//   a fold step; the model calls trail_unfold with a handle's arguments and reads the file back.
// - A model that thinks on every turn (the double binds each thinking block to its prefix and to
//   the block before it, as Claude does; decision 0036, mode `remove`): a session of three tasks
//   (user turns, with Claude Code's mid-conversation system messages), each a tool loop of Reads
//   and an answer; a recorder in front of contextd keeps what Claude Code sent. Inside a tool loop
//   past the trigger auto-fold waits (outcome tool_loop); at the request bringing the next task it
//   folds the stale results into handles and removes the thinking after its fold point, once, and
//   every later request is the previous one plus its tail. The double refuses, drops and degrades
//   nothing; a handle unfolds through trail_unfold; and the session costs less, by the benchmark's
//   prompt-cache bill (lib/bill.mjs), than the same session through contextd with auto-fold off.
//   Both costs and their ratio are printed.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { runClaude, startClaudeStream, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { excerpt, toolExchanges } from './lib/transcript.mjs';
import { canonical } from './lib/messages.mjs';
import { metric } from './lib/codex_session.mjs';
import { billSession, describeBill, loadO200k } from './lib/bill.mjs';
import { startRecorder } from './lib/long_session.mjs';
import { BINARY, startHttpServer, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);
const FILES = 6;
// Reads the first test may add while it waits for the step: a step is taken when the cache bill
// says it pays (decision 0036), which with files this small is a few reads past the trigger.
const MORE_FILES = 8;
const AUTO_FOLD = { enabled: true, trigger_tokens: 6000, keep: 2, min_result_tokens: 300, clear_at_least: 4500 };
const HANDLE = /^\[contextd: ([\d,]+) tokens of Read (\S+) folded; trail_unfold (\{.*\})\]$/;

// `files` Python files of about 2,500 tokens each (as Read shows them, line numbers included).
function workspace(files = FILES) {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-af-ws-')));
  for (let f = 0; f < files; ++f) {
    writeFileSync(join(ws, `file${f}.py`), Array.from({ length: 120 },
      (_, n) => `def view_${f}_${n}(request): return render(request, "page_${f}_${n}.html")`).join('\n'));
  }
  return ws;
}

// The text of a tool_result block's content (a string or text parts).
function resultText(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('\n');
}

// Every tool_result of `body`, in order: {id, text}.
function results(body) {
  const out = [];
  for (const m of body.messages) {
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b.type === 'tool_result') out.push({ id: b.tool_use_id, text: resultText(b.content) });
    }
  }
  return out;
}

function withoutMarkers(messages) {
  return messages.map((m) => {
    const copy = structuredClone(m);
    for (const b of Array.isArray(copy.content) ? copy.content : []) delete b.cache_control;
    return copy;
  });
}

// contextd's config in `dataDir`: the model gateway forwarding to `modelUrl`, `autoFold` as its
// model_gateway.auto_fold section. Returns its path.
function writeConfig(dataDir, modelUrl, autoFold) {
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['model_gateway:', '  anthropic:', `    base_url: ${modelUrl}`, '  auto_fold:',
    ...Object.entries(autoFold).map(([k, v]) => `    ${k}: ${v}`), ''].join('\n'));
  return config;
}

async function run({ thinking, script, ws }) {
  const dataDir = tempDataDir();
  const double = await startAnthropicDouble({ thinking, script });
  const config = writeConfig(dataDir, double.url, AUTO_FOLD);
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  const origin = new URL(server.url).origin;
  const result = await runClaude({
    prompt: 'Read every file.', modelUrl: origin, cwd: ws, timeoutMs: 150000,
    mcpConfig: writeMcpConfig(ws, { url: server.url }), allowedTools: ['Read', 'mcp__contextd'],
    // The model requests' project is the checkout, as the MCP session's (its root) is: the
    // trail events the gateway keeps are then the session's to unfold (decision 0022).
    env: { ANTHROPIC_CUSTOM_HEADERS: `X-Contextd-Project: ${ws}` },
  });
  const metrics = await (await fetch(`${origin}/metrics`)).text();
  return { double, server, dataDir, result, metrics };
}

function failWith(r) {
  return `claude exited ${r.result.code}\nstdout: ${excerpt(r.result.stdout, 1500)}\nstderr: ${excerpt(r.result.stderr, 1500)}\n` +
    `double errors: ${r.double.errors.join('\n')}`;
}

test('Claude Code with auto-fold: stale Read results reach the model as handles, the prefix holds between steps, trail_unfold reads one back', { skip: missing ?? false, timeout: 240000 }, async () => {
  const ws = workspace(FILES + MORE_FILES);
  let handleArgs = null;
  let read = FILES;
  const readFile = (f) => ({ tools: [{ name: 'Read', input: { file_path: join(ws, `file${f}.py`) } }] });
  const script = [
    ...Array.from({ length: FILES }, (_, f) => readFile(f)),
    // The model acts on the first handle it sees: it calls trail_unfold with the arguments the
    // handle names; until one appears it reads on; after the unfold it answers.
    ...Array.from({ length: MORE_FILES + 1 }, () => (body) => {
      if (handleArgs) return { text: 'All files read.' };
      const handle = results(body).map((r) => HANDLE.exec(r.text)).find(Boolean);
      if (!handle) return read < FILES + MORE_FILES ? readFile(read++) : { text: 'No handle came.' };
      handleArgs = JSON.parse(handle[3]);
      return { tools: [{ name: 'mcp__contextd__trail_unfold', input: handleArgs }] };
    }),
  ];
  const r = await run({ thinking: false, script, ws });
  try {
    assert.equal(r.result.code, 0, failWith(r));
    assert.deepEqual(r.double.errors, []);
    assertThinkingKept(r.double, 'no thinking block dropped, none missing from a tool loop');
    const bodies = r.double.mainRequests();
    assert.equal(bodies.length, read + 2, failWith(r));

    // The last request: the first results are handles; those of the last `keep` tool uses (the
    // last Read and trail_unfold) are whole.
    const last = results(bodies.at(-1));
    const reads = last.slice(0, read);
    const folded = reads.filter((x) => HANDLE.test(x.text));
    console.log(`--- results as the model read them last\n${last.map((x) => excerpt(x.text, 160)).join('\n')}`);
    assert.ok(folded.length >= 2, `${folded.length} results folded`);
    for (const x of last.slice(-AUTO_FOLD.keep)) assert.ok(!HANDLE.test(x.text), x.text);
    assert.match(reads.at(-1).text, new RegExp(`def view_${read - 1}_0`));
    assert.match(HANDLE.exec(folded[0].text)[2], /file0\.py/);
    assert.ok(handleArgs?.scope_id?.startsWith('ses_'), JSON.stringify(handleArgs));

    // Each request is the previous one plus its tail, except at a fold step, where the first
    // difference is a result that became a handle.
    let steps = 0;
    for (let k = 1; k < bodies.length; ++k) {
      const before = withoutMarkers(bodies[k - 1].messages);
      const after = withoutMarkers(bodies[k].messages);
      let first = 0;
      while (first < before.length && JSON.stringify(before[first]) === JSON.stringify(after[first])) ++first;
      if (first === before.length) continue;
      ++steps;
      const changed = results({ messages: [after[first]] });
      assert.ok(changed.some((x) => HANDLE.test(x.text)), `request ${k} changed message ${first}: ${excerpt(JSON.stringify(after[first]), 300)}`);
      // A step folds at least clear_at_least tokens at once (one file is about half of it).
      let gained = 0;
      for (let j = first; j < before.length; ++j) {
        for (const x of results({ messages: [after[j]] })) {
          const h = HANDLE.exec(x.text);
          const was = results({ messages: [before[j]] }).find((y) => y.id === x.id);
          if (h && was && !HANDLE.test(was.text)) gained += Number(h[1].replaceAll(',', ''));
        }
      }
      assert.ok(gained >= AUTO_FOLD.clear_at_least, `a step folded only ${gained} tokens`);
    }
    assert.ok(steps >= 1 && steps < read / 2, `${steps} fold steps`);

    // trail_unfold gave the model the file back (what Claude Code shows it of the tool result).
    const unfolded = toolExchanges(bodies.at(-1)).find((e) => e.name === 'mcp__contextd__trail_unfold');
    assert.ok(unfolded, 'trail_unfold was called');
    assert.match(unfolded.result, /def view_0_119\(request\)/, excerpt(unfolded.result, 600));
    assert.match(r.metrics, /contextd_model_auto_folds_total\{api="anthropic"\} [1-9]/);
  } finally {
    await r.double.close();
    await r.server.stop();
    cleanup(r.dataDir);
    cleanup(ws);
  }
});

// ---------------------------------------------------------------------------------------------
// A model that thinks on every turn: three tasks, each a tool loop of Reads and an answer.

const PER_TASK = 8;
const span = (t) => `file${t * PER_TASK}.py to file${t * PER_TASK + PER_TASK - 1}.py`;
const TASKS = [`Read ${span(0)} and sum them up.`, `Now ${span(1)}.`, `Now ${span(2)}, and look again at the first file you read.`];
// The trigger is passed inside the first task's tool loop. keep 1: a step then leaves little behind
// its fold point to write to the cache again, and the default payback estimate (as many requests to
// come as model turns so far) takes a step at each new task; 8 Reads a task give the steps enough
// requests to pay back in (keep 2 or 3, or 4 to 6 Reads a task, still fold but save less: the
// trail_unfold turn and its ~3,000-token answer cost the folded session about as much again).
const AUTO_FOLD_THINKING = { enabled: true, trigger_tokens: 6000, keep: 1, min_result_tokens: 300, clear_at_least: 4500, thinking: 'remove' };
const THINKING_TYPES = new Set(['thinking', 'redacted_thinking']);

// The main-loop turns of the three tasks; with `unfold`, the third one opens with a trail_unfold
// call on the first handle of the request (its arguments put in `seen.handleArgs`).
function thinkingScript(ws, { unfold, seen }) {
  const read = (f) => ({ tools: [{ name: 'Read', input: { file_path: join(ws, `file${f}.py`) } }] });
  const script = [];
  TASKS.forEach((_, t) => {
    if (unfold && t === TASKS.length - 1) {
      script.push((body) => {
        const handle = results(body).map((x) => HANDLE.exec(x.text)).find(Boolean);
        seen.handleArgs = handle ? JSON.parse(handle[3]) : { scope_id: 'none' };
        seen.handlePath = handle?.[2] ?? null;
        return { tools: [{ name: 'mcp__contextd__trail_unfold', input: seen.handleArgs }] };
      });
    }
    for (let i = 0; i < PER_TASK; ++i) script.push(read(t * PER_TASK + i));
    script.push({ text: `Task ${t + 1} done.` });
  });
  return script;
}

// Runs the three tasks in one Claude Code session (stream-json, a task per user turn) through a
// recorder (what Claude Code sent) and a contextd whose auto_fold section is `autoFold`, against a
// thinking double playing `script`. `clientBodies()`: Claude Code's main-loop requests as it sent
// them, one per main request the double received.
async function runTasks({ autoFold, script, ws }) {
  const dataDir = tempDataDir();
  const double = await startAnthropicDouble({ script });
  const server = await startHttpServer({ dataDir, args: ['--config', writeConfig(dataDir, double.url, autoFold)] });
  const origin = new URL(server.url).origin;
  const recorder = await startRecorder(origin);
  const isMain = (r) => r.method === 'POST' && r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') &&
    Array.isArray(r.json?.tools) && r.json.tools.length > 0;
  const clientBodies = () => recorder.requests.filter(isMain).map((r) => r.json);
  const session = startClaudeStream({
    prompt: TASKS[0], followUps: TASKS.slice(1), modelUrl: recorder.url, cwd: ws, timeoutMs: 150000,
    // In the data dir: the two sessions share the workspace, each with its own contextd.
    mcpConfig: writeMcpConfig(dataDir, { url: server.url }), allowedTools: ['Read', 'mcp__contextd'],
    // Claude Code's mid-conversation system messages too: the new user turn a step waits for is
    // then followed by one.
    env: { ANTHROPIC_CUSTOM_HEADERS: `X-Contextd-Project: ${ws}`, CLAUDE_CODE_FORCE_MID_CONVERSATION_SYSTEM: '1' },
  });
  const result = await session.done;
  const metrics = await (await fetch(`${origin}/metrics`)).text();
  const failWith = () => `claude exited ${result.code} (${result.signal ?? 'no signal'})\nstderr: ${excerpt(result.stderr, 1500)}\n` +
    `double refused: ${JSON.stringify(double.refused, null, 1)}\nlast events: ${excerpt(JSON.stringify(result.events.slice(-3)), 1500)}\n` +
    `contextd: ${excerpt(server.stderr().slice(-2000), 2000)}`;
  return { double, server, recorder, clientBodies, dataDir, result, metrics, failWith };
}

// Whether a request ends with a new user turn: its last message that is not a mid-conversation
// system message is a user message without tool results.
function endsWithUserTurn(body) {
  const last = body.messages.findLast((m) => m.role !== 'system');
  return last?.role === 'user' && !(Array.isArray(last.content) && last.content.some((b) => b.type === 'tool_result'));
}

// The thinking blocks of messages [from, to) of a request: their signatures (the double's, unique).
function thinkingOf(body, from = 0, to = body.messages.length) {
  return body.messages.slice(from, to).flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((b) => THINKING_TYPES.has(b.type)).map((b) => b.signature ?? b.data);
}

// The requests that are not the previous one plus its tail (as the provider reads a prefix:
// cache_control markers aside, a string content as its text block): [{k, first (message)}].
function prefixBreaks(bodies) {
  const out = [];
  for (let k = 1; k < bodies.length; ++k) {
    const before = bodies[k - 1].messages.map(canonical);
    const after = bodies[k].messages.map(canonical);
    let first = 0;
    while (first < before.length && before[first] === after[first]) ++first;
    if (first < before.length) out.push({ k, first });
  }
  return out;
}

// Checks the fold steps of the session the model received (`bodies`; `client`: the same requests
// as Claude Code sent them): each at a new user turn, its first change a result become a handle,
// every stale Read result a handle, the thinking before the fold point as it was and none after
// it; thinking removed at the steps only, and never sent again. Returns {steps, removed (the
// thinking blocks Claude Code sent that the model never received again)}.
function checkSteps(bodies, client) {
  const steps = prefixBreaks(bodies);
  const removed = new Set();
  const stepAt = new Map(steps.map((s) => [s.k, s.first]));
  for (let k = 0; k < bodies.length; ++k) {
    const body = bodies[k];
    const sent = new Set(thinkingOf(body));
    const gone = thinkingOf(client[k]).filter((s) => !sent.has(s));
    assert.deepEqual(thinkingOf(body).filter((s) => removed.has(s)), [], `request ${k} sent a thinking block a step removed`);
    const fresh = gone.filter((s) => !removed.has(s));
    if (!stepAt.has(k)) {
      assert.deepEqual(fresh, [], `request ${k} removed thinking outside a fold step`);
      continue;
    }
    const first = stepAt.get(k);
    const before = bodies[k - 1];
    const at = `request ${k} (a fold step from message ${first})`;
    assert.ok(fresh.length > 0, `${at} removed no thinking block`);
    // The thinking before the fold point as Claude Code sent it, less what earlier steps removed.
    const earlier = thinkingOf(client[k], 0, first).filter((s) => !removed.has(s));
    for (const s of fresh) removed.add(s);
    assert.ok(endsWithUserTurn(body), `${at}: a step only at a new user turn; it ends with ${excerpt(JSON.stringify(body.messages.at(-1)), 300)}`);
    const was = new Map(results({ messages: [before.messages[first]] }).map((x) => [x.id, x.text]));
    const folded = results({ messages: [body.messages[first]] }).filter((x) => HANDLE.test(x.text) && !HANDLE.test(was.get(x.id) ?? ''));
    assert.ok(folded.length > 0, `${at}: its first change is a result become a handle: ${excerpt(JSON.stringify(body.messages[first]), 300)}`);
    // The stale Read results (answers to calls older than the last `keep`) are handles.
    const exchanges = toolExchanges(body);
    const kept = new Set(exchanges.slice(-AUTO_FOLD_THINKING.keep).map((e) => e.id));
    for (const e of exchanges.filter((x) => x.name === 'Read' && !kept.has(x.id))) {
      assert.match(e.result, HANDLE, `${at}: the stale Read of ${e.input.file_path} is a handle`);
    }
    // The thinking before the fold point stays (the messages before `first` are unchanged), none
    // after it.
    assert.deepEqual(thinkingOf(body, 0, first), earlier, `${at}: the thinking before the fold point`);
    assert.deepEqual(thinkingOf(body, first), [], `${at}: no thinking block after the fold point`);
  }
  return { steps, removed: removed.size };
}

test('with the real Claude Code and a double that thinks on every turn: a long session past the trigger folds stale results into handles, every request is accepted, the handles unfold through trail_unfold, and the session costs less than the same session through contextd with auto-fold off (the caching double\'s bill)', { skip: missing ?? false, timeout: 360000 }, async () => {
  const ws = workspace(TASKS.length * PER_TASK);
  const seen = {};
  const runs = [];
  const tokens = loadO200k();
  try {
    // Auto-fold on (thinking: remove).
    const on = await runTasks({ autoFold: AUTO_FOLD_THINKING, script: thinkingScript(ws, { unfold: true, seen }), ws });
    runs.push(on);
    assert.equal(on.result.code, 0, on.failWith());
    assert.deepEqual(on.double.refused, [], 'every request accepted');
    assertThinkingKept(on.double, 'no thinking block dropped, none missing from a tool loop');
    const bodies = on.double.mainRequests();
    const client = on.clientBodies();
    const turns = TASKS.length * (PER_TASK + 1) + 1;
    assert.equal(bodies.length, turns, on.failWith());
    assert.equal(client.length, turns);
    assert.ok(bodies.at(-1).messages.some((m) => m.role === 'system'), 'Claude Code sent its mid-conversation system messages');
    assert.ok(bodies.every((b) => b.thinking?.type === 'adaptive' || b.thinking?.type === 'enabled'),
      `Claude Code asked for thinking: ${JSON.stringify(bodies.map((b) => b.thinking?.type))}`);

    // The steps, and between them each request the previous one plus its tail.
    const { steps, removed } = checkSteps(bodies, client);
    const last = results(bodies.at(-1));
    console.log(`--- fold steps at requests ${JSON.stringify(steps)} of ${bodies.length}; ${removed} thinking blocks removed; ` +
      `the last request holds ${last.filter((x) => HANDLE.test(x.text)).length} handles and ${last.length} tool results`);
    assert.ok(steps.length >= 1, 'at least one fold step');
    assert.ok(thinkingOf(bodies[steps[0].k], 0, steps[0].first).length >= 1, 'the thinking before the first fold point stays');

    // The model unfolds a handle and reads the file back.
    assert.ok(seen.handleArgs?.scope_id?.startsWith('ses_'), `a handle reached the third task: ${JSON.stringify(seen.handleArgs)}`);
    const unfolded = toolExchanges(bodies.at(-1)).find((e) => e.name === 'mcp__contextd__trail_unfold');
    assert.ok(unfolded, 'trail_unfold was called');
    assert.deepEqual(unfolded.input, seen.handleArgs);
    const f = /file(\d+)\.py$/.exec(seen.handlePath ?? '')?.[1];
    assert.ok(f !== undefined, `the handle names a file: ${seen.handlePath}`);
    assert.match(unfolded.result, new RegExp(`def view_${f}_119\\(request\\)`), excerpt(unfolded.result, 600));

    // /metrics: a folded outcome per step, tool_loop for the requests of a tool loop past the trigger.
    const outcome = (name) => metric(on.metrics, 'contextd_model_auto_fold_steps_total', { api: 'anthropic', outcome: name });
    const outcomes = on.metrics.split('\n').filter((l) => l.startsWith('contextd_model_auto_fold')).join('\n');
    console.log(`--- auto-fold metrics\n${outcomes}`);
    assert.equal(outcome('folded'), steps.length, outcomes);
    assert.ok(outcome('tool_loop') >= 1, `tool loops past the trigger wait: ${outcomes}`);
    assert.equal(metric(on.metrics, 'contextd_model_auto_fold_thinking_removed_total', { api: 'anthropic' }), removed, outcomes);
    assert.ok(removed >= 1, 'thinking blocks removed');

    // The same session with auto-fold off: nothing folded, nothing to unfold.
    const off = await runTasks({ autoFold: { ...AUTO_FOLD_THINKING, enabled: false }, script: thinkingScript(ws, { unfold: false, seen: {} }), ws });
    runs.push(off);
    assert.equal(off.result.code, 0, off.failWith());
    assert.deepEqual(off.double.refused, [], 'every request accepted (auto-fold off)');
    assertThinkingKept(off.double, 'auto-fold off: no thinking block dropped, none missing from a tool loop');
    const offBodies = off.double.mainRequests();
    assert.equal(offBodies.length, turns - 1, off.failWith());
    assert.deepEqual(prefixBreaks(offBodies), [], 'auto-fold off: each request the previous one plus its tail');
    assert.ok(!JSON.stringify(offBodies.at(-1)).includes('[contextd: '), 'auto-fold off: no handle');
    assert.equal(metric(off.metrics, 'contextd_model_auto_fold_steps_total'), 0, 'auto-fold off: no step planned');

    // The bill: the benchmark's prompt-cache model over what each model received.
    const billOn = billSession(bodies, { count: tokens.count });
    const billOff = billSession(offBodies, { count: tokens.count });
    const ratio = billOn.cost / billOff.cost;
    console.log(`--- ${describeBill('auto-fold on (thinking: remove)', billOn)}\n--- ${describeBill('auto-fold off', billOff)}\n` +
      `--- cost ratio on/off: ${ratio.toFixed(3)}`);
    assert.ok(billOn.cost < billOff.cost, `the folded session costs ${billOn.cost.toFixed(0)}, the unfolded ${billOff.cost.toFixed(0)}`);
  } finally {
    tokens.enc.free();
    for (const r of runs) {
      await r.recorder.close();
      await r.double.close();
      await r.server.stop();
      cleanup(r.dataDir);
    }
    cleanup(ws);
  }
});
