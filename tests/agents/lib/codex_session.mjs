// A scripted Codex session through contextd: the model's side as a list of steps played against
// the Responses double, contextd as Codex's model gateway (its /v1 is the provider's base_url) and
// its MCP server, and what the double then received read back as branches, folds and sizes.
// Used by codex_long.test.mjs and compaction.test.mjs. Not thread-safe: one session per call.
//
// A step is a function (ctx) => turn | null, ctx = {body, index, s}: `s` is the session state
// (s.branches, s.calls, s.outputs, s.vars). Returning null skips to the next step in the same
// request. A step that needs a tool Codex has not loaded yet (MCP tools are deferred behind
// tool_search, and a compaction drops the search results) waits while a tool_search turn loads
// it. Codex's own compaction request (tools: [], its summarisation prompt) is answered by
// `summarise(s, body, index)` without taking a step.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer } from '../../e2e/harness.mjs';
import { startResponsesDouble, toolOutputFor, outputText, isCompactionPrompt, summaryItem } from './responses_double.mjs';
import { runCodexExec, findTool } from './codex.mjs';

export const kFoldHead = /^\[branch (br_[0-9A-Za-z]+) (returned|force-returned)/;

// What opens the user message standing for branch_create's answer in contextd's isolated branch
// view (issue 33).
export const kViewOpening = '[contextd] Branch ';

// The text of the newest input message opening an isolated branch view, or null.
export function viewOpeningText(body) {
  const text = (it) => (typeof it?.content === 'string' ? it.content : (it?.content ?? []).map((p) => p?.text ?? '').join(''));
  const open = (body?.input ?? []).findLast((it) => it?.type === 'message' && it.role === 'user' && text(it).startsWith(kViewOpening));
  return open ? text(open) : null;
}

// Sums the samples of a Prometheus metric whose labels include `labels`.
export function metric(text, name, labels = {}) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!(line.startsWith(`${name}{`) || line.startsWith(`${name} `))) continue;
    const [head, value] = line.split(/\s+/);
    if (Object.entries(labels).every(([k, v]) => head.includes(`${k}="${v}"`))) sum += Number(value);
  }
  return sum;
}

// The skipped-fold samples by reason: {reason: count}.
export function skippedByReason(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const m = line.match(/^contextd_model_folds_skipped_total\{([^}]*)\}\s+(\S+)/);
    if (!m) continue;
    const reason = m[1].match(/reason="([^"]*)"/)?.[1] ?? '?';
    if (Number(m[2]) > 0) out[reason] = (out[reason] ?? 0) + Number(m[2]);
  }
  return out;
}

const bytes = (v) => Buffer.byteLength(JSON.stringify(v));
export const approxTokens = (v) => Math.ceil(bytes(v) / 4);

// The helpers a step uses to build a turn from the request it answers.
// The script builders the Codex tests share. Each adds to `steps` a step that uses the session's
// kit (`kitOf()`: stepKit, bound once the session runs): a shell command, a branch_create, the
// first step inside a branch (its id read by `branchIdOf` from the message opening the branch's
// isolated view, issue 33, or from branch_create's output when the branch sees the parent's
// history) and a branch_return naming the branch.
export function scriptBuilders(steps, kitOf, branchIdOf) {
  const add = (fn) => steps.push(fn);
  return {
    add,
    shell: (key, cmd) => add(({ body, index }) => ({ calls: [kitOf().shell(body, index, key, cmd)] })),
    create: (key, args) => add(({ body, index }) => ({ calls: [kitOf().call(body, index, `create${key}`, 'branch_create', args)] })),
    enter: (key, innerKey, cmd) => add(({ body, index, s }) => {
      const opened = viewOpeningText(body) ?? kitOf().take(body, `create${key}`, index);
      s.vars[`${key}Id`] = branchIdOf(opened);
      if (!s.vars[`${key}Id`]) throw new Error(`branch ${key} did not open: ${opened.slice(0, 300)}`);
      return { calls: [kitOf().shell(body, index, innerKey, cmd)] };
    }),
    ret: (key, message) => add(({ body, index, s }) => ({ calls: [kitOf().call(body, index, `ret${key}`, 'branch_return',
      { branch_id: s.vars[`${key}Id`] ?? 'br_unknown', message })] })),
  };
}

export function stepKit(s) {
  const kit = {
    // A function call of tool `name` (found wherever Codex offers it), remembered under `key`.
    call(body, index, key, name, args) {
      const tool = findTool(body, name);
      if (!tool) throw new Error(`step ${key}: ${name} is not offered`);
      const call_id = `call_${key}_${index}`;
      s.calls[key] = { call_id, name, index };
      return { call_id, name: tool.name, namespace: tool.namespace, arguments: args };
    },
    // The output text of the call remembered under `key`, as this request shows it (and kept).
    take(body, key, index) {
      const item = toolOutputFor(body, s.calls[key]?.call_id);
      const text = outputText(item);
      s.outputs[key] = { text, index, present: Boolean(item) };
      return text;
    },
    shell(body, index, key, cmd) {
      return kit.call(body, index, key, 'exec_command', { cmd, max_output_tokens: 20000 });
    },
  };
  return kit;
}

// Runs Codex through a contextd that forwards to a Responses double playing `steps`. Resolves with
// {run, double, state, metrics, origin, server, stop()}; the caller asserts and then calls stop().
export async function runCodexSession({ dataDir, steps, summarise, workspace, prompt, autoCompactLimit = 200000,
  contextdArgs = [], contextdYaml = [], timeoutMs = 240000 }) {
  const s = { branches: {}, calls: {}, outputs: {}, vars: {}, log: [], step: 0, compactions: [], searches: 0 };
  let searchFor = null;
  const turn = async ({ body, index }) => {
    if (isCompactionPrompt(body)) {
      s.compactions.push(index);
      s.log.push(`request ${index}: compaction`);
      return { text: summarise(s, body, index) };
    }
    while (s.step < steps.length) {
      const ctx = { body, index, s };
      const step = steps[s.step];
      let t;
      try {
        t = await step(ctx);
      } catch (e) {
        const missing = String(e.message).match(/: (\S+) is not offered$/)?.[1];
        if (missing && searchFor !== `${s.step}:${missing}`) {
          // Load the deferred tool, then play the same step again.
          searchFor = `${s.step}:${missing}`;
          s.searches++;
          s.log.push(`request ${index}: tool_search for ${missing}`);
          return { calls: [{ type: 'tool_search', call_id: `call_search_${index}`,
            arguments: { query: missing.replace(/_/g, ' '), limit: 8 } }] };
        }
        throw e;
      }
      s.log.push(`request ${index}: step ${s.step}${t ? '' : ' (skipped)'}`);
      s.step++;
      if (t) return t;
    }
    return { text: 'The session is done.' };
  };
  const double = await startResponsesDouble({ script: Array.from({ length: 400 }, () => turn) });
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['model_gateway:', '  openai:', `    base_url: ${double.url}`, ...contextdYaml, ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config, ...contextdArgs] });
  const origin = new URL(server.url).origin;
  const run = await runCodexExec({
    prompt, modelUrl: `${origin}/v1`, mcp: { url: `${origin}/mcp` }, workspace, timeoutMs,
    prepare: ({ configFile }) => {
      // A top-level key: before the first table of the generated config.
      writeFileSync(configFile, `model_auto_compact_token_limit = ${autoCompactLimit}\n${readFileSync(configFile, 'utf8')}`);
    },
  });
  const metrics = await (await fetch(`${origin}/metrics`)).text();
  return {
    run, double, state: s, metrics, origin, server,
    async stop() {
      await double.close();
      await server.stop();
    },
  };
}

// What the double received, read back per branch: for each branch (s.branches[key] =
// {createKey, innerKeys, returnKey?, forced?}) the first request whose branch_create output is a
// fold, and every later request's view of it (a request in another branch's isolated view shows
// none of the parent's history: only the branch's work must not be there). Returns {rows,
// problems}: a problem is a string.
export function checkFolds(double, s) {
  const requests = double.responseRequests().map((r) => r.json);
  const problems = [];
  const rows = [];
  const firstFold = {};
  // Parents first: a nested branch's fold goes when its parent's fold takes its span.
  const order = Object.entries(s.branches).sort(([, a], [, b]) => Number(Boolean(a.parent)) - Number(Boolean(b.parent)));
  for (const [key, b] of order) {
    const create = s.calls[b.createKey];
    if (!create) { problems.push(`${key}: never created`); continue; }
    let first = null;
    let firstText = null;
    const views = [];
    for (let i = create.index + 1; i < requests.length; i++) {
      const body = requests[i];
      const out = toolOutputFor(body, create.call_id);
      const text = out ? outputText(out) : null;
      const folded = text !== null && kFoldHead.test(text);
      views.push({ i, present: out !== undefined, folded });
      if (folded && first === null) { first = i; firstText = text; }
      if (first !== null && i >= first) {
        if (out && text !== firstText) problems.push(`${key}: request ${i} shows branch_create's fold differently from request ${first}`);
        const parentFolded = b.parent && firstFold[b.parent] !== null && firstFold[b.parent] !== undefined &&
          i >= firstFold[b.parent];
        // (Another branch's isolated view, issue 33, does not show the parent's history.)
        if (!out && !summaryItem(body) && !parentFolded && viewOpeningText(body) === null) {
          problems.push(`${key}: request ${i} lost branch_create's output without a compaction or its parent's fold`);
        }
        const inner = (b.innerKeys ?? []).map((k) => s.calls[k]?.call_id).filter(Boolean);
        for (const id of inner) {
          if ((body.input ?? []).some((it) => it.call_id === id)) problems.push(`${key}: request ${i} still holds ${id} after the fold`);
        }
      }
    }
    firstFold[key] = first;
    const ret = b.returnKey ? s.calls[b.returnKey] : null;
    const expected = ret ? ret.index + 1 : null;
    rows.push({ key, branch: s.vars[`${key}Id`], first, expected, forced: Boolean(b.forced), text: firstText });
    if (b.acrossCompaction) continue;   // checked by its caller: its create turn is gone
    if (first === null) problems.push(`${key}: never folded (views ${JSON.stringify(views.slice(0, 6))}…)`);
    else if (expected !== null && first !== expected) problems.push(`${key}: folded from request ${first}, expected ${expected} (the request carrying its return)`);
    if (firstText && b.forced && !/force-returned/.test(firstText)) problems.push(`${key}: expected a force-return, got ${firstText.slice(0, 120)}`);
    if (firstText && !b.forced && !/ returned;/.test(firstText)) problems.push(`${key}: expected a return, got ${firstText.slice(0, 120)}`);
  }
  return { rows, problems };
}

// Sizes per session: requests, the largest request (≈ tokens, bytes/4), and request `at` (default
// the last) as sent and unfolded. Unfolded is every distinct item the double saw up to `at` since
// the last compaction before it (an item by type and call_id or id, in its first, unfolded form):
// a lower bound of what Codex holds, since an output folded in the very request that brought it
// (branch_return's, or the one that exhausted a budget) never reached the double.
export function sizes(double, s, rows, at = -1) {
  const requests = double.responseRequests().map((r) => r.json);
  const tokens = requests.map((b) => approxTokens(b.input ?? []));
  const end = at < 0 ? requests.length + at : at;
  const start = Math.max(0, ...s.compactions.filter((c) => c < end).map((c) => c + 1));
  const seen = new Map();
  for (let i = start; i <= end; i++) {
    for (const it of requests[i].input ?? []) {
      const key = `${it.type}:${it.call_id ?? it.id ?? JSON.stringify(it).slice(0, 200)}`;
      if (!seen.has(key)) seen.set(key, it);
    }
  }
  const unfolded = approxTokens([...seen.values()]);
  const largest = Math.max(...tokens);
  return { requests: requests.length, last: tokens[end], unfolded, largest, largestAt: tokens.indexOf(largest) };
}
