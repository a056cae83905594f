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
// signature binds it to its prefix (system, tools and the messages before it, mid-conversation
// system messages included, cache_control markers aside). A later request that carries that block after a changed prefix gets the
// provider's 400, so a client or gateway that rewrites history where it must not is caught.
import { createServer } from 'node:http';
import { createHmac, randomBytes } from 'node:crypto';
import { canonical, validate } from './messages.mjs';

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
  const secret = randomBytes(32);
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
    url: '',
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };

  const sign = (prefix, thinking) =>
    createHmac('sha256', secret).update(canonical(prefix)).update('\0').update(thinking).digest('base64');

  // Returns an error message when an assistant thinking block's signature does not match the
  // prefix it arrives after, else null.
  const verify = (body) => {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i];
      if (m?.role !== 'assistant' || !Array.isArray(m.content)) continue;
      for (let j = 0; j < m.content.length; j++) {
        const b = m.content[j];
        if (b?.type !== 'thinking') continue;
        const prefix = { system: body.system ?? null, tools: body.tools ?? null, messages: messages.slice(0, i) };
        if (b.signature !== sign(prefix, b.thinking ?? '')) {
          return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block: ` +
            'The block is bound to a different conversation';
        }
      }
    }
    return null;
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
        const bad = validate(body) ?? verify(body);
        if (bad) {
          double.errors.push(bad);
          double.refused.push({ index: requests.length - 1, url: req.url, message: bad });
          return sendError(res, 400, 'invalid_request_error', bad);
        }
        if (path === '/v1/messages/count_tokens') {
          return sendJson(res, 200, { input_tokens: Math.ceil(record.raw.length / 4) });
        }
        const hasTools = Array.isArray(body.tools) && body.tools.length > 0;
        record.sub = hasTools && matchSub(body);
        record.main = !record.sub && matchMain(body);
        const turn = record.main ? turnFor(body) : record.sub ? subTurnFor(body) : { text: sideReply };
        const content = [];
        const thinking = `Planning step ${requests.length}.`;
        if (think) content.push({ type: 'thinking', thinking, signature: sign({ system: body.system ?? null, tools: body.tools ?? null, messages: body.messages ?? [] }, thinking) });
        if (turn.text) content.push({ type: 'text', text: turn.text });
        for (const t of turn.tools ?? []) {
          content.push({ type: 'tool_use', id: `toolu_double_${String(++toolSeq).padStart(4, '0')}`, name: t.name, input: t.input ?? {} });
        }
        const message = {
          id: `msg_double_${requests.length}`, type: 'message', role: 'assistant', model: body.model ?? 'claude-double-1',
          content, stop_reason: (turn.tools ?? []).length ? 'tool_use' : 'end_turn', stop_sequence: null,
          usage: { input_tokens: Math.ceil(record.raw.length / 4), output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, ...turn.usage },
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
