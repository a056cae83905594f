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

// A stand-in for contextd's /v1/messages: folds and forwards to `upstream` (non-streaming and
// streaming bodies passed through). Records the session header of each request.
export async function startReferenceGateway(upstream) {
  const seen = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) { res.writeHead(404); res.end(); return; }
      seen.push(req.headers['x-claude-code-session-id']);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      body.messages = fold(body.messages);
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
