// Auto-fold as the pinned Claude Code's model receives it (ANTHROPIC_BASE_URL -> contextd -> the
// scripted double): an agent that never branches reads one file after another. With a model that
// does not think, the Read results older than the last `keep` tool uses reach the model as handles
// once the conversation passes the trigger, every tool_use still answered, every request the
// previous one plus its tail except at a fold step; the model calls trail_unfold with a handle's
// arguments and reads the file back. With a thinking model (the double binds each thinking block
// to its prefix, as Claude does) nothing before a thinking block may change: auto-fold holds back,
// says why in /metrics, and the double refuses nothing.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble } from './lib/anthropic_double.mjs';
import { runClaude, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { excerpt, toolExchanges } from './lib/transcript.mjs';
import { BINARY, startHttpServer, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);
const FILES = 6;
const AUTO_FOLD = { enabled: true, trigger_tokens: 6000, keep: 2, min_result_tokens: 300, clear_at_least: 4500 };
const HANDLE = /^\[contextd: ([\d,]+) tokens of Read (\S+) folded; trail_unfold (\{.*\})\]$/;

function workspace() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-af-ws-')));
  for (let f = 0; f < FILES; ++f) {
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

async function run({ thinking, script, ws }) {
  const dataDir = tempDataDir();
  const double = await startAnthropicDouble({ thinking, script });
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['model_gateway:', '  anthropic:', `    base_url: ${double.url}`, '  auto_fold:',
    ...Object.entries(AUTO_FOLD).map(([k, v]) => `    ${k}: ${v}`), ''].join('\n'));
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
  const ws = workspace();
  let handleArgs = null;
  const script = [
    ...Array.from({ length: FILES }, (_, f) => ({ tools: [{ name: 'Read', input: { file_path: join(ws, `file${f}.py`) } }] })),
    // The model acts on a handle: it calls trail_unfold with the arguments the handle names.
    (body) => {
      const handle = results(body).map((r) => HANDLE.exec(r.text)).find(Boolean);
      handleArgs = handle ? JSON.parse(handle[3]) : { scope_id: 'none' };
      return { tools: [{ name: 'mcp__contextd__trail_unfold', input: handleArgs }] };
    },
    { text: 'All files read.' },
  ];
  const r = await run({ thinking: false, script, ws });
  try {
    assert.equal(r.result.code, 0, failWith(r));
    assert.deepEqual(r.double.errors, []);
    const bodies = r.double.mainRequests();
    assert.equal(bodies.length, FILES + 2, failWith(r));

    // The last request: the first results are handles; those of the last `keep` tool uses (the
    // last Read and trail_unfold) are whole.
    const last = results(bodies.at(-1));
    const reads = last.slice(0, FILES);
    const folded = reads.filter((x) => HANDLE.test(x.text));
    console.log(`--- results as the model read them last\n${last.map((x) => excerpt(x.text, 160)).join('\n')}`);
    assert.ok(folded.length >= 2, `${folded.length} results folded`);
    for (const x of last.slice(-AUTO_FOLD.keep)) assert.ok(!HANDLE.test(x.text), x.text);
    assert.match(reads.at(-1).text, /def view_5_0/);
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
    assert.ok(steps >= 1 && steps < FILES / 2, `${steps} fold steps`);

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

test('Claude Code with auto-fold and a thinking model: nothing before a thinking block changes', { skip: missing ?? false, timeout: 240000 }, async () => {
  const ws = workspace();
  const script = [
    ...Array.from({ length: FILES }, (_, f) => ({ tools: [{ name: 'Read', input: { file_path: join(ws, `file${f}.py`) } }] })),
    { text: 'All files read.' },
  ];
  const r = await run({ thinking: true, script, ws });
  try {
    assert.equal(r.result.code, 0, failWith(r));
    assert.deepEqual(r.double.errors, [], 'a thinking block was replayed after a changed prefix');
    const bodies = r.double.mainRequests();
    assert.equal(bodies.length, FILES + 1, failWith(r));
    for (const x of results(bodies.at(-1))) assert.ok(!HANDLE.test(x.text), x.text);
    assert.match(r.metrics, /contextd_model_auto_fold_steps_total\{api="anthropic",outcome="thinking"\} [1-9]/);
  } finally {
    await r.double.close();
    await r.server.stop();
    cleanup(r.dataDir);
    cleanup(ws);
  }
});
