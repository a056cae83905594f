// What the long-session tests (claude_code_long, opencode_long) share: the chain
//   agent -> recorder -> contextd's model gateway -> Anthropic double
// where the recorder keeps what the agent sent (its own, unfolded transcript) and the double keeps
// what the model received (folded); the checks that every branch folded from the request that
// carried its return (or its force-return) onward; the per-session numbers; and the scrubbed
// request bodies saved as a corpus (tests/agents/corpus/<client>/).
import { createServer, request as httpRequest } from 'node:http';
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpServer } from '../../e2e/harness.mjs';
import { kViewOpening, messageText } from './transcript.mjs';

// A pass-through HTTP proxy to `target` (an origin) that records every request body it forwards
// ({method, url, headers, raw, json}) and streams the answer back unchanged. `recorder.target` may
// be changed (a restarted contextd); `recorder.gate`, when set, is called with each request's
// record before it is forwarded, and the request waits for the promise it returns.
export async function startRecorder(target) {
  const requests = [];
  const recorder = { requests, target, gate: null, url: '', close: null };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const record = { method: req.method, url: req.url, headers: req.headers, raw: raw.toString('utf8'), json: null };
      try { record.json = JSON.parse(record.raw); } catch { /* not JSON */ }
      requests.push(record);
      const forward = () => {
        const to = recorder.target;
        const up = httpRequest(`${to}${req.url}`, { method: req.method, headers: { ...req.headers, host: new URL(to).host } }, (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
        });
        up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
        up.end(raw);
      };
      if (!recorder.gate) { forward(); return; }
      Promise.resolve().then(() => recorder.gate(record)).then(forward, (e) => { res.writeHead(502); res.end(String(e?.stack ?? e)); });
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  recorder.url = `http://127.0.0.1:${server.address().port}`;
  recorder.close = () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); });
  return recorder;
}

// contextd (HTTP, port 0, `dataDir`) whose model gateway forwards Anthropic requests to
// `double`, with a recorder in front of its model endpoint. `folding`: more `context_folding:`
// lines (indented), `yaml`: more top-level sections (lines). Resolves with {server, origin
// (contextd), mcpUrl, modelUrl (the recorder), recorder, config (its path), stop()}.
export async function startChain({ double, dataDir, folding = [], yaml = [] }) {
  const config = join(dataDir, 'contextd.yaml');
  // A scripted session opens branches faster than a person would: the rate limit is raised.
  writeFileSync(config, ['context_folding:', '  branch_creation_rate_limit: 60/minute', ...folding,
    'model_gateway:', '  anthropic:', `    base_url: ${double.url}`, ...yaml, ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  const origin = new URL(server.url).origin;
  const recorder = await startRecorder(origin);
  const chain = {
    server, origin, mcpUrl: server.url, modelUrl: recorder.url, recorder, config,
    async stop() { await recorder.close(); await chain.server.stop(); },
  };
  return chain;
}

// contextd's fold counters from /metrics: {folds, skipped: {reason: n}, text}.
export async function foldMetrics(origin) {
  const text = await (await fetch(`${origin}/metrics`)).text();
  let folds = 0;
  const skipped = {};
  for (const line of text.split('\n')) {
    let m = /^contextd_model_folds_total\{[^}]*\} (\d+)/.exec(line);
    if (m) folds += Number(m[1]);
    m = /^contextd_model_folds_skipped_total\{([^}]*)\} (\d+)/.exec(line);
    if (m) {
      const reason = /reason="([^"]*)"/.exec(m[1])?.[1] ?? '?';
      skipped[reason] = (skipped[reason] ?? 0) + Number(m[2]);
    }
  }
  return { folds, skipped, text };
}

// Tokens of a request body, estimated as characters / 4.
export const tokensOf = (body) => Math.ceil(JSON.stringify(body).length / 4);

// The index of the first body in `bodies` that carries a tool_result for a tool_use whose input
// satisfies `match(name, input)` (Anthropic Messages), or -1.
export function firstResultOf(bodies, match) {
  for (let i = 0; i < bodies.length; i++) {
    const ids = new Set();
    for (const m of bodies[i].messages ?? []) {
      if (!Array.isArray(m.content)) continue;
      for (const b of m.content) {
        if (m.role === 'assistant' && b.type === 'tool_use' && match(b.name, b.input ?? {})) ids.add(b.id);
        if (m.role === 'user' && b.type === 'tool_result' && ids.has(b.tool_use_id)) return i;
      }
    }
  }
  return -1;
}

// Checks the branches of a session against what the model received. `branches`: [{name, id,
// from (index of the first model request that must be folded), until (index from which a parent's
// fold has taken this one's summary with it; Infinity), markers (text only the branch's work
// holds), summary (text the folded result must carry), stands (RegExp on the folded result)}].
// `bodies`: the double's main requests, in order. A request in another branch's isolated view
// (issue 33) does not show the parent's history: only the markers are checked there. Returns a
// list of failures (empty when all hold).
export function foldFailures(branches, bodies) {
  const failures = [];
  const inView = (body) => (body.messages ?? []).some((m) => m.role === 'user' && messageText(m).startsWith(kViewOpening));
  for (const b of branches) {
    if (b.from < 0 || b.from >= bodies.length) { failures.push(`${b.name}: its return never reached the model (from=${b.from})`); continue; }
    for (let j = b.from; j < bodies.length; j++) {
      const text = JSON.stringify(bodies[j].messages);
      for (const marker of b.markers) {
        if (text.includes(marker)) { failures.push(`${b.name}: request ${j} still carries ${marker} (folded from ${b.from})`); break; }
      }
      if (j < (b.until ?? Infinity) && !inView(bodies[j])) {
        if (b.summary && !text.includes(b.summary)) failures.push(`${b.name}: request ${j} lacks the summary ${JSON.stringify(b.summary)}`);
        if (b.stands && !b.stands.test(text)) failures.push(`${b.name}: request ${j} lacks ${b.stands}`);
      }
    }
  }
  return failures;
}

// The per-session numbers the issue asks for, printed and returned.
export function report({ label, clientBodies, modelBodies, metrics }) {
  const last = modelBodies.at(-1);
  const unfolded = clientBodies.at(-1);
  const largest = modelBodies.reduce((best, b, i) => (tokensOf(b) > best.tokens ? { tokens: tokensOf(b), index: i } : best), { tokens: 0, index: -1 });
  const numbers = {
    requests: modelBodies.length,
    folds: metrics.folds,
    skipped: metrics.skipped,
    lastTokens: last ? tokensOf(last) : 0,
    unfoldedTokens: unfolded ? tokensOf(unfolded) : 0,
    largest,
  };
  numbers.ratio = numbers.unfoldedTokens ? numbers.lastTokens / numbers.unfoldedTokens : 1;
  // The conversation alone (what folding acts on; the system prompt and tools are the same in both).
  const conversation = (b) => (b ? Math.ceil(JSON.stringify(b.messages ?? b.input ?? []).length / 4) : 0);
  numbers.lastConversationTokens = conversation(last);
  numbers.unfoldedConversationTokens = conversation(unfolded);
  numbers.conversationRatio = numbers.unfoldedConversationTokens
    ? numbers.lastConversationTokens / numbers.unfoldedConversationTokens : 1;
  console.log(`--- ${label}: ${numbers.requests} model requests, ${numbers.folds} folds, skipped ${JSON.stringify(numbers.skipped)}; ` +
    `last request ${numbers.lastTokens} tokens vs ${numbers.unfoldedTokens} unfolded (${(numbers.ratio * 100).toFixed(1)}%); ` +
    `its conversation ${numbers.lastConversationTokens} vs ${numbers.unfoldedConversationTokens} (${(numbers.conversationRatio * 100).toFixed(1)}%); ` +
    `largest request #${largest.index}: ${largest.tokens} tokens (chars/4)`);
  return numbers;
}

// Replaces what would tie a body to this machine or run: the given paths (temp workspaces, homes),
// API keys, session ids and the thinking signatures (HMACs of this run's key).
export function scrub(text, paths) {
  let out = text;
  for (const [path, name] of paths) out = out.split(path).join(name);
  return out
    .replace(/sk-ant-[A-Za-z0-9_-]+/g, 'sk-ant-REDACTED')
    .replace(/("signature":\s*")[^"]*"/g, '$1SIGNATURE"')
    .replace(/-tmp-contextd-[A-Za-z0-9-]+-ws-[A-Za-z0-9]+/g, '-work-repo')
    .replace(/\/tmp\/[A-Za-z0-9._-]+/g, '/tmp/TMP');
}

// Saves `picks` ({name, body}) under <dir>/<client>/, scrubbed, each as <name>.json, when
// CONTEXTD_AGENT_CORPUS_DIR names a directory (tests/agents/corpus to refresh the corpus).
export function saveCorpus(client, picks, paths) {
  const root = process.env.CONTEXTD_AGENT_CORPUS_DIR;
  if (!root) return;
  const dir = join(root, client);
  mkdirSync(dir, { recursive: true });
  for (const { name, body } of picks) {
    if (!body) continue;
    const text = `${scrub(JSON.stringify(body, null, 1), paths)}\n`;
    // The corpus stays small: a body over 200 KB (an unfolded session's tail) is left out.
    if (text.length > 200 * 1024) { console.log(`--- corpus: ${client}/${name} left out (${text.length} bytes)`); continue; }
    writeFileSync(join(dir, `${name}.json`), text);
  }
}

// Saves every request of the session (double and recorder) to $CONTEXTD_AGENT_DUMP_DIR/<label>-*.json.
export function dumpSession(label, double, recorder) {
  const dir = process.env.CONTEXTD_AGENT_DUMP_DIR;
  if (!dir) return;
  writeFileSync(join(dir, `${label}-model.json`), JSON.stringify(double.requests, null, 1));
  writeFileSync(join(dir, `${label}-client.json`), JSON.stringify(recorder.requests.map(({ method, url, headers, raw }) => ({ method, url, headers, raw })), null, 1));
}

// A file of `lines` lines, each carrying `marker` (the text the fold checks look for).
export const fileOf = (marker, lines) =>
  Array.from({ length: lines }, (_, i) => `${marker} line ${i}: some words about the code base`).join('\n') + '\n';

// A throwaway workspace (temp dir named after `prefix`): notes.txt (20 lines), config.txt (the
// port), src/<f>.txt for each of `files` (60 lines marked MARK_<F>), and big.txt (900 lines marked
// MARK_BIG) when `big`.
export function makeWorkspace(prefix, files, { big = false } = {}) {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), `${prefix}-`)));
  mkdirSync(join(ws, 'src'));
  writeFileSync(join(ws, 'notes.txt'), fileOf('NOTES_TOP', 20));
  writeFileSync(join(ws, 'config.txt'), 'port = 8080\n');
  for (const f of files) writeFileSync(join(ws, 'src', `${f}.txt`), fileOf(`MARK_${f.toUpperCase()}`, 60));
  if (big) writeFileSync(join(ws, 'big.txt'), fileOf('MARK_BIG', 900));
  return ws;
}

// tokens_used of branch `id` in a branch_status result as a client shows it (the JSON, maybe
// after the client's own lines and before its appended reminders); NaN when it is not there.
export function tokensUsedIn(text, id) {
  let status;
  const json = String(text).split('\n\n<system-reminder>')[0];
  try { status = JSON.parse(json.slice(json.indexOf('{'))); } catch { return NaN; }
  const find = (list) => {
    for (const b of list ?? []) {
      if (b.branch_id === id) return b;
      const hit = find(b.children);
      if (hit) return hit;
    }
    return null;
  };
  return find(status.branches)?.tokens_used ?? (status.branch_id === id ? status.tokens_used : NaN);
}

// The end of a long session's script, the same for every client: branch C force-returned by its
// budget (a big read), D by its deadline, a last sibling E, then `wrapUps` calls at the top and the
// answer. `C(tool)` names contextd's tools as the client does; `read(ws, file)` and `bash(command)`
// are the client's tools; `idOf(body)` reads the newest branch id; ids.C/D/E are filled in.
export function tailOfLongScript({ C, read, bash, ws, ids, idOf, wrapUps }) {
  return [
    // C: a big read inside a small budget: force-returned at 100%.
    { tools: [{ name: C('branch_create'), input: { description: 'read big', prompt: 'Read big.txt', budget: 3000 } }] },
    (body) => { ids.C = idOf(body); return { tools: [read(ws, 'big.txt')] }; },
    { tools: [bash('echo after c')] },
    // D: past its deadline.
    { tools: [{ name: C('branch_create'), input: { description: 'slow look', prompt: 'Look at d1 slowly', timeout_seconds: 1 } }] },
    (body) => { ids.D = idOf(body); return { tools: [bash('sleep 2; cat src/d1.txt')] }; },
    { tools: [bash('echo after d')] },
    // E: a last sibling.
    { tools: [{ name: C('branch_create'), input: { description: 'survey e', prompt: 'Survey e1', budget: 20000 } }] },
    (body) => { ids.E = idOf(body); return { tools: [read(ws, 'src/e1.txt')] }; },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_E: e1 is fine' } }] },
    ...Array.from({ length: wrapUps }, (_, i) => ({ tools: [bash(`echo wrap up ${i}`)] })),
    { text: 'All done: the port is 8080.' },
  ];
}
