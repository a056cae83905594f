// The thinking-block binding of the Anthropic Messages API, as the scripted doubles enforce it
// (lib/anthropic_double.mjs, bench/model/caching_double.mjs): it signs the thinking blocks a double
// replies with and judges the thinking blocks a request carries as the provider documents it
// ("Preserved thinking", "Prefix checks on thinking blocks", Claude API, 2026), so that a gateway
// removing or rewriting history is judged as the real API would judge it. One instance per double;
// not safe to share between doubles (it holds what its double issued). Pure JS, node:crypto only.
//
// The rules:
// - Prefix. A block is bound to the top-level `system`, `tools` and every message before the
//   assistant message holding it, thinking blocks themselves excluded ("Earlier thinking blocks
//   aren't in the prefix"); key order, formatting and cache_control markers do not count
//   (messages.mjs canonical()), nor does anything outside system/tools/messages.
// - Chain. Each block records the thinking block before it when it was produced (the last one of
//   the request it answered) and how many came before it there. The blocks a request keeps must be
//   an unbroken run of that sequence: removing from the start, from the end, or all is fine; a gap,
//   a moved block or one put back after removal breaks the chain. A block is valid iff the double
//   issued its signature for its text, its prefix is the one it was produced after, it stands no
//   further into the run than it was produced (a block put back before it breaks that) and, unless
//   first, its recorded predecessor is the thinking block just before it. The first invalid block
//   and every later thinking block are invalid.
// - Mismatch. By default the first invalid block is the provider's 400. With
//   `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` (and the beta
//   messages.kBindingBeta, which messages.mjs validate() requires for the field) the invalid blocks
//   are dropped and reported as `input_transformations` instead.
// - Tool loop. "Within a tool-use turn, pass thinking blocks back": when the request ends in a
//   tool loop (its last user message carries tool_result blocks), every assistant message of the
//   current turn (since the last user message without tool_result) that the double produced with
//   thinking must start with that thinking, unmodified. A block dropped by drop_block counts as
//   missing. Under "adaptive" the API "silently disables thinking for that request" (check() says
//   so in `degraded`); earlier turns may omit it. Under "enabled" (manual) the API's own answer is
//   a 400 ("a final `assistant` message must start with a thinking block"), but the doubles record
//   it as `degraded` too: the suites run Claude Code under a model name for which it sends manual
//   thinking while the doubles apply the prefix checks of current models, which take adaptive
//   thinking; Claude Code's recovery from its own compaction (it strips the kept turn's thinking
//   after the prefix-check 400) must stay possible. A test asserts `degraded` is empty.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { canonical, hasBeta, kBindingBeta } from './messages.mjs';

export const kThinkingTypes = new Set(['thinking', 'redacted_thinking']);
const kDropReason = 'prefix_binding_mismatch';

const isThinking = (b) => kThinkingTypes.has(b?.type);
// What a block's integrity rests on: a thinking block's signature, a redacted block's data.
const signatureOf = (b) => (b.type === 'redacted_thinking' ? b.data : b.signature);
const textOf = (b) => (b.type === 'redacted_thinking' ? null : (b.thinking ?? ''));
const blocksOf = (m) => (Array.isArray(m?.content) ? m.content : []);
const hash = (...parts) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p).update('\0');
  return h.digest('base64');
};

// The prefix identity before each message: out[i] covers system, tools and messages[0..i) with
// their thinking blocks left out; out[messages.length] is the whole request's. Chained, so that a
// request is read once however many thinking blocks it carries.
function prefixHashes(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const out = [hash(canonical({ system: body.system ?? null, tools: body.tools ?? null }))];
  for (const m of messages) {
    const bare = Array.isArray(m?.content) ? { ...m, content: m.content.filter((b) => !isThinking(b)) } : m;
    out.push(hash(out[out.length - 1], canonical(bare)));
  }
  return out;
}

// The thinking blocks of a request in order: [{i (message), j (block), block, path}].
export function thinkingBlocksOf(body) {
  const out = [];
  (Array.isArray(body.messages) ? body.messages : []).forEach((m, i) => {
    blocksOf(m).forEach((block, j) => {
      if (isThinking(block)) out.push({ i, j, block, path: `messages.${i}.content.${j}` });
    });
  });
  return out;
}

// The request without the `found` blocks (a copy; the request is left as it came).
function without(body, found) {
  if (found.length === 0) return body;
  const drop = new Set(found.map((f) => f.block));
  const messages = body.messages.map((m) => (blocksOf(m).some((b) => drop.has(b))
    ? { ...m, content: m.content.filter((b) => !drop.has(b)) } : m));
  return { ...body, messages };
}

// The provider's 400 for the first invalid block.
function mismatchMessage(found, headers) {
  const { block, path } = found;
  const field = block.type === 'redacted_thinking' ? 'data' : 'signature';
  let message = `${path}: Invalid \`${field}\` in \`${block.type}\` block. The block is bound to a different ` +
    'conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".';
  if (!hasBeta(headers, kBindingBeta)) {
    message += ` That setting requires the \`${kBindingBeta}\` value in the \`anthropic-beta\` header.`;
  }
  return message;
}

export class ThinkingBinding {
  constructor({ secret = randomBytes(32) } = {}) {
    this.secret = secret;
    this.issued = new Map();    // signature -> {prefix, thinking, pred (signature | null), n}
    this.produced = new Map();  // tool_use id -> signatures of the thinking its reply carried
  }

  // Signs one thinking block produced in answer to `body` (the request as the model saw it, that
  // is after any drop): bound to its whole prefix and chained after its last thinking block.
  // Returns the signature.
  issue(body, thinking) {
    return this.issueAll(body, [thinking])[0];
  }

  // Signs the thinking blocks (texts, in order) of one reply to `body`; each after the one before.
  issueAll(body, texts) {
    const prefix = prefixHashes(body).at(-1);
    const before = thinkingBlocksOf(body).map((f) => signatureOf(f.block));
    let pred = before.at(-1) ?? null;
    let n = before.length;
    return texts.map((thinking) => {
      const signature = createHmac('sha256', this.secret)
        .update(`${prefix}\0${thinking}\0${pred ?? ''}\0${n}`).digest('base64');
      this.issued.set(signature, { prefix, thinking, pred, n });
      pred = signature;
      n++;
      return signature;
    });
  }

  // The reply `content` to `body` with its thinking blocks signed (new blocks; the others as they
  // are), remembered by its tool_use ids so that the tool-loop rule knows it carried thinking.
  signContent(body, content) {
    const signatures = this.issueAll(body, content.filter((b) => b.type === 'thinking').map((b) => b.thinking ?? ''));
    let k = 0;
    const signed = content.map((b) => (b.type === 'thinking' ? { ...b, signature: signatures[k++] } : b));
    if (signatures.length) {
      for (const b of signed) if (b.type === 'tool_use') this.produced.set(b.id, signatures);
    }
    return signed;
  }

  // The thinking blocks of `body` that break the binding: the first invalid one and every later.
  invalidBlocks(body) {
    const found = thinkingBlocksOf(body);
    const prefixes = prefixHashes(body);
    let prev = null;
    for (let k = 0; k < found.length; k++) {
      const { i, block } = found[k];
      const r = this.issued.get(signatureOf(block));
      const ok = r !== undefined && r.thinking === textOf(block) && r.prefix === prefixes[i] &&
        k <= r.n && (k === 0 || r.pred === prev);
      if (!ok) return found.slice(k);
      prev = signatureOf(block);
    }
    return [];
  }

  // The first assistant message of an unfinished tool loop that lacks the thinking the double
  // produced it with: {i, type (of its first block)}, or null.
  missingInFlight(body) {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const hasResult = (m) => blocksOf(m).some((b) => b?.type === 'tool_result');
    const lastUser = messages.findLastIndex((m) => m?.role === 'user');
    if (lastUser < 0 || !hasResult(messages[lastUser])) return null;
    const start = messages.findLastIndex((m, i) => i < lastUser && m?.role === 'user' && !hasResult(m));
    for (let i = start + 1; i < messages.length; i++) {
      if (messages[i]?.role !== 'assistant') continue;
      const content = blocksOf(messages[i]);
      const use = content.find((b) => b?.type === 'tool_use' && this.produced.has(b.id));
      if (!use) continue;
      const carried = new Set(content.filter(isThinking).map(signatureOf));
      if (!isThinking(content[0]) || !this.produced.get(use.id).every((s) => carried.has(s))) {
        return { i, type: content[0]?.type ?? 'none' };
      }
    }
    return null;
  }

  // Judges a request (already valid by messages.mjs validate(body, headers)). Returns
  //   error            the 400 message, or null;
  //   dropped          [{path, reason}] the blocks drop_block removed;
  //   body             the request as the model sees it (without the invalid blocks: the dropped
  //                    ones, or on an error what drop_block would have dropped);
  //   degraded         why thinking is off for this request (adaptive, tool loop), or null;
  //   transformations  the response's `input_transformations` when the request set
  //                    block_binding ([] if nothing was dropped), else null.
  // Pure: it records nothing (signContent does).
  check(body, headers = {}) {
    const invalid = this.invalidBlocks(body);
    const kept = without(body, invalid);
    const bindingSet = body.thinking?.block_binding != null;
    const result = { error: null, dropped: [], body: kept, degraded: null, transformations: null };
    if (invalid.length && body.thinking?.block_binding?.prefix_mismatch_behavior !== 'drop_block') {
      return { ...result, error: mismatchMessage(invalid[0], headers) };
    }
    result.dropped = invalid.map((f) => ({ path: f.path, reason: kDropReason }));
    if (bindingSet) result.transformations = result.dropped.map((d) => ({ type: 'thinking_dropped', ...d }));
    const type = body.thinking?.type;
    const missing = type === 'enabled' || type === 'adaptive' ? this.missingInFlight(kept) : null;
    if (missing) {
      result.degraded = `messages.${missing.i}: an assistant message of the unfinished tool-use turn lacks the ` +
        `thinking it was produced with (its first block is \`${missing.type}\`): thinking is off for this request`;
    }
    return result;
  }
}
