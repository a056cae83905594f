// The Responses API double on its own (no agent): the SSE it streams, the JSON it answers without
// streaming, its 404s, the reasoning binding that drops (and reports) a replayed reasoning item
// whose prefix (instructions, tools, earlier input items) changed, and compaction as the API and
// Codex do it (a tool-less summarisation request, /responses/compact, compaction_trigger,
// context_management).
// Run: node --test tests/agents/
import test from 'node:test';
import assert from 'node:assert/strict';
import { postJson, sseEvents } from './lib/http_client.mjs';
import { startResponsesDouble, toolOutputFor, outputText, kExhaustedText, isCompactionPrompt, kCodexCompactPrompt }
  from './lib/responses_double.mjs';

const post = (double, body, path = '/responses') => postJson(`${double.url}${path}`, body, { authorization: 'Bearer k' });

const sse = sseEvents;

const kTools = [{ type: 'function', name: 'read', parameters: { type: 'object', properties: {} } }];
const kInput = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }];

test('streams a turn: reasoning, parallel function calls, text, then response.completed with usage', async () => {
  const double = await startResponsesDouble({ script: [{
    reasoning: 'think', text: 'calling both',
    calls: [{ name: 'read', arguments: { path: 'a' } }, { name: 'read', arguments: '{"path":"b"}', call_id: 'c2' }],
  }] });
  try {
    const res = await post(double, { model: 'm', stream: true, input: kInput, tools: kTools });
    assert.equal(res.status, 200);
    assert.match(res.type, /text\/event-stream/);
    const events = sse(res.text);
    assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
    assert.equal(events[0].type, 'response.created');
    assert.equal(events.at(-1).type, 'response.completed');
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    assert.deepEqual(done.map((i) => i.type), ['reasoning', 'function_call', 'function_call', 'message']);
    assert.ok(done[0].encrypted_content, 'the reasoning item carries encrypted content');
    assert.equal(done[2].call_id, 'c2');
    const args = events.filter((e) => e.type === 'response.function_call_arguments.delta' && e.item_id === done[1].id);
    assert.equal(args.map((e) => e.delta).join(''), '{"path":"a"}');
    const text = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
    assert.equal(text, 'calling both');
    const { response } = events.at(-1);
    assert.deepEqual(response.output, done);
    assert.ok(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
    assert.equal(response.usage.total_tokens, response.usage.input_tokens + response.usage.output_tokens);
    assert.equal(double.requests[0].headers.authorization, 'Bearer k');
    assert.deepEqual(double.requests[0].json.input, kInput);
  } finally {
    await double.close();
  }
});

test('answers JSON without stream, models on GET, OpenAI-shaped 404s, and says when the script ran out', async () => {
  const double = await startResponsesDouble({ script: [({ body, index }) => ({ text: `turn ${index} for ${body.model}` })] });
  try {
    const res = await post(double, { model: 'm', input: kInput });
    assert.equal(res.status, 200);
    const body = JSON.parse(res.text);
    assert.equal(body.object, 'response');
    assert.equal(body.status, 'completed');
    assert.equal(body.output.at(-1).content[0].text, 'turn 0 for m');
    const models = await fetch(`${double.url}/models`);
    assert.equal(models.status, 200);
    assert.equal((await models.json()).object, 'list');
    const missing = await post(double, {}, '/chat/completions');
    assert.equal(missing.status, 404);
    assert.equal(JSON.parse(missing.text).error.type, 'invalid_request_error');
    const extra = await post(double, { model: 'm', input: kInput });
    assert.equal(JSON.parse(extra.text).output.at(-1).content[0].text, kExhaustedText);
    assert.deepEqual(double.problems.map((p) => p.problem), ['script exhausted']);
    assert.deepEqual(double.requests.map((r) => `${r.method} ${r.path}`),
      ['POST /v1/responses', 'GET /v1/models', 'POST /v1/chat/completions', 'POST /v1/responses']);
  } finally {
    await double.close();
  }
});

test('a replayed reasoning item is kept behind its own prefix, dropped and reported behind a changed one', async () => {
  const script = Array.from({ length: 10 }, () => ({ calls: [{ name: 'read', arguments: {}, call_id: 'c1' }] }));
  const double = await startResponsesDouble({ script });
  try {
    const first = JSON.parse((await post(double, { model: 'm', instructions: 'be brief', input: kInput, tools: kTools })).text);
    const history = [...kInput, ...first.output, { type: 'function_call_output', call_id: 'c1', output: 'file a' }];
    const next = { model: 'm', instructions: 'be brief', tools: kTools, input: history };
    assert.equal(toolOutputFor(next, 'c1').output, 'file a');
    assert.equal(outputText(toolOutputFor(next, 'c1')), 'file a');
    const rsId = first.output[0].id;

    // Unchanged (even with the keys of an item reordered): kept, and nothing is reported.
    const same = await post(double, next);
    assert.equal(same.status, 200);
    assert.equal(JSON.parse(same.text).input_transformations, undefined);
    const reordered = structuredClone(next);
    reordered.input[0] = { content: kInput[0].content, role: 'user', type: 'message' };
    assert.equal((await post(double, reordered)).status, 200);
    assert.deepEqual(double.dropped, []);

    // "OpenAI will drop reasoning items that follow a prefix change": answered, the item dropped.
    const dropped = async (body, why, position = 1) => {
      const res = await post(double, body);
      assert.equal(res.status, 200, `${why}: ${res.text}`);
      assert.deepEqual(JSON.parse(res.text).input_transformations,
        [{ type: 'reasoning', id: rsId, action: 'removed', reason: 'prefix_changed' }], why);
      assert.deepEqual(double.dropped.at(-1), { index: double.requests.length - 1, item_id: rsId, position,
        reason: 'prefix_changed', detail: { producedBy: 0, itemsThen: 1, itemsNow: position } }, why);
    };
    const edited = structuredClone(next);
    edited.input[0].content[0].text = 'hi (rewritten by a gateway)';
    await dropped(edited, 'an earlier input item changed');
    await dropped({ ...next, tools: [...kTools, { type: 'function', name: 'extra', parameters: {} }] }, 'the tools changed');
    await dropped({ ...next, instructions: 'be verbose' }, 'the instructions changed');
    await dropped({ ...next, input: history.slice(1) }, 'an earlier item was dropped', 0);
    assert.equal(double.dropped.length, 4);

    // Every reasoning item after a dropped one is dropped too, though its own prefix holds.
    const second = JSON.parse((await post(double, edited)).text);
    const longer = [...edited.input, ...second.output, { type: 'function_call_output', call_id: 'c1', output: 'file b' }];
    const both = JSON.parse((await post(double, { ...next, input: longer })).text);
    assert.deepEqual(both.input_transformations.map((t) => t.id), [rsId, second.output[0].id]);
    const streamed = sse((await post(double, { ...next, input: longer, stream: true })).text);
    assert.deepEqual(streamed.at(-1).response.input_transformations, both.input_transformations);

    // Encrypted content the double did not make is still refused.
    const tampered = structuredClone(next);
    tampered.input[1].encrypted_content = 'not-ours';
    const forged = structuredClone(next);
    const sealed = JSON.parse(Buffer.from(forged.input[1].encrypted_content, 'base64url').toString('utf8'));
    forged.input[1].encrypted_content = Buffer.from(JSON.stringify({ ...sealed, n: 0 })).toString('base64url');
    for (const [body, why] of [[tampered, 'not the double\'s'], [forged, 'forged fields']]) {
      const res = await post(double, body);
      assert.equal(res.status, 400, why);
      const { error } = JSON.parse(res.text);
      assert.equal(error.type, 'invalid_request_error', why);
      assert.equal(error.code, 'invalid_encrypted_content', why);
      assert.match(error.message, /could not be decrypted/, why);
    }
    assert.deepEqual(double.problems.map((p) => p.problem), ['reasoning content not the double\'s', 'reasoning content not the double\'s']);
  } finally {
    await double.close();
  }
});

test('compaction: a tool-less request may replay reasoning made with tools, behind the same items only', async () => {
  const double = await startResponsesDouble({ script: [
    { calls: [{ name: 'read', arguments: {}, call_id: 'c1' }] },
    ({ body }) => ({ text: isCompactionPrompt(body) ? 'the summary' : 'not a compaction' }),
    { text: 'unused' },
  ] });
  try {
    const first = JSON.parse((await post(double, { model: 'm', input: kInput, tools: kTools })).text);
    const prompt = { type: 'message', role: 'user', content: [{ type: 'input_text', text: `${kCodexCompactPrompt} Create a handoff summary.` }] };
    const history = [...kInput, ...first.output, { type: 'function_call_output', call_id: 'c1', output: 'file a' }, prompt];
    // Codex's client-side compaction: the whole history, `tools: []`, the prompt last.
    const res = await post(double, { model: 'm', tools: [], input: history });
    assert.equal(res.status, 200, res.text);
    assert.equal(JSON.parse(res.text).output.at(-1).content[0].text, 'the summary');
    assert.deepEqual(double.dropped, []);
    // Without tools the items before the reasoning item still bind it.
    const edited = structuredClone(history);
    edited[0].content[0].text = 'hi (rewritten)';
    const dropped = await post(double, { model: 'm', tools: [], input: edited });
    assert.equal(dropped.status, 200);
    assert.deepEqual(JSON.parse(dropped.text).input_transformations.map((t) => t.id), [first.output[0].id]);
    assert.equal(double.dropped.length, 1);
    assert.equal(double.compactions.length, 0, 'a client-side compaction is an ordinary turn');
  } finally {
    await double.close();
  }
});

test('compaction: /responses/compact, a compaction_trigger item and context_management answer a sealed compaction item', async () => {
  const double = await startResponsesDouble({ script: [
    { calls: [{ name: 'read', arguments: {}, call_id: 'c1' }] },
    { text: 'after the compaction' },
    { text: 'over the threshold' },
  ] });
  try {
    const first = JSON.parse((await post(double, { model: 'm', input: kInput, tools: kTools })).text);
    const history = [...kInput, ...first.output, { type: 'function_call_output', call_id: 'c1', output: 'file a' }];

    // The standalone endpoint: JSON, the user messages kept, one compaction item last.
    const compact = await post(double, { model: 'm', tools: kTools, input: history }, '/responses/compact');
    assert.equal(compact.status, 200, compact.text);
    const compacted = JSON.parse(compact.text);
    assert.equal(compacted.object, 'response.compaction');
    assert.deepEqual(compacted.output.map((i) => i.type), ['message', 'compaction']);
    assert.deepEqual(compacted.output[0], kInput[0]);
    assert.ok(compacted.usage.input_tokens > 0);
    assert.equal((await post(double, { tools: kTools, input: history }, '/responses/compact')).status, 400, 'model is required');

    // Codex's remote_compaction_v2: the history and a compaction_trigger item, streamed; exactly one
    // compaction item comes back, and no script turn is taken.
    const trigger = await post(double, { model: 'm', stream: true, tools: kTools,
      input: [...history, { type: 'compaction_trigger' }] });
    assert.equal(trigger.status, 200);
    const events = sse(trigger.text);
    assert.equal(events.at(-1).type, 'response.completed');
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    assert.deepEqual(done.map((i) => i.type), ['compaction']);
    assert.equal(events.filter((e) => e.type === 'response.output_item.added').length, 1);

    // The history after it starts from the compaction item: accepted, and the script goes on.
    const next = await post(double, { model: 'm', tools: kTools, input: [...kInput, done[0]] });
    assert.equal(next.status, 200, next.text);
    assert.equal(JSON.parse(next.text).output.at(-1).content[0].text, 'after the compaction');
    const forged = { ...done[0], encrypted_content: Buffer.from('{"v":1,"kind":"compaction"}').toString('base64url') };
    const refused = await post(double, { model: 'm', tools: kTools, input: [...kInput, forged] });
    assert.equal(refused.status, 400);
    assert.equal(JSON.parse(refused.text).error.code, 'invalid_encrypted_content');

    // Server-side compaction: over the threshold, a compaction item opens the output.
    const over = JSON.parse((await post(double, { model: 'm', tools: kTools, input: history,
      context_management: [{ type: 'compaction', compact_threshold: 10 }] })).text);
    assert.deepEqual(over.output.map((i) => i.type), ['compaction', 'reasoning', 'message']);
    assert.deepEqual(double.compactions.map((c) => c.how), ['compact', 'compaction_trigger', 'context_management']);
  } finally {
    await double.close();
  }
});
