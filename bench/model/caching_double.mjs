// A scripted Anthropic Messages double that bills like Anthropic's prompt cache, for bench/model.
// POST /v1/messages (JSON or, with stream: true, SSE in the Messages event format) answers with
// the next scripted assistant turn and records, per request, the input tokens split into cache
// reads, cache writes and uncached input, the output tokens and the cost (base input price = 1).
// POST /v1/messages/count_tokens answers the input total. Single-threaded (node:http); one double
// holds one cache, so a benchmark gives each variant (and conversation) its own.
//
// The billing model (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
// - The request is a sequence of blocks in the order tools, system, messages (each tool
//   definition, each system text block, each content block of each message; a string is one
//   block). A block's identity is its canonical JSON (sorted keys, cache_control removed) with its
//   section, message index and role; a prefix's identity is the hash chain of its blocks.
// - Blocks carrying cache_control are breakpoints: at most 4 (more is Anthropic's 400). Each
//   breakpoint whose prefix has at least `minCacheTokens` writes a cache entry for that prefix.
// - Reads: for each breakpoint, the longest written prefix ending at the breakpoint or at one of
//   the `lookback` (20) blocks before it; the longest over all breakpoints is read (0.1x).
// - Writes: from the end of what was read to the last cacheable breakpoint (1.25x). Uncached:
//   the rest (1x). Output: 5x.
// - Lifetime: none by default (every entry lives for the whole replay). With `ttl` (seconds) and
//   a replay clock (`now` per bill), an entry lives `ttl` seconds after it was last written or
//   used, as Anthropic documents ("The cache's default minimum lifetime (TTL) is 5 minutes. This
//   lifetime is refreshed each time the cached content is used"): a request refreshes every live
//   entry whose prefix it carries up to the end of what it read or wrote (`refresh: 'prefix'`,
//   the default: reading a longer prefix uses the content of the shorter ones), or with
//   `refresh: 'entry'` only the entry it read. The double bills each request once per cache
//   (`ttlCaches`: one per replay clock), so one run gives the numbers with and without expiry.
// - A request carrying `context_management.edits` with `clear_tool_uses_20250919` is edited as
//   Anthropic does server-side (clear_tool_uses.mjs) before it is billed; `usage.cleared` counts
//   the results the edit cleared. The edited request is validated again.
// Tokens are counted per block (o200k_base in the benchmark: an approximation of Claude's
// tokenizer) over the block's text: text, thinking, a tool_use's name and JSON input, a
// tool_result's text, a tool definition's name, description and JSON schema.
//
// Thinking is bound as Claude binds it (tests/agents/lib/thinking_binding.mjs, the rules of the
// Anthropic double): the double signs the thinking blocks of every reply it sends, bound to the
// request it answers (as the client sent it, before context editing), and judges every request's
// thinking blocks by the documented rules. What run.mjs can read of it:
// - an invalid block (a changed prefix, a gap, a moved or put-back block) is the provider's 400,
//   pushed on `double.errors` like its other refusals;
// - with `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` (and its beta) the invalid
//   blocks are dropped instead and not billed: `usage.thinking_dropped` (their number) on the
//   record, `double.dropped` ([{index (into records), path, reason}]) and the reply's
//   `input_transformations`;
// - a tool loop whose assistant messages lost the thinking they were produced with: the request is
//   answered without the scripted turn's thinking blocks, as adaptive thinking (Claude Code's)
//   does (manual thinking's 400 is recorded the same way: thinking_binding.mjs says why):
//   `usage.degraded` (true) on the record and `double.degraded` ([{index (into records),
//   message}]).
// A refused request's scripted turn, which run.mjs goes on with, gets its thinking signed by
// `skip()` as if it had been the answer (bound to the refused request), so that one refusal does
// not make every later request fail on a block no reply carried.
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { canonical, validate } from '../../tests/agents/lib/messages.mjs';
import { ThinkingBinding } from '../../tests/agents/lib/thinking_binding.mjs';
import { clearSettings, clearToolUsesAnthropic } from './clear_tool_uses.mjs';

export const PRICE = Object.freeze({ input: 1, cache_read: 0.1, cache_write: 1.25, output: 5 });
export const MAX_BREAKPOINTS = 4;
export const LOOKBACK_BLOCKS = 20;
// Claude Sonnet's minimum cacheable prompt; shorter prefixes are not cached (no error).
export const MIN_CACHE_TOKENS = 1024;

// An o200k_base counter (tiktoken of tools/npm/tokens): text -> tokens.
export function loadO200k() {
  const dir = new URL('../../tools/npm/tokens/node_modules/tiktoken', import.meta.url).pathname;
  if (!existsSync(dir)) throw new Error('tools/npm/tokens is not installed: run scripts/install-deps.sh');
  const { get_encoding } = createRequire(import.meta.url)(dir);
  const enc = get_encoding('o200k_base');
  return { enc, count: (text) => enc.encode_ordinary(text).length };
}


// The text a block is counted by.
export function blockText(block) {
  if (typeof block === 'string') return block;
  if (!block || typeof block !== 'object') return String(block ?? '');
  if (block.input_schema !== undefined && block.type === undefined) {  // a tool definition
    return `${block.name ?? ''}\n${block.description ?? ''}\n${JSON.stringify(block.input_schema)}`;
  }
  switch (block.type) {
    case 'text': return block.text ?? '';
    case 'thinking': return block.thinking ?? '';
    case 'tool_use': return `${block.name}\n${JSON.stringify(block.input ?? {})}`;
    case 'tool_result':
      if (typeof block.content === 'string') return block.content;
      return (block.content ?? []).map((c) => (c.type === 'text' ? c.text : canonical(c))).join('\n');
    default: return canonical(block);
  }
}

// The blocks of a request in cache order: [{id (identity string), block, breakpoint}].
export function requestBlocks(body) {
  const out = [];
  const add = (where, block) => out.push({
    id: `${where}\n${canonical(block)}`, block, breakpoint: !!(block && typeof block === 'object' && block.cache_control),
  });
  for (const t of body.tools ?? []) add('tool', t);
  const system = typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : (body.system ?? []);
  for (const b of system) add('system', b);
  (body.messages ?? []).forEach((m, i) => {
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content ?? []);
    for (const b of blocks) add(`message ${i} ${m.role}`, b);
  });
  return out;
}

export { canonical, validate };

// The prompt cache of one account: written prefix hashes, and a shared token memo.
export class PromptCache {
  // `ttl`: seconds an entry lives after its last write or use (0: forever); `refresh`: 'prefix'
  // (a request refreshes every live entry inside the prefix it read or wrote) or 'entry' (only
  // the entry it read, and those it wrote).
  constructor({ count, minCacheTokens = MIN_CACHE_TOKENS, lookback = LOOKBACK_BLOCKS, memo = new Map(), ttl = 0, refresh = 'prefix' }) {
    this.count = count;
    this.minCacheTokens = minCacheTokens;
    this.lookback = lookback;
    this.memo = memo;  // block identity -> tokens (may be shared between caches: it is pure)
    this.ttl = ttl;
    this.refresh = refresh;
    this.entries = new Map();  // prefix hash -> expiry (replay seconds; Infinity without a TTL)
  }

  alive(hash, now) {
    const expiry = this.entries.get(hash);
    return expiry !== undefined && expiry >= now;
  }

  tokensOf(entry) {
    let n = this.memo.get(entry.id);
    if (n === undefined) {
      n = this.count(blockText(entry.block));
      this.memo.set(entry.id, n);
    }
    return n;
  }

  // Bills the input of `body` at replay time `now` (seconds) and writes its cache entries.
  // Returns {error} (a 400) or {input_tokens, cache_read, cache_write, uncached, breakpoints,
  // hit_block, blocks}.
  bill(body, now = 0) {
    const blocks = requestBlocks(body);
    const bps = [];
    blocks.forEach((b, i) => { if (b.breakpoint) bps.push(i); });
    if (bps.length > MAX_BREAKPOINTS) {
      return { error: `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${bps.length}.` };
    }
    const cum = [];
    const hashes = [];
    let total = 0;
    let h = createHash('sha256').update(String(body.model ?? '')).digest('base64');
    for (const b of blocks) {
      total += this.tokensOf(b);
      cum.push(total);
      h = createHash('sha256').update(h).update('\0').update(b.id).digest('base64');
      hashes.push(h);
    }
    let hit = -1;
    for (const b of bps) {
      for (let j = b; j >= Math.max(0, b - this.lookback); j--) {
        if (this.alive(hashes[j], now)) { hit = Math.max(hit, j); break; }
      }
    }
    const cacheable = bps.filter((b) => cum[b] >= this.minCacheTokens);
    const read = hit >= 0 ? cum[hit] : 0;
    const lastWrite = cacheable.length ? cum[cacheable[cacheable.length - 1]] : 0;
    const covered = Math.max(read, lastWrite);
    const expiry = this.ttl > 0 ? now + this.ttl : Infinity;
    if (this.ttl > 0) {
      if (this.refresh === 'prefix') {
        const end = Math.max(hit, cacheable.length ? cacheable[cacheable.length - 1] : -1);
        for (let j = 0; j <= end; j++) if (this.alive(hashes[j], now)) this.entries.set(hashes[j], expiry);
      } else if (hit >= 0) {
        this.entries.set(hashes[hit], expiry);
      }
    }
    for (const b of cacheable) this.entries.set(hashes[b], expiry);
    return {
      input_tokens: total, cache_read: read, cache_write: covered - read, uncached: total - covered,
      breakpoints: bps.length, hit_block: hit, blocks: blocks.length,
    };
  }
}

export function costOf(r) {
  return r.cache_read * PRICE.cache_read + r.cache_write * PRICE.cache_write + r.uncached * PRICE.input +
    r.output_tokens * PRICE.output;
}

// Starts the double on 127.0.0.1:0. `count` counts a text's tokens. Script turns with
// `double.enqueue(turn)`: a turn is {content: [assistant blocks]} (tool_use blocks with their
// ids; thinking blocks are signed when sent) or a function (body) => turn. `double.records` holds
// one entry per billed request: {headers, body, usage: {input_tokens, cache_read, cache_write,
// uncached, output_tokens, cost, cleared, thinking_dropped, degraded, ttl}}. `ttlCaches` ([{name,
// ttl, refresh}]): caches with a lifetime billed beside the main one (which has none), each at the
// replay time the driver sets with `double.setTimes({name: s})`; `usage.ttl[name]` =
// {cache_read, cache_write, uncached, cost} in that cache.
export async function startCachingDouble({ count, minCacheTokens, lookback, memo, ttlCaches = [] } = {}) {
  const cache = new PromptCache({ count, minCacheTokens, lookback, memo });
  const timed = ttlCaches.map((t) => ({ name: t.name, cache: new PromptCache({ count, minCacheTokens, lookback, memo, ttl: t.ttl, refresh: t.refresh }) }));
  const binding = new ThinkingBinding();
  const times = {};
  const queue = [];
  let seq = 0;
  let lastRefused = null;  // {body, headers} of the last request refused with a 400
  const double = {
    url: '', cache, binding, records: [], errors: [], dropped: [], degraded: [],
    setTimes: (t) => Object.assign(times, t),
    enqueue: (turn) => queue.push(turn),
    // Drops the turn of a refused request; its thinking blocks are signed in place as the answer
    // to that request, since the driver goes on with that turn's content.
    skip: () => {
      const turn = queue.shift();
      if (lastRefused && Array.isArray(turn?.content)) signInPlace(turn.content, lastRefused);
      return turn;
    },
    pending: () => queue.length,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
  const signInPlace = (content, { body, headers }) => {
    const signed = binding.signContent(binding.check(body, headers).body, content);
    signed.forEach((b, k) => { if (b !== content[k]) content[k].signature = b.signature; });
  };
  const refuse = (res, message, body, headers) => {
    double.errors.push(message);
    lastRefused = { body, headers };
    return sendError(res, 400, 'invalid_request_error', message);
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0];
      try {
        if (req.method !== 'POST' || (path !== '/v1/messages' && path !== '/v1/messages/count_tokens')) {
          return sendError(res, 404, 'not_found_error', `${req.method} ${path} is not served by the caching double`);
        }
        let body;
        try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch (e) {
          return sendError(res, 400, 'invalid_request_error', `invalid JSON: ${e.message}`);
        }
        const sent = body;
        const bad = validate(body, req.headers);
        if (bad) return refuse(res, bad, sent, req.headers);
        const bound = binding.check(body, req.headers);
        if (bound.error) return refuse(res, bound.error, sent, req.headers);
        // Dropped thinking blocks are not billed: the model never reads them.
        body = bound.body;
        if (path === '/v1/messages/count_tokens') {
          const total = requestBlocks(body).reduce((a, b) => a + cache.tokensOf(b), 0);
          return sendJson(res, 200, { input_tokens: total });
        }
        if (queue.length === 0) {
          double.errors.push('no scripted turn');
          return sendError(res, 500, 'api_error', 'the caching double has no scripted turn for this request');
        }
        // Context editing (beta `context-management-2025-06-27`) is applied server-side to the
        // request as the client sent it, before caching; the edited request is checked again.
        let cleared = 0;
        const edit = (body.context_management?.edits ?? []).find((e) => e.type === 'clear_tool_uses_20250919');
        if (edit) {
          const input = requestBlocks(body).reduce((a, b) => a + cache.tokensOf(b), 0);
          const r = clearToolUsesAnthropic(body, input, count, clearSettings(edit));
          body = r.body;
          cleared = r.cleared;
          const badEdit = validate(body, req.headers);
          if (badEdit) return refuse(res, badEdit, sent, req.headers);
        }
        const billed = cache.bill(body);
        if (billed.error) return refuse(res, billed.error, sent, req.headers);
        let turn = queue.shift();
        if (typeof turn === 'function') turn = turn(body);
        // Thinking off for this request (adaptive, a tool loop without its thinking): the turn is
        // answered without its thinking blocks.
        const scripted = bound.degraded ? turn.content.filter((b) => b.type !== 'thinking') : turn.content;
        const content = binding.signContent(bound.body, scripted);
        const output_tokens = content.reduce((a, b) => a + count(blockText(b)), 0);
        const usage = { ...billed, output_tokens, cleared, thinking_dropped: bound.dropped.length, degraded: !!bound.degraded };
        usage.cost = costOf(usage);
        if (timed.length) {
          usage.ttl = {};
          for (const t of timed) {
            const b = t.cache.bill(body, times[t.name] ?? 0);
            const u = { cache_read: b.cache_read, cache_write: b.cache_write, uncached: b.uncached, output_tokens };
            usage.ttl[t.name] = { cache_read: u.cache_read, cache_write: u.cache_write, uncached: u.uncached, cost: costOf(u) };
          }
        }
        const index = double.records.length;
        for (const d of bound.dropped) double.dropped.push({ index, ...d });
        if (bound.degraded) double.degraded.push({ index, message: bound.degraded });
        double.records.push({ headers: req.headers, body, usage });
        const message = {
          id: `msg_bench_${String(++seq).padStart(6, '0')}`, type: 'message', role: 'assistant',
          model: body.model ?? 'claude-bench', content,
          stop_reason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', stop_sequence: null,
          usage: {
            input_tokens: billed.uncached, cache_creation_input_tokens: billed.cache_write,
            cache_read_input_tokens: billed.cache_read, output_tokens,
          },
          ...(bound.transformations ? { input_transformations: bound.transformations } : {}),
        };
        return body.stream ? streamMessage(res, message) : sendJson(res, 200, message);
      } catch (e) {
        double.errors.push(e.stack);
        return sendError(res, 500, 'api_error', `caching double failed: ${e.stack}`);
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  double.url = `http://127.0.0.1:${server.address().port}`;
  return double;
}

function sendJson(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_bench_${status}` });
  res.end(JSON.stringify(value));
}

function sendError(res, status, type, message) {
  sendJson(res, status, { type: 'error', error: { type, message } });
}

// message_start, per block content_block_start / delta(s) / stop, message_delta, message_stop.
function streamMessage(res, message) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } });
  message.content.forEach((block, index) => {
    if (block.type === 'tool_use') {
      event('content_block_start', { index, content_block: { ...block, input: {} } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    } else if (block.type === 'thinking') {
      event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking } });
      event('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } });
    } else {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: message.usage.output_tokens } });
  event('message_stop', {});
  res.end();
}

// The assistant message of an SSE body (the inverse of streamMessage, for the driver).
export function messageFromSse(text) {
  let message = null;
  const partial = new Map();
  for (const chunk of text.split('\n\n')) {
    const line = chunk.split('\n').find((l) => l.startsWith('data: '));
    if (!line) continue;
    const ev = JSON.parse(line.slice(6));
    if (ev.type === 'message_start') message = { ...ev.message, content: [] };
    else if (ev.type === 'content_block_start') partial.set(ev.index, { block: ev.content_block, json: '' });
    else if (ev.type === 'content_block_delta') {
      const p = partial.get(ev.index);
      if (ev.delta.type === 'text_delta') p.block.text += ev.delta.text;
      else if (ev.delta.type === 'thinking_delta') p.block.thinking += ev.delta.thinking;
      else if (ev.delta.type === 'signature_delta') p.block.signature += ev.delta.signature;
      else if (ev.delta.type === 'input_json_delta') p.json += ev.delta.partial_json;
    } else if (ev.type === 'content_block_stop') {
      const p = partial.get(ev.index);
      if (p.block.type === 'tool_use') p.block.input = p.json ? JSON.parse(p.json) : {};
      message.content[ev.index] = p.block;
    } else if (ev.type === 'message_delta') {
      message.stop_reason = ev.delta.stop_reason;
      message.usage = { ...message.usage, ...ev.usage };
    }
  }
  return message;
}
