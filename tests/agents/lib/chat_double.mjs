// A scripted stand-in for the OpenAI Chat Completions API on 127.0.0.1 (port 0), for driving the
// model gateway with the openai SDK offline. It plays a script of assistant turns and records every
// request byte for byte, so a test can assert on exactly what the model would have received.
//
// Served under `double.url` (ends in /v1, as an OpenAI base URL does): POST /chat/completions
// (JSON, or SSE `data:` chunks ending in `data: [DONE]`; with `stream_options.include_usage` a
// last chunk with empty choices carries the usage), GET /models. Anything else is a 404 in the
// API's error shape. Like the API, it refuses (400) a request whose tool calls and tool messages
// do not pair up: every `tool_calls` entry of an assistant message answered by a `tool` message
// before the next non-tool message, and no tool message without its call. A gateway that folds a
// branch wrongly is caught there.
//
// Script: an array of turns, played one per POST /chat/completions. A turn is
//   { text?: string,                               // the assistant's content
//     calls?: [{ name, arguments, id? }],          // tool calls (several = parallel)
//     usage?: { prompt_tokens, completion_tokens, cached_tokens },  // overrides the made-up one
//     error?: { status, body, headers? } }         // answer this HTTP error instead
// or a function (body, double) => turn, called when its request arrives. `arguments` may be an
// object (sent as JSON) or a string (sent as is). When the script runs out, the double answers
// `fallbackText` and records the request in `double.problems`.
import { createServer } from 'node:http';

export function openAiError(message, { type = 'invalid_request_error', code = null, param = null } = {}) {
  return { error: { message, type, param, code } };
}

const unanswered = (ids) => "An assistant message with 'tool_calls' must be followed by tool messages responding " +
  `to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...ids].join(', ')}`;

// Why `messages` would be refused for its tool calls and tool messages, or null.
export function pairingProblem(messages) {
  let open = null;  // ids of the last assistant message's calls not answered yet
  for (const [i, m] of (messages ?? []).entries()) {
    if (m?.role === 'tool') {
      if (!open || !open.delete(m.tool_call_id)) {
        return `messages.[${i}].role: messages with role 'tool' must be a response to a preceding message with 'tool_calls'.`;
      }
      continue;
    }
    if (open && open.size > 0) {
      return unanswered(open);
    }
    open = m?.role === 'assistant' && Array.isArray(m.tool_calls) ? new Set(m.tool_calls.map((c) => c.id)) : null;
  }
  if (open && open.size > 0) {
    return unanswered(open);
  }
  return null;
}

export async function startChatDouble({ script = [], fallbackText = 'Done.', model = 'gpt-double' } = {}) {
  const requests = [];  // {seq, method, url, path, headers, raw, json}
  const problems = [];
  let next = 0;
  let callSeq = 0;

  const sendJson = (res, status, value, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_chat_${requests.length - 1}`, ...headers });
    res.end(JSON.stringify(value));
  };

  function completion(turn, body, raw) {
    const calls = (turn.calls ?? []).map((c) => ({
      id: c.id ?? `call_double_${String(++callSeq).padStart(4, '0')}`, type: 'function',
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}) },
    }));
    const message = { role: 'assistant', content: turn.text ?? null, refusal: null, annotations: [] };
    if (calls.length) message.tool_calls = calls;
    const prompt = turn.usage?.prompt_tokens ?? Math.ceil(raw.length / 4);
    const cached = turn.usage?.cached_tokens ?? 0;
    const completionTokens = turn.usage?.completion_tokens ?? 12;
    return {
      id: `chatcmpl-double-${requests.length}`, object: 'chat.completion', created: 1700000000 + requests.length,
      model: body.model ?? model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: calls.length ? 'tool_calls' : 'stop' }],
      usage: {
        prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens,
        prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      },
      service_tier: 'default', system_fingerprint: 'fp_double',
    };
  }

  // The chunks the API streams for `done`: the role, content deltas, each call's name then its
  // arguments in pieces, the finish reason; then the usage chunk when asked for.
  function* chunks(done, includeUsage) {
    const base = { id: done.id, object: 'chat.completion.chunk', created: done.created, model: done.model,
      service_tier: 'default', system_fingerprint: 'fp_double' };
    const usage = includeUsage ? { usage: null } : {};
    const { message, finish_reason } = done.choices[0];
    const chunk = (delta, finish = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usage });
    yield chunk({ role: 'assistant', content: '', refusal: null });
    if (message.content) {
      const text = message.content;
      const cut = Math.ceil(text.length / 2);
      for (const piece of [text.slice(0, cut), text.slice(cut)]) if (piece) yield chunk({ content: piece });
    }
    for (const [index, call] of (message.tool_calls ?? []).entries()) {
      yield chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] });
      const args = call.function.arguments;
      const cut = Math.ceil(args.length / 2);
      for (const piece of [args.slice(0, cut), args.slice(cut)]) {
        if (piece) yield chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
      }
    }
    yield chunk({}, finish_reason);
    if (includeUsage) yield { ...base, choices: [], usage: done.usage };
  }

  const server = createServer((req, res) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(parts).toString('utf8');
      const url = new URL(req.url, 'http://x');
      const record = { seq: requests.length, method: req.method, url: req.url, path: url.pathname, headers: req.headers, raw, json: null };
      requests.push(record);
      try {
        if (req.method === 'GET' && url.pathname === '/v1/models') {
          return sendJson(res, 200, { object: 'list', data: [{ id: model, object: 'model', created: 1700000000, owned_by: 'double' }] });
        }
        if (req.method !== 'POST' || url.pathname !== '/v1/chat/completions') {
          return sendJson(res, 404, openAiError(`Unknown request URL: ${req.method} ${url.pathname}.`, { code: 'unknown_url' }));
        }
        let body;
        try { body = JSON.parse(raw); } catch (e) {
          return sendJson(res, 400, openAiError(`We could not parse the JSON body of your request. (${e.message})`));
        }
        record.json = body;
        const bad = pairingProblem(body.messages);
        if (bad) {
          problems.push({ seq: record.seq, problem: bad });
          return sendJson(res, 400, openAiError(bad, { param: 'messages' }));
        }
        let turn;
        if (next < script.length) {
          turn = script[next++];
          if (typeof turn === 'function') turn = turn(body, double);
        }
        if (!turn) {
          problems.push({ seq: record.seq, problem: 'script exhausted' });
          turn = { text: fallbackText };
        }
        if (turn.error) return sendJson(res, turn.error.status, turn.error.body, turn.error.headers);
        const done = completion(turn, body, raw);
        record.answer = done;
        if (!body.stream) return sendJson(res, 200, done);
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-request-id': `req_chat_${record.seq}` });
        for (const c of chunks(done, body.stream_options?.include_usage === true)) res.write(`data: ${JSON.stringify(c)}\n\n`);
        res.end('data: [DONE]\n\n');
      } catch (e) {
        return sendJson(res, 500, openAiError(`chat double failed: ${e.stack}`, { type: 'server_error' }));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const double = {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    requests, problems,
    // The POST /v1/chat/completions requests, parsed, in order.
    chatRequests: () => requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions').map((r) => r.json),
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  };
  return double;
}
