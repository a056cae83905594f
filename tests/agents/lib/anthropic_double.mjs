// A scripted stand-in for the Anthropic Messages API on 127.0.0.1 (port 0), for running real
// agent CLIs offline. It plays a script of assistant turns and records every request byte for
// byte, so a test can assert on exactly what the model would have received.
//
// Served: POST /v1/messages (any query string, streaming SSE and non-streaming),
// POST /v1/messages/count_tokens, GET /v1/models, HEAD /. Anything else is a 404 in the API's
// error shape. Requests are checked as the API checks them (lib/messages.mjs: pairing, roles,
// mid-conversation `role: "system"` messages, thinking and context_management shapes).
//
// Like current Claude models, every assistant turn it returns starts with a thinking block whose
// signature binds it to its prefix and to the thinking blocks before it, by the provider's
// documented rules (lib/thinking_binding.mjs): a block behind a changed prefix (system, tools,
// earlier messages with mid-conversation system messages, thinking blocks and cache_control
// aside), a gap in the run of thinking blocks, a moved block or one put back after its removal is
// the provider's 400, so a client or gateway that rewrites history where it must not is caught.
// With `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` (and its beta) those blocks
// are dropped instead: recorded in `double.dropped` and reported in the response's
// `input_transformations`. A tool loop whose assistant messages lost the thinking they were
// produced with is answered without thinking and recorded in `double.degraded` (as adaptive
// thinking does; manual thinking's 400 too, for the reason thinking_binding.mjs gives).
import { createServer } from 'node:http';
import assert from 'node:assert/strict';
import { validate } from './messages.mjs';
import { ThinkingBinding } from './thinking_binding.mjs';

// The script: an array of turns, played in order by the requests that carry `tools` (the agent's
// main loop; side requests such as title generation have none and get `sideReply`). A turn is
//   {text: '...'}                                   a final answer
//   {tools: [{name, input}, ...], text?: '...'}     tool calls (several = parallel tool use)
//   (request, double) => turn                       computed from the request (e.g. to use an id
//                                                   that an earlier tool result carried)
// A turn's `usage` replaces fields of the usage it reports (input tokens are otherwise the
// request's characters / 4): a large input_tokens makes a client compact its context.
// When the script is exhausted, the double answers with `fallbackText`. `thinking: false` plays a
// model without extended thinking: its turns carry no thinking block.
// `subScript` plays the agent's subagents (Claude Code's Agent/Task tool): a request that carries
// tools and for which `matchSub(body)` holds takes its turns from there (`subFallbackText` after),
// so a subagent's loop does not use up the main script. Such requests are recorded with
// `sub: true` and are not main requests.
export async function startAnthropicDouble({ script = [], sideReply = 'ok', fallbackText = 'Done.',
  matchMain = (body) => Array.isArray(body.tools) && body.tools.length > 0, thinking: think = true,
  subScript = [], matchSub = () => false, subFallbackText = 'Subagent done.' } = {}) {
  const binding = new ThinkingBinding();
  const requests = [];
  let next = 0;
  let nextSub = 0;
  let toolSeq = 0;
  const double = {
    requests,
    // The main-loop requests, in order, parsed.
    mainRequests: () => requests.filter((r) => r.main).map((r) => r.json),
    // The subagents' requests, in order, parsed.
    subRequests: () => requests.filter((r) => r.sub).map((r) => r.json),
    // What the double refused (400 messages), in order; `refused` has {index, url, message}.
    errors: [],
    refused: [],
    // Thinking blocks it dropped (drop_block): {index (of the request), path, reason}.
    dropped: [],
    // Requests answered without thinking because a tool loop lost its thinking (adaptive):
    // {index, message}.
    degraded: [],
    binding,
    url: '',
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };

  const turnFor = (body) => {
    if (next >= script.length) return { text: fallbackText };
    let turn = script[next++];
    if (typeof turn === 'function') turn = turn(body, double);
    return turn ?? { text: fallbackText };
  };
  const subTurnFor = (body) => {
    if (nextSub >= subScript.length) return { text: subFallbackText };
    let turn = subScript[nextSub++];
    if (typeof turn === 'function') turn = turn(body, double);
    return turn ?? { text: subFallbackText };
  };

  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const record = { method: req.method, url: req.url, headers: req.headers, raw: raw.toString('utf8'), json: null, main: false };
      requests.push(record);
      const path = (req.url ?? '').split('?')[0];
      try {
        if (req.method === 'HEAD' && path === '/') { res.writeHead(200); res.end(); return; }
        if (req.method === 'GET' && path === '/v1/models') {
          return sendJson(res, 200, { data: [{ type: 'model', id: 'claude-double-1', display_name: 'Double', created_at: '2026-01-01T00:00:00Z' }], has_more: false, first_id: 'claude-double-1', last_id: 'claude-double-1' });
        }
        if (req.method !== 'POST' || (path !== '/v1/messages' && path !== '/v1/messages/count_tokens')) {
          return sendError(res, 404, 'not_found_error', `${req.method} ${path} is not served by the model double`);
        }
        let body;
        try { body = JSON.parse(record.raw); } catch (e) { return sendError(res, 400, 'invalid_request_error', `invalid JSON: ${e.message}`); }
        record.json = body;
        // count_tokens takes the same messages as /v1/messages (system messages, context
        // management and thinking included) and checks them the same way.
        const bad = validate(body, req.headers);
        const bound = bad ? null : binding.check(body, req.headers);
        const refusal = bad ?? bound.error;
        if (refusal) {
          double.errors.push(refusal);
          double.refused.push({ index: requests.length - 1, url: req.url, message: refusal });
          return sendError(res, 400, 'invalid_request_error', refusal);
        }
        const index = requests.length - 1;
        for (const d of bound.dropped) double.dropped.push({ index, ...d });
        if (bound.degraded) double.degraded.push({ index, message: bound.degraded });
        if (path === '/v1/messages/count_tokens') {
          return sendJson(res, 200, { input_tokens: Math.ceil(record.raw.length / 4) });
        }
        const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
        record.sub = hasTools && matchSub(body);
        record.main = !record.sub && matchMain(body);
        const turn = record.main ? turnFor(body) : record.sub ? subTurnFor(body) : { text: sideReply };
        const content = [];
        if (think && !bound.degraded) content.push({ type: 'thinking', thinking: `Planning step ${requests.length}.` });
        if (turn.text) content.push({ type: 'text', text: turn.text });
        for (const t of turn.tools ?? []) {
          content.push({ type: 'tool_use', id: `toolu_double_${String(++toolSeq).padStart(4, '0')}`, name: t.name, input: t.input ?? {} });
        }
        const message = {
          id: `msg_double_${requests.length}`, type: 'message', role: 'assistant', model: body.model ?? 'claude-double-1',
          content: binding.signContent(bound.body, content), stop_reason: (turn.tools ?? []).length ? 'tool_use' : 'end_turn', stop_sequence: null,
          usage: { input_tokens: Math.ceil(record.raw.length / 4), output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, ...turn.usage },
          ...(bound.transformations ? { input_transformations: bound.transformations } : {}),
        };
        if (body.stream) return streamMessage(res, message);
        return sendJson(res, 200, message);
      } catch (e) {
        return sendError(res, 500, 'api_error', `model double failed: ${e.stack}`);
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  double.url = `http://127.0.0.1:${server.address().port}`;
  return double;
}

// Asserts that the double changed nothing of what it was sent about thinking: no block dropped,
// no request answered without thinking (what a test that asserts no refusal also means).
export function assertThinkingKept(double, message = '') {
  assert.deepEqual({ dropped: double.dropped, degraded: double.degraded }, { dropped: [], degraded: [] }, message);
}

function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_double_${Date.now()}` });
  res.end(body);
}

function sendError(res, status, type, message) {
  sendJson(res, status, { type: 'error', error: { type, message } });
}

// The Messages streaming protocol: message_start, per block content_block_start / deltas /
// content_block_stop, message_delta (stop_reason, usage), message_stop.
function streamMessage(res, message) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } });
  event('ping', {});
  message.content.forEach((block, index) => {
    if (block.type === 'thinking') {
      event('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      event('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking } });
      event('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } });
    } else if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text: block.text } });
    } else if (block.type === 'tool_use') {
      event('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: message.usage.output_tokens } });
  event('message_stop', {});
  res.end();
}
