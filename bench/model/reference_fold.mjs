// A reference F(.) in a few lines, and a stand-in gateway built on it, for bench/model's own tests:
// they drive the contextd variants end to end (contextd's real MCP tools, a stand-in for its
// /v1/messages) before contextd's model gateway exists. Not a benchmark of anything: contextd's
// gateway is what run.mjs measures; this only checks the driver and states the fold it expects.
import { createServer } from 'node:http';

const isCall = (b, tool) => b?.type === 'tool_use' && (b.name === tool || b.name.endsWith(`__${tool}`));

// Every returned branch (a branch_create tool_use ... the branch_return's tool_result) replaced,
// at the point of branch_create, by one tool_result carrying the summary (branch_return's
// `message`). Blocks before the first fold are untouched; messages are regrouped by role.
export function fold(messages) {
  const flat = [];
  messages.forEach((m, i) => {
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    for (const b of blocks) flat.push({ role: m.role, block: b, message: i });
  });
  const resultAt = new Map(flat.map((x, i) => [x.block.tool_use_id, i]).filter(([id]) => id));
  const drop = new Set();
  const replace = new Map();
  const creates = flat.map((x, i) => (isCall(x.block, 'branch_create') ? i : -1)).filter((i) => i >= 0);
  for (const c of creates) {
    if (drop.has(c)) continue;
    // The first branch_return after this create closes it (the driver does not nest branches).
    const r = flat.findIndex((x, i) => i > c && isCall(x.block, 'branch_return'));
    if (r < 0 || !resultAt.has(flat[r].block.id)) continue;
    const end = resultAt.get(flat[r].block.id);
    const createResult = resultAt.get(flat[c].block.id);
    let marked = false;
    for (let i = c + 1; i <= end; i++) {
      if (i !== createResult) drop.add(i);
      marked ||= !!flat[i].block.cache_control;
    }
    // A breakpoint inside the fold moves to the block that replaces it (else the request would
    // lose its last breakpoint right after a branch_return).
    replace.set(createResult, {
      type: 'tool_result', tool_use_id: flat[c].block.id,
      content: [{ type: 'text', text: `Branch returned. Summary: ${flat[r].block.input?.message ?? ''}` }],
      ...(marked ? { cache_control: { type: 'ephemeral' } } : {}),
    });
  }
  const out = [];
  flat.forEach((x, i) => {
    if (drop.has(i)) return;
    const block = replace.get(i) ?? x.block;
    const last = out[out.length - 1];
    if (last && last.role === x.role) last.content.push(block);
    else out.push({ role: x.role, content: [block] });
  });
  return out;
}

const blocksOf = (m) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content);
const resultText = (b) => (typeof b.content === 'string' ? b.content : (b.content ?? []).map((c) => c.text ?? '').join('\n'));

// Issue 33's isolated view in a few lines: while a branch is open (its branch_create answered,
// no branch_return answered after it), the messages before the first assistant turn, then one
// user message `[contextd] Branch <id>` with the create's description and prompt, its result and
// the results of the calls made beside it, then the branch's own turns; null when no branch is
// open. A breakpoint on the create's results moves to that message.
export function isolatedView(messages) {
  let open = null;
  messages.forEach((m, i) => {
    if (m.role !== 'assistant') return;
    for (const b of blocksOf(m)) {
      if (isCall(b, 'branch_create')) open = { message: i, call: b };
      if (isCall(b, 'branch_return') && open) open.returning = b.id;
    }
  });
  if (!open) return null;
  const answer = messages[open.message + 1];
  if (!answer) return null;
  const answered = (id) => messages.some((m) => m.role === 'user' && blocksOf(m).some((b) => b.type === 'tool_result' && b.tool_use_id === id));
  if (open.returning && answered(open.returning)) return null;
  const results = blocksOf(answer).filter((b) => b.type === 'tool_result');
  const created = results.find((b) => b.tool_use_id === open.call.id);
  if (!created) return null;
  const id = (() => { try { return JSON.parse(resultText(created)).branch_id; } catch { return '?'; } })();
  const text = [`[contextd] Branch ${id}`, `description: ${open.call.input?.description ?? ''}`, `prompt: ${open.call.input?.prompt ?? ''}`,
    `branch_create result: ${resultText(created)}`, ...results.filter((b) => b !== created).map((b) => `result: ${resultText(b)}`),
    ...blocksOf(answer).filter((b) => b.type === 'text').map((b) => b.text)].join('\n');
  const marked = blocksOf(answer).some((b) => b.cache_control);
  const first = messages.findIndex((m) => m.role === 'assistant');
  return [...messages.slice(0, first), { role: 'user', content: [{ type: 'text', text, ...(marked ? { cache_control: { type: 'ephemeral' } } : {}) }] },
    ...messages.slice(open.message + 2)];
}

// A stand-in for contextd's /v1/messages: folds and forwards to `upstream` (non-streaming and
// streaming bodies passed through); with `view: 'isolated'`, a request sent while a branch is
// open gets isolatedView. Records the session header of each request.
export async function startReferenceGateway(upstream, { view = 'inherited' } = {}) {
  const seen = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) { res.writeHead(404); res.end(); return; }
      seen.push(req.headers['x-claude-code-session-id']);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      body.messages = (view === 'isolated' && isolatedView(body.messages)) || fold(body.messages);
      const r = await fetch(upstream + req.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') });
      res.end(await r.text());
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`, seen,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
}
