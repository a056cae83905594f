// What a recorded session would cost at the provider: a sequence of Anthropic Messages request
// bodies (what the model received, in order) billed with the benchmark's prompt-cache model
// (bench/model/caching_double.mjs PromptCache: cache reads at 0.1 the base input price, writes at
// 1.25, uncached input at 1, output at 5), one cache for the whole session, as the caching double
// bills the requests it answers. Tokens are o200k_base (tools/npm/tokens), an approximation of
// Claude's tokenizer. Pure apart from loading the tokenizer; not safe to share a biller between
// threads (node has one).
import { PromptCache, PRICE, blockText, costOf, loadO200k } from '../../../bench/model/caching_double.mjs';

export { PRICE, loadO200k };

// The assistant message that answered bodies[k], as the next request carries it (the first
// assistant message past bodies[k]'s messages: a fold replaces blocks, it removes no message), or
// null for the last request.
function replyOf(bodies, k) {
  const next = bodies[k + 1];
  if (!next) return null;
  const tail = next.messages.slice(bodies[k].messages.length);
  return tail.find((m) => m.role === 'assistant') ?? null;
}

// Bills `bodies` in order with one PromptCache counting tokens with `count` (text -> tokens).
// A request's output is the reply the next request carries (replyOf: less a thinking block a fold
// step removed at that request; none for the last one, whose reply no request shows). Returns {requests, cache_read, cache_write, uncached, output_tokens,
// cost (in base input tokens), perRequest: [{cache_read, cache_write, uncached, output_tokens,
// cost}]}. Throws on a request the cache model refuses (more than 4 breakpoints).
export function billSession(bodies, { count }) {
  const cache = new PromptCache({ count });
  const total = { requests: bodies.length, cache_read: 0, cache_write: 0, uncached: 0, output_tokens: 0, cost: 0, perRequest: [] };
  bodies.forEach((body, k) => {
    const billed = cache.bill(body);
    if (billed.error) throw new Error(`request ${k}: ${billed.error}`);
    const reply = replyOf(bodies, k);
    const blocks = typeof reply?.content === 'string' ? [reply.content] : (reply?.content ?? []);
    const output_tokens = blocks.reduce((n, b) => n + count(blockText(b)), 0);
    const usage = { cache_read: billed.cache_read, cache_write: billed.cache_write, uncached: billed.uncached, output_tokens };
    usage.cost = costOf(usage);
    total.perRequest.push(usage);
    for (const key of ['cache_read', 'cache_write', 'uncached', 'output_tokens', 'cost']) total[key] += usage[key];
  });
  return total;
}

// One line for a log: the session's cost and its split.
export function describeBill(label, bill) {
  return `${label}: ${bill.requests} requests, cost ${bill.cost.toFixed(0)} (cache read ${bill.cache_read}, ` +
    `cache write ${bill.cache_write}, uncached ${bill.uncached}, output ${bill.output_tokens} tokens)`;
}
