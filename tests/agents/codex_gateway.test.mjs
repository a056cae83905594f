// The Codex CLI with contextd as its model endpoint too: `contextd connect codex` writes the
// throwaway CODEX_HOME's config.toml (model_provider = "contextd", base_url = contextd's /v1,
// contextd as the MCP server), contextd's model gateway forwards to the scripted Responses API
// double, and the real `codex exec` runs a branch: branch_create, two shell commands inside it,
// branch_return with a summary, a final answer. We assert on what the double recorded (what the
// model received): every request came through contextd, every call_id has its output, reasoning
// items were replayed unchanged (the double binds them by HMAC and answers 400 otherwise), and,
// after branch_return, the branch is folded: the commands' outputs are gone and branch_create's
// function_call_output carries the summary.
//
// Run: CONTEXTD_BINARY=build/debug/src/cli/contextd node --test tests/agents/codex_gateway.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startHttpServer, cleanup, tempDataDir, BINARY } from '../e2e/harness.mjs';
import { startResponsesDouble, toolOutputFor, outputText } from './lib/responses_double.mjs';
import { codexAvailable, CODEX_BINARY, runCodexExec, describeRun, findTool, kApiKey } from './lib/codex.mjs';

const skip = !codexAvailable() ? `the Codex CLI is not installed at ${CODEX_BINARY} (run scripts/install-deps.sh)`
  : !existsSync(BINARY) ? `contextd is not built at ${BINARY}` : false;

const kSecret = 'periwinkle-42';
const kNotes = `The secret word is ${kSecret}.`;
// Printed by the second command inside the branch; only its output contains it (the command
// computes it), so it can only reach the model as that output.
const kMarker = 'branch-only-42-marker';
const kSummary = `notes.txt says the secret word is ${kSecret}`;
const kFinal = `The notes say the secret word is ${kSecret}.`;

function excerpt(s, n = 1200) {
  const text = typeof s === 'string' ? s : JSON.stringify(s);
  return text.length > n ? `${text.slice(0, n)}… (${text.length} chars)` : text;
}

// The model's side, one phase per request, deciding from what the request shows.
function scenario() {
  const state = { phase: 'discover', calls: {}, outputs: {}, branchId: null, log: [], finalIndex: null };
  const step = ({ body, index }) => {
    state.log.push(`turn ${index}: ${state.phase}`);
    const call = (key, spec) => {
      const call_id = `call_${key}_${index}`;
      state.calls[key] = call_id;
      return { call_id, ...spec };
    };
    const take = (key) => {
      const item = toolOutputFor(body, state.calls[key]);
      state.outputs[key] = { item, text: outputText(item), requestIndex: index };
      return state.outputs[key].text;
    };
    switch (state.phase) {
      case 'discover': {
        state.phase = 'create';
        if (findTool(body, 'branch_create')) return step({ body, index });
        state.searched = true;
        return { calls: [call('search', { type: 'tool_search', arguments: { query: 'branch create return', limit: 8 } })] };
      }
      case 'create': {
        const create = findTool(body, 'branch_create');
        assert.ok(create, 'branch_create is offered');
        state.phase = 'shell1';
        return { calls: [call('create', { name: create.name, namespace: create.namespace, arguments: {
          description: 'read the notes file', prompt: 'cat notes.txt and report the secret word', budget: 4000 } })] };
      }
      case 'shell1': {
        state.branchId = take('create').match(/br_[0-9A-Za-z]+/)?.[0] ?? null;
        const exec = findTool(body, 'exec_command');
        assert.ok(exec, 'Codex offers exec_command');
        state.phase = 'shell2';
        return { calls: [call('shell1', { name: exec.name, namespace: exec.namespace, arguments: { cmd: 'cat notes.txt' } })] };
      }
      case 'shell2': {
        take('shell1');
        const exec = findTool(body, 'exec_command');
        state.phase = 'return';
        return { calls: [call('shell2', { name: exec.name, namespace: exec.namespace,
          arguments: { cmd: 'echo "branch-only-$((6*7))-marker"' } })] };
      }
      case 'return': {
        take('shell2');
        const ret = findTool(body, 'branch_return');
        state.phase = 'final';
        return { calls: [call('return', { name: ret.name, namespace: ret.namespace, arguments: {
          branch_id: state.branchId ?? 'br_unknown', message: kSummary } })] };
      }
      case 'final': {
        // Whatever the fold did to branch_return's own pair, this is the request after it.
        state.finalIndex = index;
        state.phase = 'done';
        return { text: kFinal };
      }
      default:
        return { text: 'unexpected extra request' };
    }
  };
  return { state, script: Array.from({ length: 9 }, () => step) };
}

function metric(text, name, labels) {
  let sum = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const [head, value] = line.split(/\s+/);
    if (Object.entries(labels).every(([k, v]) => head.includes(`${k}="${v}"`))) sum = (sum ?? 0) + Number(value);
  }
  return sum;
}

// The call items of a request's input and the ids they are answered by.
function callsAndOutputs(input) {
  const calls = input.filter((i) => /_call$/.test(i.type ?? '') && i.call_id);
  const outputs = new Set(input.filter((i) => /_call_output$|_output$/.test(i.type ?? '') && i.call_id).map((i) => i.call_id));
  return { calls, outputs };
}

test('codex exec through contextd connect codex: model requests via contextd /v1, the branch folds after branch_return', { skip, timeout: 90000 }, async () => {
  const dataDir = tempDataDir();
  const { state, script } = scenario();
  const double = await startResponsesDouble({ script });
  const config = join(dataDir, 'contextd.yaml');
  // What this test checks inside the branch is the parent's history as sent (`branch_view:
  // inherited`, contextd before issue 33); the isolated view, the default, is branch_view.test.mjs's.
  writeFileSync(config, ['context_folding:', '  branch_view: inherited',
    'model_gateway:', '  openai:', `    base_url: ${double.url}`, ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  const origin = new URL(server.url).origin;
  const workspace = mkdtempSync(join(tmpdir(), 'contextd-codex-gw-ws-'));
  writeFileSync(join(workspace, 'notes.txt'), `${kNotes}\n`);
  let run;
  let connectOut = '';
  try {
    run = await runCodexExec({
      prompt: 'Read notes.txt inside a contextd branch and tell me the secret word.',
      // The harness's own provider points nowhere: only the provider connect adds can answer.
      modelUrl: 'http://127.0.0.1:9/v1', mcp: null, workspace, timeoutMs: 60000,
      env: { OPENAI_API_KEY: kApiKey },
      prepare: ({ home, codexHome }) => {
        connectOut = execFileSync(resolve(BINARY), ['connect', 'codex', '--url', origin, '--data-dir', dataDir],
          { encoding: 'utf8', timeout: 20000, env: { ...process.env, HOME: home, CODEX_HOME: codexHome } });
      },
    });
  } finally {
    cleanup(workspace);
  }
  try {
    const responses = double.responseRequests();
    if (process.env.CONTEXTD_AGENT_DUMP_DIR) {
      writeFileSync(join(process.env.CONTEXTD_AGENT_DUMP_DIR, 'codex-gateway-requests.json'),
        JSON.stringify(double.requests.map(({ rawBody, ...r }) => r), null, 1));
    }
    const dump = () => `${describeRun(run)}\n--- connect ---\n${connectOut}\n--- config ---\n${run.config}\n` +
      `--- scenario ---\n${state.log.join('\n')}\n--- requests ---\n` +
      `${double.requests.map((r) => `${r.method} ${r.url} input=${r.json?.input?.length}`).join('\n')}\n` +
      `--- double problems ---\n${excerpt(double.problems, 3000)}\n--- contextd ---\n${excerpt(server.stderr(), 2000)}`;
    console.log(`[codex gateway] ${Math.round(run.ms)} ms; connect said:\n${connectOut}`);

    // connect wrote the provider and the MCP server, and Codex ran the script to its end with them.
    assert.match(run.config, /^model_provider = "contextd"$/m, dump());
    assert.ok(run.config.includes(`base_url = "${origin}/v1"`), dump());
    assert.ok(run.config.includes(`url = "${origin}/mcp"`), dump());
    assert.ok(!run.timedOut && run.code === 0, dump());
    assert.equal(state.phase, 'done', `the script ran to its end\n${dump()}`);
    assert.ok(run.stdout.includes(kFinal), `the final answer is printed\n${dump()}`);
    assert.deepEqual(run.proxyAttempts, [], 'Codex tried to reach the network');

    // Every request arrived through contextd: Codex knows no other live model URL, the double got
    // only POST /v1/responses, and contextd's gateway counted each one.
    assert.deepEqual(double.requests.map((r) => `${r.method} ${r.path}`),
      responses.map(() => 'POST /v1/responses'), dump());
    assert.equal(responses.length, double.turns.length);
    const metrics = await (await fetch(`${origin}/metrics`)).text();
    const counted = metric(metrics, 'contextd_model_requests_total', {});
    assert.equal(counted, responses.length, `contextd counted ${counted} model requests:\n` +
      metrics.split('\n').filter((l) => l.startsWith('contextd_model_requests_total')).join('\n'));
    for (const r of responses) {
      assert.equal(r.headers.authorization, `Bearer ${kApiKey}`, 'the key from OPENAI_API_KEY is passed on');
    }

    // Every call the model sees has its output, in every request.
    for (const [i, req] of responses.entries()) {
      const { calls, outputs } = callsAndOutputs(req.json.input ?? []);
      for (const c of calls) {
        assert.ok(outputs.has(c.call_id), `request ${i}: ${c.type} ${c.call_id} (${c.name ?? ''}) has no output`);
      }
    }
    // No replayed reasoning item was refused: each arrived bound to the prefix it was made for.
    assert.deepEqual(double.problems, [], dump());
    assert.deepEqual(double.dropped, [], `no reasoning item dropped behind a changed prefix\n${dump()}`);
    assert.ok(double.turns.every((turn) => !turn.error), dump());
    const replayed = responses.slice(1).map((r) => (r.json.input ?? []).filter((it) => it.type === 'reasoning').length);
    assert.ok(replayed.every((n) => n > 0), `every later request replays reasoning items: ${replayed}`);

    // Inside the branch, the model saw the commands' outputs.
    assert.ok(state.outputs.shell1.text.includes(kNotes), `shell1: ${excerpt(state.outputs.shell1.text)}`);
    assert.ok(state.outputs.shell2.text.includes(kMarker), `shell2: ${excerpt(state.outputs.shell2.text)}`);
    assert.match(state.branchId ?? '', /^br_[0-9A-Za-z]+$/);
    const before = JSON.stringify(responses[state.outputs.shell2.requestIndex].json.input);
    assert.ok(before.includes(kMarker), 'before branch_return the branch is in the history');

    // The fold: from the request after branch_return on, the branch's work is gone and
    // branch_create's output stands for it with the summary.
    const folded = responses[state.finalIndex].json.input;
    const shown = `request ${state.finalIndex} (after branch_return), ${folded.length} input items:\n  ` +
      excerpt(JSON.stringify(folded.map((i) => ({ type: i.type, call_id: i.call_id, name: i.name,
        output: i.output === undefined ? undefined : excerpt(outputText(i), 160) }))), 3000);
    console.log(`[codex gateway] ${shown}`);
    const text = JSON.stringify(folded);
    assert.ok(!text.includes(kMarker), `the second command's output is folded away; ${shown}`);
    assert.ok(!text.includes(kNotes), `the first command's output is folded away; ${shown}`);
    for (const key of ['shell1', 'shell2']) {
      assert.ok(!folded.some((i) => i.call_id === state.calls[key]), `${key}'s call and output are folded away; ${shown}`);
    }
    const stands = toolOutputFor({ input: folded }, state.calls.create);
    assert.ok(stands, 'branch_create\'s function_call_output is still there');
    assert.ok(outputText(stands).includes(kSummary),
      `branch_create's output carries the summary: ${excerpt(outputText(stands), 1000)}`);
  } finally {
    await double.close();
    await server.stop();
    cleanup(dataDir);
  }
});
