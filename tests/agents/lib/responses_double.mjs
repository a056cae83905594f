// A scripted stand-in for the OpenAI Responses API (POST /v1/responses, streaming and not), for
// running real agent CLIs offline. It plays a script of assistant turns in order and records every
// request byte for byte. Like current reasoning models, each turn opens with a `reasoning` item
// whose `encrypted_content` is bound (HMAC) to the request's instructions, tools and input items.
// OpenAI documents that it "will drop reasoning items that follow a prefix change": a reasoning
// item replayed behind a changed prefix, and every reasoning item after it, is dropped (no error),
// recorded in `double.dropped` ({index (request seq), item_id, position, reason: 'prefix_changed'})
// and reported in the response as `input_transformations` ([{type: 'reasoning', id, action:
// 'removed', reason: 'prefix_changed'}], present only when something was dropped), so a gateway
// that rewrites history in a cache-breaking way is caught. Encrypted content the double did not
// make is still the provider's 400. One instance serves one test; it is not safe to share a
// script between concurrent agents (turns are taken in arrival order). node:http only, no npm deps.
//
// Script: an array of turns, played one per POST /v1/responses. A turn is an object
//   { text?: string,                         // assistant message (after the calls, if both)
//     calls?: [{ name, arguments, call_id?, namespace? }   // function calls, all in this one
//              | { type: 'tool_search', arguments: {query, limit?} }  // turn (parallel calls)
//              | { type: 'custom', name, input }],
//     reasoning?: string,                    // reasoning summary text (default: a short one)
//     usage?: {input_tokens, output_tokens}, // overrides the made-up usage
//     error?: { status, body } }             // answer this HTTP error instead of a turn
// or a function (ctx) => turn | Promise<turn>, called when its request arrives, with
//   ctx = { request, body, index, double }   // this request's record, its parsed JSON, its turn
//                                            // number, and the double (for earlier requests)
// `arguments` may be an object (sent as JSON) or a string (sent as is). When the script runs out,
// the double answers a plain text turn saying so and records it in `double.problems`.
//
// Compaction, as the API does it (https://developers.openai.com/api/docs/guides/compaction), is
// answered by the double itself, without taking a script turn, and recorded in `double.compactions`:
// - `POST /v1/responses/compact` {model, input, instructions?, tools?}: JSON
//   `{object: "response.compaction", output: [the input's user messages, one compaction item]}`;
// - a `compaction_trigger` input item (Codex 0.171's `remote_compaction_v2`, the OpenAI provider
//   only): the turn's output is exactly one `compaction` item;
// - `context_management: [{type: "compaction", compact_threshold}]` (server-side compaction): when
//   the input is over the threshold (bytes/4), a compaction item opens the turn's output.
// A compaction item's `encrypted_content` is sealed by the double; one it did not seal is refused
// (400 invalid_encrypted_content). Codex's own compaction for other providers is an ordinary
// request with `tools: []` and its summarisation prompt: a script turn (see isCompactionPrompt).
import { createServer } from 'node:http';
import { createHmac, randomBytes } from 'node:crypto';
import { gunzipSync, inflateSync, brotliDecompressSync } from 'node:zlib';

export const kExhaustedText = 'responses double: script exhausted';

// Canonical JSON (sorted object keys) so that the binding survives key reordering but nothing else.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().filter((k) => value[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

function decodeBody(raw, encoding) {
  switch ((encoding ?? '').toLowerCase()) {
    case '': case 'identity': return raw;
    case 'gzip': return gunzipSync(raw);
    case 'deflate': return inflateSync(raw);
    case 'br': return brotliDecompressSync(raw);
    default: throw new Error(`unsupported content-encoding ${encoding}`);
  }
}

function openAiError(status, message, { type = 'invalid_request_error', code = null, param = null } = {}) {
  return { status, body: { error: { message, type, param, code } } };
}

// Splits a string into a few pieces so that deltas really are deltas.
function pieces(s, n = 3) {
  if (s.length <= 1) return [s];
  const size = Math.ceil(s.length / n);
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

export async function startResponsesDouble({ script = [], secret = randomBytes(16),
  model = 'double-model' } = {}) {
  const requests = [];     // every request: {seq, method, path, url, headers, rawBody, bodyText, json}
  const problems = [];     // things a test should fail on: script exhausted, bad bodies, 400s sent
  const turns = [];        // per POST /v1/responses: {request, turn, response}
  const compactions = [];  // per compaction the double made: {request, how, item}
  let nextTurn = 0;
  let idCounter = 0;
  const newId = (prefix) => `${prefix}_${(++idCounter).toString(16).padStart(8, '0')}${randomBytes(8).toString('hex')}`;

  const mac = (body, prefixItems) => createHmac('sha256', secret).update(canonical({
    instructions: body.instructions ?? null, tools: body.tools ?? null, input: prefixItems,
  })).digest('base64url');
  // The same binding without the tools: what a request offering no tools is checked against.
  const macNoTools = (body, prefixItems) => createHmac('sha256', secret).update(canonical({
    instructions: body.instructions ?? null, input: prefixItems,
  })).digest('base64url');
  const offersNoTools = (body) => !Array.isArray(body.tools) || body.tools.length === 0;

  const unseal = (text) => {
    try {
      return JSON.parse(Buffer.from(String(text), 'base64url').toString('utf8'));
    } catch {
      return null;
    }
  };
  const compactionMac = (itemId) => createHmac('sha256', secret).update(`compaction:${itemId}`).digest('base64url');
  // A compaction item standing for `items` (what it summarised), sealed by the double.
  function compactionItem(items) {
    const id = newId('cmp');
    return { type: 'compaction', id, encrypted_content: Buffer.from(JSON.stringify({
      v: 1, kind: 'compaction', item_id: id, n: items.length, mac: compactionMac(id),
    })).toString('base64url') };
  }
  const estimateTokens = (items) => Math.ceil(Buffer.byteLength(canonical(items)) / 4);

  // The seal over a reasoning item's sealed fields: content the double did not make fails it.
  const reasoningSeal = (sealed) => createHmac('sha256', secret)
    .update(`reasoning:${sealed.item_id}:${sealed.response_id}:${sealed.n}:${sealed.mac}:${sealed.mac_no_tools}`)
    .digest('base64url');

  // Checks the replayed items of a request: {error: {status, body}} if an item's encrypted content
  // is not the double's, else {dropped: [{position, item_id, detail}]}: the reasoning items whose
  // prefix changed and every reasoning item after the first of them.
  function verifyReasoning(body) {
    const input = Array.isArray(body.input) ? body.input : [];
    const dropped = [];
    for (let i = 0; i < input.length; i++) {
      const item = input[i];
      if (item?.type === 'compaction') {
        const sealed = unseal(item.encrypted_content);
        if (!sealed || sealed.kind !== 'compaction' || sealed.mac !== compactionMac(sealed.item_id)) {
          return { error: openAiError(400, `The encrypted content for compaction item ${item.id ?? `input[${i}]`} ` +
            'could not be verified.', { code: 'invalid_encrypted_content', param: `input[${i}].encrypted_content` }) };
        }
        continue;
      }
      if (item?.type !== 'reasoning' || typeof item.encrypted_content !== 'string') continue;
      const sealed = unseal(item.encrypted_content);
      if (!sealed || sealed.v !== 1 || typeof sealed.mac !== 'string' || sealed.seal !== reasoningSeal(sealed)) {
        return { error: openAiError(400, 'The encrypted content could not be decrypted or parsed.',
          { code: 'invalid_encrypted_content', param: `input[${i}].encrypted_content` }) };
      }
      // A request that offers no tools (a client's compaction turn: Codex sends the whole history
      // with `tools: []` and its summarisation prompt) may replay reasoning made with tools, as the
      // API allows; the instructions and the items before it must still be the same.
      const bound = offersNoTools(body) && typeof sealed.mac_no_tools === 'string'
        ? macNoTools(body, input.slice(0, i)) === sealed.mac_no_tools
        : mac(body, input.slice(0, i)) === sealed.mac;
      if (!bound || dropped.length) {
        const origin = turns.find((t) => t.response?.id === sealed.response_id);
        dropped.push({ position: i, item_id: item.id ?? sealed.item_id,
          detail: { producedBy: origin?.request.seq, itemsThen: sealed.n, itemsNow: i } });
      }
    }
    return { dropped };
  }

  // Records the reasoning items dropped from request `record` and reports them on `response`.
  function reportDropped(record, dropped, response) {
    for (const d of dropped) {
      double.dropped.push({ index: record.seq, item_id: d.item_id, position: d.position, reason: 'prefix_changed', detail: d.detail });
    }
    if (dropped.length === 0) return response;
    return { ...response, input_transformations: dropped.map((d) => ({ type: 'reasoning', id: d.item_id, action: 'removed', reason: 'prefix_changed' })) };
  }

  const sealReasoning = (sealed) => ({ ...sealed, seal: reasoningSeal(sealed) });

  function buildOutput(turn, body, record) {
    const output = [];
    const prefix = Array.isArray(body.input) ? body.input : [];
    const threshold = (Array.isArray(body.context_management) ? body.context_management : [])
      .find((c) => c?.type === 'compaction')?.compact_threshold;
    if (typeof threshold === 'number' && estimateTokens(prefix) > threshold) {
      const item = compactionItem(prefix);
      compactions.push({ request: record, how: 'context_management', item });
      output.push(item);
    }
    const rsId = newId('rs');
    const response_id = newId('resp');
    output.push({
      type: 'reasoning', id: rsId,
      summary: [{ type: 'summary_text', text: turn.reasoning ?? 'Following the script.' }],
      encrypted_content: Buffer.from(JSON.stringify(sealReasoning({
        v: 1, item_id: rsId, response_id, n: prefix.length, mac: mac(body, prefix),
        mac_no_tools: macNoTools(body, prefix),
      }))).toString('base64url'),
    });
    for (const call of turn.calls ?? []) {
      const call_id = call.call_id ?? newId('call');
      if (call.type === 'tool_search') {
        // Client-executed tool search (the agent searches its deferred tools): arguments are an
        // object, not a JSON string.
        output.push({ type: 'tool_search_call', id: newId('tsc'), call_id, status: 'completed',
          execution: 'client', arguments: call.arguments ?? {} });
      } else if (call.type === 'custom') {
        output.push({ type: 'custom_tool_call', id: newId('ctc'), call_id, name: call.name,
          status: 'completed', input: String(call.input ?? '') });
      } else {
        output.push({
          type: 'function_call', id: newId('fc'), call_id, name: call.name,
          ...(call.namespace ? { namespace: call.namespace } : {}), status: 'completed',
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
        });
      }
    }
    if (turn.text !== undefined) {
      output.push({
        type: 'message', id: newId('msg'), role: 'assistant', status: 'completed',
        content: [{ type: 'output_text', text: turn.text, annotations: [] }],
      });
    }
    return { ...responseEnvelope(body, response_id), output, usage: usageOf(prefix, output, turn.usage) };
  }

  function responseEnvelope(body, id = newId('resp')) {
    return {
      id, object: 'response', created_at: 1700000000 + turns.length, status: 'completed',
      model: body.model ?? model, output: [], error: null, incomplete_details: null,
      instructions: body.instructions ?? null, parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null, store: body.store ?? false,
      reasoning: body.reasoning ?? null, tools: body.tools ?? [],
    };
  }

  function usageOf(input, output, given = {}) {
    const inputTokens = given.input_tokens ?? estimateTokens(input);
    const outputTokens = given.output_tokens ?? estimateTokens(output);
    return {
      input_tokens: inputTokens, input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens, output_tokens_details: { reasoning_tokens: 8 },
      total_tokens: inputTokens + outputTokens,
    };
  }

  // The SSE events of a finished response, in the order the Responses API streams them.
  function* events(response) {
    const skeleton = { ...response, status: 'in_progress', output: [], usage: null };
    yield { type: 'response.created', response: skeleton };
    yield { type: 'response.in_progress', response: skeleton };
    for (const [output_index, item] of response.output.entries()) {
      if (item.type === 'reasoning') {
        yield { type: 'response.output_item.added', output_index, item: { ...item, summary: [], encrypted_content: undefined } };
        for (const [summary_index, part] of item.summary.entries()) {
          yield { type: 'response.reasoning_summary_part.added', item_id: item.id, output_index, summary_index, part: { type: 'summary_text', text: '' } };
          for (const delta of pieces(part.text)) {
            yield { type: 'response.reasoning_summary_text.delta', item_id: item.id, output_index, summary_index, delta };
          }
          yield { type: 'response.reasoning_summary_text.done', item_id: item.id, output_index, summary_index, text: part.text };
          yield { type: 'response.reasoning_summary_part.done', item_id: item.id, output_index, summary_index, part };
        }
      } else if (item.type === 'function_call') {
        yield { type: 'response.output_item.added', output_index, item: { ...item, arguments: '', status: 'in_progress' } };
        for (const delta of pieces(item.arguments)) {
          yield { type: 'response.function_call_arguments.delta', item_id: item.id, output_index, delta };
        }
        yield { type: 'response.function_call_arguments.done', item_id: item.id, output_index, arguments: item.arguments };
      } else if (item.type === 'message') {
        yield { type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', content: [] } };
        const content_index = 0;
        const { text } = item.content[0];
        yield { type: 'response.content_part.added', item_id: item.id, output_index, content_index, part: { type: 'output_text', text: '', annotations: [] } };
        for (const delta of pieces(text)) {
          yield { type: 'response.output_text.delta', item_id: item.id, output_index, content_index, delta, logprobs: [] };
        }
        yield { type: 'response.output_text.done', item_id: item.id, output_index, content_index, text, logprobs: [] };
        yield { type: 'response.content_part.done', item_id: item.id, output_index, content_index, part: item.content[0] };
      } else {
        // A compaction item (and any other item without deltas): added, then done.
        yield { type: 'response.output_item.added', output_index, item };
      }
      yield { type: 'response.output_item.done', output_index, item };
    }
    yield { type: 'response.completed', response };
  }

  function sendJson(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': newId('req') });
    res.end(text);
  }

  async function handleResponses(record, res) {
    const body = record.json;
    if (!body || typeof body !== 'object') {
      problems.push({ seq: record.seq, problem: 'body is not JSON', bodyText: record.bodyText.slice(0, 500) });
      return sendJson(res, 400, openAiError(400, 'We could not parse the JSON body of your request.').body);
    }
    const { error: bad, dropped } = verifyReasoning(body);
    if (bad) {
      problems.push({ seq: record.seq, problem: 'reasoning content not the double\'s', error: bad.body.error });
      turns.push({ request: record, error: bad });
      return sendJson(res, bad.status, bad.body);
    }
    const input = Array.isArray(body.input) ? body.input : [];
    if (input.some((it) => it?.type === 'compaction_trigger')) {
      const item = compactionItem(input.filter((it) => it?.type !== 'compaction_trigger'));
      compactions.push({ request: record, how: 'compaction_trigger', item });
      const response = reportDropped(record, dropped, { ...responseEnvelope(body), output: [item], usage: usageOf(input, [item]) });
      turns.push({ request: record, compaction: item, response });
      return body.stream ? sendSse(res, response) : sendJson(res, 200, response);
    }
    const index = nextTurn++;
    let turn = script[index];
    if (typeof turn === 'function') turn = await turn({ request: record, body, index, double });
    if (turn === undefined) {
      problems.push({ seq: record.seq, problem: 'script exhausted', turn: index });
      turn = { text: kExhaustedText };
    }
    if (turn.error) {
      turns.push({ request: record, turn, error: turn.error });
      return sendJson(res, turn.error.status, turn.error.body);
    }
    const response = reportDropped(record, dropped, buildOutput(turn, body, record));
    turns.push({ request: record, turn, response });
    if (!body.stream) return sendJson(res, 200, response);
    sendSse(res, response);
  }

  function sendSse(res, response) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache',
      'x-request-id': newId('req') });
    let sequence_number = 0;
    for (const event of events(response)) {
      const data = JSON.stringify({ ...event, sequence_number: sequence_number++ });
      res.write(`event: ${event.type}\ndata: ${data}\n\n`);
    }
    res.end();
  }

  // POST /v1/responses/compact: the standalone compaction endpoint. The output keeps the input's
  // user messages and ends with one compaction item standing for the rest.
  function handleCompact(record, res) {
    const body = record.json;
    if (!body || typeof body !== 'object' || typeof body.model !== 'string') {
      problems.push({ seq: record.seq, problem: 'compact body without a model' });
      return sendJson(res, 400, openAiError(400, "Missing required parameter: 'model'.",
        { code: 'missing_required_parameter', param: 'model' }).body);
    }
    const { error: bad, dropped } = verifyReasoning(body);
    if (bad) {
      problems.push({ seq: record.seq, problem: 'reasoning content not the double\'s', error: bad.body.error });
      return sendJson(res, bad.status, bad.body);
    }
    const input = typeof body.input === 'string'
      ? [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: body.input }] }]
      : (Array.isArray(body.input) ? body.input : []);
    const item = compactionItem(input);
    compactions.push({ request: record, how: 'compact', item });
    const output = [...input.filter((it) => it?.type === 'message' && it.role === 'user'), item];
    sendJson(res, 200, reportDropped(record, dropped, { id: newId('resp'), object: 'response.compaction',
      created_at: 1700000000 + turns.length, output, usage: usageOf(input, [item]) }));
  }

  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const record = {
        seq: requests.length, method: req.method, url: req.url,
        path: new URL(req.url, 'http://x').pathname, headers: { ...req.headers },
        rawHeaders: [...req.rawHeaders], rawBody, bodyText: '', json: undefined,
      };
      requests.push(record);
      try {
        record.bodyText = decodeBody(rawBody, req.headers['content-encoding']).toString('utf8');
        if (record.bodyText) record.json = JSON.parse(record.bodyText);
      } catch (e) {
        record.decodeError = String(e);
      }
      const path = record.path.replace(/\/+$/, '');
      if (req.method === 'POST' && path.endsWith('/responses/compact')) {
        try {
          handleCompact(record, res);
        } catch (e) {
          problems.push({ seq: record.seq, problem: `double failed: ${e.stack ?? e}` });
          sendJson(res, 500, openAiError(500, String(e), { type: 'server_error' }).body);
        }
      } else if (req.method === 'POST' && path.endsWith('/responses')) {
        handleResponses(record, res).catch((e) => {
          problems.push({ seq: record.seq, problem: `double failed: ${e.stack ?? e}` });
          if (!res.headersSent) sendJson(res, 500, openAiError(500, String(e), { type: 'server_error' }).body);
          else res.end();
        });
      } else if (req.method === 'GET' && path.endsWith('/models')) {
        sendJson(res, 200, { object: 'list', data: [{ id: model, object: 'model', created: 1700000000, owned_by: 'double' }] });
      } else {
        sendJson(res, 404, openAiError(404, `Unknown request URL: ${req.method} ${record.path}.`,
          { code: 'unknown_url' }).body);
      }
    });
  });
  const sockets = new Set();
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();

  const double = {
    url: `http://127.0.0.1:${port}/v1`, port, requests, problems, turns, compactions,
    // Reasoning items dropped behind a changed prefix: {index, item_id, position, reason, detail}.
    dropped: [],
    // The POST /v1/responses requests that were answered with a turn, in order.
    responseRequests: () => turns.filter((t) => t.response).map((t) => t.request),
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return double;
}

// The function_call_output (or custom_tool_call_output) item that answers `callId` in a request
// body, or undefined.
export function toolOutputFor(body, callId) {
  return (body?.input ?? []).find((it) => it && it.call_id === callId && /_output$/.test(it.type ?? ''));
}

// The text of a tool output item, whatever shape its `output` has (string, or content items).
export function outputText(item) {
  const out = item?.output;
  if (typeof out === 'string') return out;
  if (Array.isArray(out)) return out.map((p) => p.text ?? JSON.stringify(p)).join('\n');
  if (out && typeof out === 'object') return out.content ?? JSON.stringify(out);
  return '';
}

// Codex's own (client-side) compaction prompt, which opens the last input item of the request it
// compacts with (Codex 0.171, every provider but OpenAI's; `tools` is empty in that request).
export const kCodexCompactPrompt = 'You are performing a CONTEXT CHECKPOINT COMPACTION.';
// What opens the user message that carries Codex's summary in the history after the compaction.
export const kCodexSummaryPrefix = 'Another language model started to solve this problem';

function textOfMessage(item) {
  if (typeof item?.content === 'string') return item.content;
  return (item?.content ?? []).map((p) => p?.text ?? '').join('');
}

// Whether a request body is Codex's client-side compaction request: no tools offered and the last
// input item is a user message holding the compaction prompt.
export function isCompactionPrompt(body) {
  const last = Array.isArray(body?.input) ? body.input.at(-1) : undefined;
  return (!Array.isArray(body?.tools) || body.tools.length === 0) && last?.type === 'message' &&
    last.role === 'user' && textOfMessage(last).startsWith(kCodexCompactPrompt);
}

// The input item carrying Codex's post-compaction summary, or undefined.
export function summaryItem(body) {
  return (body?.input ?? []).find((it) => it?.type === 'message' && it.role === 'user' &&
    textOfMessage(it).startsWith(kCodexSummaryPrefix));
}
