// The Codex CLI end to end (issue 16): the real `codex exec` (tools/npm/agents), offline, against a
// scripted Responses API double, with contextd as its MCP server over Streamable HTTP and over
// stdio. The scripted model finds contextd's tools, opens a branch, reads a file with the built-in
// shell (in parallel with branch_status), returns the branch with a summary and answers. We assert
// on what the model was shown at each step (the next request's tool outputs), that no replayed
// reasoning item was refused (the history Codex sends keeps its prefix), and on contextd's trail.
//
// Run: CONTEXTD_BINARY=build/debug/src/cli/contextd node --test tests/agents/codex.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startHttpServer, cleanup, tempDataDir, BINARY } from '../e2e/harness.mjs';
import { startResponsesDouble, toolOutputFor, outputText } from './lib/responses_double.mjs';
import { codexAvailable, CODEX_BINARY, runCodexExec, describeRun, findTool, kApiKey } from './lib/codex.mjs';

const skip = codexAvailable() ? false
  : `the Codex CLI is not installed at ${CODEX_BINARY} (run scripts/install-deps.sh)`;

const kSecret = 'periwinkle-42';
const kFinal = `The notes say the secret word is ${kSecret}.`;
const kBudget = 3000;

// Shortens text for logs and assertion messages.
function excerpt(s, n = 1200) {
  const text = typeof s === 'string' ? s : JSON.stringify(s);
  return text.length > n ? `${text.slice(0, n)}… (${text.length} chars)` : text;
}

// The model's side of the scenario, one phase per request. Every decision is made from what the
// request shows, as a model would: the tool names, and the branch id in branch_create's output.
function scenario() {
  const state = { phase: 'discover', calls: {}, outputs: {}, branchId: null, log: [] };
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
        assert.ok((body.tools ?? []).some((t) => t.type === 'tool_search'),
          `neither contextd's tools nor tool_search are offered: ${excerpt(body.tools?.map((t) => t.name ?? t.type))}`);
        state.searched = true;
        return { calls: [call('search', { type: 'tool_search', arguments: { query: 'branch create return', limit: 8 } })] };
      }
      case 'create': {
        const create = findTool(body, 'branch_create');
        assert.ok(create, 'branch_create is offered after the tool search: ' +
          excerpt(body.input.filter((i) => /^tool_search/.test(i.type)), 3000));
        state.createTool = create;
        state.phase = 'shell';
        return { calls: [call('create', { name: create.name, namespace: create.namespace, arguments: {
          description: 'read the notes file', prompt: 'cat notes.txt and report the secret word', budget: kBudget } })] };
      }
      case 'shell': {
        const text = take('create');
        state.branchId = text.match(/br_[0-9A-Za-z]+/)?.[0] ?? null;
        const exec = findTool(body, 'exec_command');
        const status = findTool(body, 'branch_status');
        assert.ok(exec, `Codex offers exec_command: ${excerpt(body.tools?.map((t) => t.name ?? t.type))}`);
        state.phase = 'return';
        // Two calls in one turn: the built-in shell and an MCP tool, run in parallel by Codex.
        return { calls: [
          call('shell', { name: exec.name, namespace: exec.namespace, arguments: { cmd: 'cat notes.txt' } }),
          call('status', { name: status.name, namespace: status.namespace, arguments: {} }),
        ] };
      }
      case 'return': {
        take('shell');
        take('status');
        const ret = findTool(body, 'branch_return');
        state.phase = 'final';
        return { calls: [call('return', { name: ret.name, namespace: ret.namespace, arguments: {
          branch_id: state.branchId ?? 'br_unknown', message: `notes.txt says the secret word is ${kSecret}` } })] };
      }
      case 'final': {
        take('return');
        state.phase = 'done';
        return { text: kFinal };
      }
      default:
        return { text: 'unexpected extra request' };
    }
  };
  return { state, script: Array.from({ length: 8 }, () => step) };
}

// What the next request showed the model for each tool call, printed for the CI log.
function logOutputs(label, state) {
  for (const [key, out] of Object.entries(state.outputs)) {
    console.log(`[codex ${label}] model received for ${key} (${out.item?.type}, output is ` +
      `${Array.isArray(out.item?.output) ? 'content items' : typeof out.item?.output}):\n` +
      `  ${excerpt(out.text, 700).replaceAll('\n', '\n  ')}`);
  }
}

// The request facts a Responses gateway has to preserve, one line per request.
function describeRequests(double) {
  return double.requests.map((r) => {
    const j = r.json ?? {};
    const h = r.headers;
    return `${r.method} ${r.url} auth=${h.authorization ? h.authorization.replace(kApiKey, '<key>') : '-'} ` +
      `accept=${h.accept ?? '-'} enc=${h['content-encoding'] ?? '-'} originator=${h.originator ?? '-'} ` +
      `stream=${j.stream} store=${j.store} previous_response_id=${j.previous_response_id ?? '-'} ` +
      `include=${JSON.stringify(j.include)} reasoning=${JSON.stringify(j.reasoning)} ` +
      `instructions=${j.instructions === undefined ? '-' : `${String(j.instructions).length} chars`} ` +
      `tools=${j.tools?.length ?? '-'} input=${j.input?.length ?? '-'} ` +
      `prompt_cache_key=${j.prompt_cache_key ? 'set' : '-'} parallel_tool_calls=${j.parallel_tool_calls}`;
  }).join('\n');
}

function trail(dataDir, ...args) {
  return execFileSync(BINARY, ['trail', ...args, '--data-dir', dataDir], { encoding: 'utf8', timeout: 10000 });
}

// Results the `branch_return instruction` check reads after both runs.
const createOutputs = {};

async function runScenario(t, label, { mcp, dataDir, model }) {
  const { state, script } = scenario();
  const double = await startResponsesDouble({ script });
  const workspace = mkdtempSync(join(tmpdir(), 'contextd-codex-ws-'));
  writeFileSync(join(workspace, 'notes.txt'), `The secret word is ${kSecret}.\n`);
  let run;
  try {
    run = await runCodexExec({ prompt: 'Read notes.txt inside a contextd branch and tell me the secret word.',
      modelUrl: double.url, model, mcp: mcp(), workspace, timeoutMs: 40000 });
  } finally {
    await double.close();
    cleanup(workspace);
  }
  const responses = double.responseRequests();
  if (process.env.CONTEXTD_AGENT_DUMP_DIR) {
    // Everything the double received, for whoever builds the Responses gateway next.
    writeFileSync(join(process.env.CONTEXTD_AGENT_DUMP_DIR, `codex-${label}-requests.json`),
      JSON.stringify(double.requests.map(({ rawBody, ...r }) => r), null, 1));
  }
  const dump = () => `${describeRun(run)}\n--- scenario ---\n${state.log.join('\n')}\n--- requests ---\n` +
    `${describeRequests(double)}\n--- double problems ---\n${excerpt(double.problems, 3000)}`;
  console.log(`[codex ${label}] ${Math.round(run.ms)} ms; requests:\n${describeRequests(double)}`);
  if (run.proxyAttempts.length) console.log(`[codex ${label}] refused outbound: ${run.proxyAttempts.join('; ')}`);
  logOutputs(label, state);

  assert.ok(!run.timedOut && run.code === 0, dump());
  assert.equal(state.phase, 'done', `the script ran to its end\n${dump()}`);
  assert.ok(run.stdout.includes(kFinal), `the final answer is printed\n${dump()}`);
  // No replayed reasoning item was refused, and the check really ran: every request after the
  // first replays all earlier reasoning items with their encrypted content.
  assert.deepEqual(double.problems, [], dump());
  assert.deepEqual(double.dropped, [], `no reasoning item dropped behind a changed prefix\n${dump()}`);
  assert.ok(double.turns.every((turn) => !turn.error), dump());
  for (const [i, req] of responses.entries()) {
    const replayed = (req.json.input ?? []).filter((it) => it.type === 'reasoning' && it.encrypted_content);
    assert.equal(replayed.length, i, `request ${i} replays ${i} reasoning items\n${dump()}`);
    assert.equal(req.json.store, false, 'Codex does not ask the provider to store responses');
  }
  // Each request's input starts with the previous request's input, unchanged: Codex only
  // appends, which is what keeps the provider's prompt cache (and the reasoning items) valid.
  for (let i = 1; i < responses.length; i++) {
    const before = responses[i - 1].json.input;
    const now = responses[i].json.input.slice(0, before.length);
    assert.deepEqual(now, before, `request ${i} keeps request ${i - 1}'s input as its prefix`);
    assert.deepEqual(responses[i].json.tools, responses[0].json.tools, `request ${i} keeps the tools`);
    assert.equal(responses[i].json.prompt_cache_key, responses[0].json.prompt_cache_key);
  }
  assert.deepEqual(double.requests.map((r) => `${r.method} ${r.path}`),
    responses.map(() => 'POST /v1/responses'), `Codex calls nothing but POST /v1/responses\n${dump()}`);
  assert.deepEqual(run.proxyAttempts, [], 'Codex tried to reach the network');

  // How Codex names contextd's tools to the model.
  const first = responses[0].json;
  const create = state.createTool;
  if (state.searched) {
    assert.ok(JSON.stringify(first.input).includes('mcp__contextd'),
      `the first request lists the deferred mcp__contextd namespace: ${excerpt(first.input.map((i) => i.content?.[0]?.text?.slice(0, 80)))}`);
    const search = responses.map((r) => r.json.input.find((i) => i.type === 'tool_search_output'))
      .find(Boolean);
    const names = search?.tools?.flatMap((ns) => (ns.tools ?? []).map((tool) => `${ns.name}/${tool.name}`));
    console.log(`[codex ${label}] tool_search found: ${names?.join(', ')}`);
    for (const n of ['branch_create', 'branch_return', 'branch_status']) {
      assert.ok(names?.includes(`mcp__contextd/${n}`), `tool_search shows ${n}: ${names}`);
    }
  }
  if (!state.searched) {
    const ns = first.tools.find((tool) => tool.type === 'namespace' && tool.name === 'mcp__contextd');
    const names = ns?.tools?.map((tool) => tool.name) ?? [];
    console.log(`[codex ${label}] offered up front in tools: mcp__contextd/{${names.join(',')}}`);
    for (const n of ['branch_create', 'branch_return', 'branch_status']) {
      assert.ok(names.includes(n), `the mcp__contextd namespace in tools has ${n}: ${names}`);
    }
  }
  assert.deepEqual({ name: create.name, namespace: create.namespace },
    { name: 'branch_create', namespace: 'mcp__contextd' }, 'Codex offers contextd tools as mcp__contextd/<tool>');

  // branch_create as the model reads it: the branch id, the budget, the depth.
  const created = state.outputs.create.text;
  createOutputs[label] = created;
  const at = `branch_create output shown to the model:\n${excerpt(created, 2000)}`;
  assert.match(state.branchId ?? '', /^br_[0-9A-Za-z]+$/, at);
  assert.ok(created.includes(String(kBudget)), `the budget ${kBudget}: ${at}`);
  assert.match(created, /depth\W{1,4}0\b/, `depth 0 (a branch under the session root): ${at}`);

  // The shell ran in the workspace and the model got its output; branch_status ran beside it.
  assert.ok(state.outputs.shell.text.includes(`The secret word is ${kSecret}`),
    `shell output: ${excerpt(state.outputs.shell.text)}`);
  assert.ok(state.outputs.status.text.includes(state.branchId), `branch_status output: ${excerpt(state.outputs.status.text)}`);
  const shellReq = responses[state.outputs.shell.requestIndex].json.input;
  const calledTogether = shellReq.filter((i) => i.type === 'function_call' &&
    [state.calls.shell, state.calls.status].includes(i.call_id));
  assert.equal(calledTogether.length, 2, 'both parallel calls are replayed in the history');

  // branch_return as the model reads it: the summary and the token accounting.
  const returned = state.outputs.return.text;
  const rat = `branch_return output shown to the model:\n${excerpt(returned, 2000)}`;
  assert.ok(returned.includes(`the secret word is ${kSecret}`), `the summary: ${rat}`);
  assert.match(returned, /tokens_used\W{1,4}\d+/, rat);
  assert.match(returned, /tokens_folded\W{1,4}\d+/, rat);
  assert.ok(returned.includes(state.branchId), rat);

  // contextd's trail afterwards: the branch is there, returned, with its summary.
  const list = trail(dataDir(), 'list');
  assert.ok(list.includes(state.branchId), `trail list shows the branch:\n${list}`);
  const session = list.match(/ses_[0-9A-Za-z]+/)?.[0];
  assert.ok(session, `trail list shows a session:\n${list}`);
  const show = trail(dataDir(), 'show', session);
  assert.ok(show.includes(state.branchId) && show.includes(kSecret), `trail show folds the branch into its summary:\n${show}`);
  const unfold = trail(dataDir(), 'unfold', state.branchId);
  assert.match(unfold, /branch_returned/, `trail unfold shows the return:\n${unfold}`);
  console.log(`[codex ${label}] trail show ${session}:\n  ${excerpt(show, 800).replaceAll('\n', '\n  ')}`);
}

test('codex exec with contextd over Streamable HTTP: branch, shell, return, answer', { skip, timeout: 60000 }, async (t) => {
  assert.ok(existsSync(BINARY), `contextd binary not found at ${BINARY}; build it or set CONTEXTD_BINARY`);
  const server = await startHttpServer();
  try {
    await runScenario(t, 'http', { mcp: () => ({ url: server.url }), dataDir: () => server.dataDir });
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

// A model name Codex has no metadata for (say, a gateway's own): Codex falls back to defaults, and
// this test shows how it then offers MCP tools.
test('codex exec with an unknown model name, contextd over Streamable HTTP', { skip, timeout: 60000 }, async (t) => {
  assert.ok(existsSync(BINARY), `contextd binary not found at ${BINARY}; build it or set CONTEXTD_BINARY`);
  const server = await startHttpServer();
  try {
    await runScenario(t, 'http-unknown-model', { mcp: () => ({ url: server.url }), dataDir: () => server.dataDir,
      model: 'contextd-double-model' });
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

test('codex exec with contextd over stdio: branch, shell, return, answer', { skip, timeout: 60000 }, async (t) => {
  assert.ok(existsSync(BINARY), `contextd binary not found at ${BINARY}; build it or set CONTEXTD_BINARY`);
  const dataDir = tempDataDir();
  try {
    await runScenario(t, 'stdio', {
      // Absolute: Codex starts the server from its own working directory.
      mcp: () => ({ command: resolve(BINARY), args: ['serve', '--transport', 'stdio', '--data-dir', dataDir] }),
      dataDir: () => dataDir,
    });
  } finally {
    cleanup(dataDir);
  }
});

// Codex shows the model a tool's structuredContent (as JSON) instead of its text content whenever
// structuredContent is present, so the instruction to call branch_return must be in both.
test('codex: the model reading branch_create is told to call branch_return', { skip }, (t) => {
  if (!Object.keys(createOutputs).length) return t.skip('the scenarios did not get that far');
  for (const [label, created] of Object.entries(createOutputs)) {
    assert.match(created, /branch_return/, `${label}: branch_create output shown to the model:\n${created}`);
  }
});
