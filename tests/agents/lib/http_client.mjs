// What the doubles' own tests use to talk to them: a JSON POST and an SSE body split into events.
import assert from 'node:assert/strict';

// POSTs `body` as JSON to `url` and resolves with {status, type (content-type), text}.
export async function postJson(url, body, headers = {}) {
  const res = await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body),
  });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

// The events of an SSE body, checking that each `event:` line names its data's type.
export function sseEvents(text) {
  return text.split('\n\n').filter(Boolean).map((block) => {
    const [eventLine, dataLine] = block.split('\n');
    const data = JSON.parse(dataLine.replace(/^data: /, ''));
    assert.equal(eventLine, `event: ${data.type}`);
    return data;
  });
}
