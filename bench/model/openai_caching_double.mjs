// A scripted OpenAI Chat Completions double that bills like OpenAI's automatic prompt caching, for
// bench/model's `--api chat`. POST /v1/chat/completions (JSON only) answers with the next scripted
// assistant turn and records, per request, the input tokens split into cached and uncached input,
// the output tokens and the cost (base input price = 1). Single-threaded (node:http); one double
// holds one cache, so a benchmark gives each variant (and conversation) its own.
//
// The billing model (https://openai.com/index/api-prompt-caching/, OpenAI's prompt caching guide):
// - Automatic, no markers: "The API caches the longest prefix of a prompt that has been
//   previously computed, starting at 1,024 tokens and increasing in 128-token increments."
//   The prompt is read in the order tools, then messages. Each tool definition and each message
//   is a segment whose identity is its canonical JSON; every prefix of every earlier request of
//   the double counts as computed (no eviction by default). The common prefix is
//   the whole segments in common plus, in the first segment that differs, the tokens its text
//   shares with a segment seen at that place; cached = that rounded down to a multiple of 128,
//   or 0 below 1,024.
// - Cached input at 0.1x (the GPT-5 family's list prices: cached input is a tenth of input),
//   uncached input at 1x, no write premium. Output at 4x by default (`outputPrice`; the ratio
//   the brief fixes; GPT-4.1 lists 4x, the GPT-5 family 8x).
// - Lifetime: none by default. With `ttl` (seconds) and a replay clock (`now` per bill), the
//   in-memory retention OpenAI documents for its prompt cache ("Cached prefixes generally remain
//   active for 5 to 10 minutes of inactivity, up to a maximum of one hour"): a prefix lives `ttl`
//   seconds after the last request that carried it, and at most `maxAge` (3,600) seconds after it
//   was computed; then the next request that carries it computes it again. `ttlCaches` bills each
//   request once more per such cache (see startOpenAICachingDouble).
// - Validation as the API refuses (400, OpenAI's error shape): a `tool_calls` entry not answered
//   by a `tool` message before the next other message, a `tool` message without its call, an
//   unknown role, a call without an id, a function name or a string `arguments`.
// - `clearToolUses` (settings of clear_tool_uses.mjs): applies the clear_tool_uses rule to each
//   request before billing, as a simulation (OpenAI has no such feature).
// Tokens are counted per segment over its text (o200k_base in the benchmark): a message's
// role-free content, each call's name and arguments; a tool's name, description and parameters.
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { canonical } from '../../tests/agents/lib/messages.mjs';
import { pairingProblem, openAiError } from '../../tests/agents/lib/chat_double.mjs';
import { clearToolUsesChat } from './clear_tool_uses.mjs';

export const OPENAI_PRICE = Object.freeze({ input: 1, cached: 0.1, output: 4 });
export const OPENAI_MIN_CACHE_TOKENS = 1024;
export const OPENAI_CACHE_INCREMENT = 128;
// "up to a maximum of one hour" (in-memory retention).
export const OPENAI_MAX_AGE_SECONDS = 3600;
const ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

const partsText = (content) => (typeof content === 'string' ? content
  : (content ?? []).map((p) => (p.type === 'text' ? p.text : canonical(p))).join('\n'));

// The text a segment (a tool definition or a message) is counted by.
export function segmentText(kind, value) {
  if (kind === 'tool') {
    const f = value.function ?? value;
    return `${f.name ?? ''}\n${f.description ?? ''}\n${JSON.stringify(f.parameters ?? {})}`;
  }
  let text = partsText(value.content ?? '');
  for (const c of value.tool_calls ?? []) text += `\n${c.function?.name ?? ''}\n${c.function?.arguments ?? ''}`;
  return text;
}

// The segments of a request in cache order: [{id, text}].
export function chatSegments(body) {
  const out = [];
  for (const t of body.tools ?? []) out.push({ id: `tool\n${canonical(t)}`, text: segmentText('tool', t) });
  for (const m of body.messages ?? []) out.push({ id: `message\n${canonical(m)}`, text: segmentText('message', m) });
  return out;
}

// Why the API would refuse `body` (a 400 message), or null.
export function validateChat(body) {
  if (!Array.isArray(body?.messages) || body.messages.length === 0) return "'messages' must be a non-empty array";
  for (const [i, m] of body.messages.entries()) {
    if (!ROLES.has(m?.role)) return `Invalid value: '${m?.role}'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'. (messages.[${i}].role)`;
    for (const c of m.tool_calls ?? []) {
      if (m.role !== 'assistant') return `messages.[${i}]: only assistant messages may carry tool_calls`;
      if (!c.id || c.type !== 'function' || !c.function?.name || typeof c.function.arguments !== 'string') {
        return `messages.[${i}].tool_calls: each call needs an id, type 'function', a function name and string arguments`;
      }
    }
    if (m.role === 'tool' && typeof m.tool_call_id !== 'string') return `messages.[${i}]: a tool message needs a tool_call_id`;
  }
  return pairingProblem(body.messages);
}

const commonPrefix = (a, b) => {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
};

// The automatic prompt cache of one account.
export class OpenAIPrefixCache {
  // `tokenize(text)` -> array of token ids; `memo` (segment id -> tokens) may be shared.
  // `ttl`: seconds a prefix lives after the last request that carried it (0: forever); `maxAge`:
  // seconds it lives at most after it was computed (with a ttl).
  constructor({ tokenize, minCacheTokens = OPENAI_MIN_CACHE_TOKENS, increment = OPENAI_CACHE_INCREMENT, memo = new Map(), ttl = 0, maxAge = OPENAI_MAX_AGE_SECONDS }) {
    this.tokenize = tokenize;
    this.minCacheTokens = minCacheTokens;
    this.increment = increment;
    this.memo = memo;
    this.ttl = ttl;
    this.maxAge = maxAge;
    this.seen = new Map();     // chain hash of every prefix (at segment boundaries) computed -> {created, last}
    this.next = new Map();     // chain hash -> Map(text of a segment seen right after it -> {created, last})
  }

  alive(rec, now) {
    return rec !== undefined && (this.ttl <= 0 || (now - rec.last <= this.ttl && now - rec.created <= this.maxAge));
  }

  // Marks `key` of `map` used at `now` (computed anew when it is gone).
  touch(map, key, now) {
    const rec = map.get(key);
    if (this.alive(rec, now)) rec.last = now;
    else map.set(key, { created: now, last: now });
  }

  tokensOf(segment) {
    let n = this.memo.get(segment.id);
    if (n === undefined) {
      n = this.tokenize(segment.text).length;
      this.memo.set(segment.id, n);
    }
    return n;
  }

  // Bills the input of `body` at replay time `now` (seconds) and records its prefixes:
  // {input_tokens, cache_read, uncached, common} (`common`: tokens shared with an earlier live
  // prompt, before rounding).
  bill(body, now = 0) {
    const segments = chatSegments(body);
    const root = createHash('sha256').update(String(body.model ?? '')).digest('base64');
    let h = root;
    const hashes = [];
    let total = 0;
    const cum = [];
    for (const s of segments) {
      total += this.tokensOf(s);
      cum.push(total);
      h = createHash('sha256').update(h).update('\0').update(s.id).digest('base64');
      hashes.push(h);
    }
    let k = -1;  // last segment of the longest whole-segment prefix seen before
    while (k + 1 < segments.length && this.alive(this.seen.get(hashes[k + 1]), now)) k++;
    let common = k >= 0 ? cum[k] : 0;
    if (k + 1 < segments.length) {
      const before = k >= 0 ? hashes[k] : root;
      const candidates = this.next.get(before);
      if (candidates) {
        const mine = this.tokenize(segments[k + 1].text);
        let best = 0;
        for (const [text, rec] of candidates) if (this.alive(rec, now)) best = Math.max(best, commonPrefix(mine, this.tokenize(text)));
        common += best;
      }
    }
    // What was read is used (refreshed); what follows was computed by this request (new, even
    // where an older copy of the same prefix is still alive: the prompt's KV is one computation).
    for (let i = 0; i < segments.length; i++) {
      if (this.ttl <= 0 && this.seen.has(hashes[i])) continue;
      const before = i > 0 ? hashes[i - 1] : root;
      if (!this.next.has(before)) this.next.set(before, new Map());
      if (i <= k) {
        this.touch(this.seen, hashes[i], now);
        this.touch(this.next.get(before), segments[i].text, now);
      } else {
        this.seen.set(hashes[i], { created: now, last: now });
        this.next.get(before).set(segments[i].text, { created: now, last: now });
      }
    }
    const cached = common >= this.minCacheTokens ? Math.floor(common / this.increment) * this.increment : 0;
    return { input_tokens: total, cache_read: cached, cache_write: 0, uncached: total - cached, common };
  }
}

export function openAICostOf(r, price = OPENAI_PRICE) {
  return r.cache_read * price.cached + r.uncached * price.input + r.output_tokens * price.output;
}

// The Chat assistant message of a scripted turn (Anthropic-shaped blocks: text, tool_use).
export function chatMessageOf(content) {
  const text = content.filter((b) => b.type === 'text').map((b) => b.text).join('\n');
  const calls = content.filter((b) => b.type === 'tool_use').map((b) => ({
    id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) },
  }));
  return { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) };
}

// Starts the double on 127.0.0.1:0; `double.url` ends in /v1 (an OpenAI base URL). Script turns
// with `double.enqueue({content: [blocks]})`. `double.records`: {headers, body (as billed),
// usage: {input_tokens, cache_read, cache_write: 0, uncached, output_tokens, cost, cleared,
// ttl}}. `ttlCaches` ([{name, ttl, maxAge}]): caches with a lifetime billed beside the main one,
// each at the replay time set with `double.setTimes({name: seconds})`; `usage.ttl[name]` =
// {cache_read, cache_write: 0, uncached, cost}.
export async function startOpenAICachingDouble({ tokenize, minCacheTokens, increment, memo, price = OPENAI_PRICE, clearToolUses = null, ttlCaches = [] } = {}) {
  const cache = new OpenAIPrefixCache({ tokenize, minCacheTokens, increment, memo });
  const timed = ttlCaches.map((t) => ({ name: t.name, cache: new OpenAIPrefixCache({ tokenize, minCacheTokens, increment, memo, ttl: t.ttl, maxAge: t.maxAge }) }));
  const times = {};
  const count = (text) => tokenize(text).length;
  const queue = [];
  let seq = 0;
  const double = {
    url: '', cache, records: [], errors: [],
    setTimes: (t) => Object.assign(times, t),
    enqueue: (turn) => queue.push(turn),
    skip: () => queue.shift(),  // drops the turn of a refused request
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
  const send = (res, status, value) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_bench_${status}` });
    res.end(JSON.stringify(value));
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0];
      try {
        if (req.method !== 'POST' || path !== '/v1/chat/completions') {
          return send(res, 404, openAiError(`Unknown request URL: ${req.method} ${path}.`, { code: 'unknown_url' }));
        }
        let body;
        try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch (e) {
          return send(res, 400, openAiError(`We could not parse the JSON body of your request. (${e.message})`));
        }
        const bad = validateChat(body);
        if (bad) { double.errors.push(bad); return send(res, 400, openAiError(bad, { param: 'messages' })); }
        if (body.stream) return send(res, 400, openAiError('the caching double does not stream'));
        if (queue.length === 0) {
          double.errors.push('no scripted turn');
          return send(res, 500, openAiError('the caching double has no scripted turn', { type: 'server_error' }));
        }
        let cleared = 0;
        if (clearToolUses) {
          const input = chatSegments(body).reduce((a, s) => a + cache.tokensOf(s), 0);
          const r = clearToolUsesChat(body, input, count, clearToolUses);
          body = r.body;
          cleared = r.cleared;
          const badEdit = validateChat(body);
          if (badEdit) { double.errors.push(badEdit); return send(res, 400, openAiError(badEdit, { param: 'messages' })); }
        }
        const billed = cache.bill(body);
        const message = chatMessageOf(queue.shift().content);
        const output_tokens = count(segmentText('message', message));
        const usage = { ...billed, output_tokens, cleared };
        usage.cost = openAICostOf(usage, price);
        if (timed.length) {
          usage.ttl = {};
          for (const t of timed) {
            const b = t.cache.bill(body, times[t.name] ?? 0);
            usage.ttl[t.name] = { cache_read: b.cache_read, cache_write: 0, uncached: b.uncached, cost: openAICostOf({ ...b, output_tokens }, price) };
          }
        }
        double.records.push({ headers: req.headers, body, usage });
        return send(res, 200, {
          id: `chatcmpl-bench-${++seq}`, object: 'chat.completion', created: 1700000000 + seq, model: body.model ?? 'gpt-bench',
          choices: [{ index: 0, message: { ...message, refusal: null }, logprobs: null, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
          usage: {
            prompt_tokens: billed.input_tokens, completion_tokens: output_tokens, total_tokens: billed.input_tokens + output_tokens,
            prompt_tokens_details: { cached_tokens: billed.cache_read, audio_tokens: 0 },
          },
        });
      } catch (e) {
        double.errors.push(e.stack);
        return send(res, 500, openAiError(`caching double failed: ${e.stack}`, { type: 'server_error' }));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  double.url = `http://127.0.0.1:${server.address().port}/v1`;
  return double;
}
