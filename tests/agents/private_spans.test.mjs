// <private>...</private> text is never written anywhere, yet what the model receives is unchanged
// (docs/privacy.md). Through the real contextd binary:
// - model gateway (raw fetch -> contextd -> the scripted Anthropic double) with contextd's MCP
//   tools called over HTTP: a user message and a built-in tool result holding private text (and
//   secrets inside and outside the span), a branch whose description, prompt and summary hold
//   private text (read inside the branch in its isolated view), its span charged, the branch
//   folded; then a restart on the same data dir. The
//   double receives the private text unchanged (secrets redacted as always), the prefix stays
//   byte-identical after the restart (the double refuses a thinking block behind a changed one);
// - MCP gateway (the SDK client -> contextd -> server-filesystem): a file with private text read
//   outside a branch (auto-scope) and inside one; the client receives it unchanged; a memory
//   recorded with private text.
// After each server stops, no file of its data dir (contextd.db, -wal, the search index,
// originals/...) holds a marker, and no archived original (decrypted with `contextd archive
// reveal`) does, while the secrets outside the spans are archived as before.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { branchIdIn, messageText, kViewOpening } from './lib/transcript.mjs';
import { BINARY, startHttpServer, connectHttp, cleanup, tempDataDir, textOf } from '../e2e/harness.mjs';

const FS_SERVER = new URL('../../tools/npm/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
  import.meta.url).pathname;
const missing = existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`;

const marker = (tag) => `UNIQUE-MARKER-${tag}-c0ffee`;
// GitHub token shapes (ghp_ + 36): the scrubber's github-pat rule.
const token = (c) => `ghp_${c}7Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa`.slice(0, 40);
const REDACTED = '[REDACTED:github-pat:ghp_]';

// Every regular file under `dir` (recursively) as [path, bytes].
function filesUnder(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    if (st.isDirectory()) out.push(...filesUnder(path));
    else if (st.isFile()) out.push([path, readFileSync(path)]);
  }
  return out;
}

// Fails when a file of `dataDir` or an archived original holds one of `markers`; returns the
// decrypted originals.
function assertNothingKept(dataDir, keyFile, markers) {
  const files = filesUnder(dataDir);
  assert.ok(files.some(([p]) => p.endsWith('contextd.db')), files.map(([p]) => p).join('\n'));
  for (const [path, bytes] of files) {
    for (const m of markers) {
      assert.equal(bytes.indexOf(Buffer.from(m)), -1, `${m} is in ${path}`);
    }
  }
  const ids = execFileSync(BINARY, ['archive', 'list', '--data-dir', dataDir]).toString().split('\n').filter(Boolean);
  const originals = ids.map((id) => execFileSync(BINARY, ['archive', 'reveal', '--data-dir', dataDir, '--key-file', keyFile, id]).toString());
  for (const original of originals) {
    for (const m of markers) assert.ok(!original.includes(m), `${m} is in an archived original:\n${original}`);
  }
  return originals;
}

function keyFileIn(dir) {
  const keyFile = join(dir, 'archive.key');
  execFileSync(BINARY, ['archive', 'keygen', '--key-file', keyFile], { stdio: 'ignore' });
  return keyFile;
}

const TOOLS = [
  { name: 'mcp__contextd__branch_create', description: 'Open a branch',
    input_schema: { type: 'object', properties: { description: { type: 'string' }, prompt: { type: 'string' } } } },
  { name: 'mcp__contextd__branch_return', description: 'Return from the branch',
    input_schema: { type: 'object', properties: { message: { type: 'string' } } } },
  { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } },
];

async function post(origin, messages) {
  const res = await fetch(`${origin}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test-key', 'anthropic-version': '2023-06-01',
      'x-claude-code-session-id': 'private-spans-1' },
    body: JSON.stringify({ model: 'claude-double-1', max_tokens: 256, system: 'You are a test.', tools: TOOLS, messages }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return JSON.parse(text);
}

const useOf = (reply, name) => reply.content.find((b) => b.type === 'tool_use' && b.name === name);
const withoutMarkers = (messages) => messages.map((m) => {
  const copy = structuredClone(m);
  for (const b of Array.isArray(copy.content) ? copy.content : []) delete b.cache_control;
  return copy;
});

test('model gateway: private text reaches the model unchanged and no storage keeps it, across a restart', { skip: missing ?? false, timeout: 120000 }, async () => {
  const dataDir = tempDataDir();
  const keyFile = keyFileIn(dataDir);
  const M = { user: marker('user'), tool: marker('tool'), desc: marker('desc'), prompt: marker('prompt'),
    summary: marker('summary'), later: marker('later') };
  const createInput = { description: `find the port <private>${M.desc}</private>`,
    prompt: `read config.txt <private>${M.prompt}</private>` };
  const returnInput = { message: `port is 8080 <private>${M.summary}</private>` };
  const double = await startAnthropicDouble({
    script: [
      { tools: [{ name: 'mcp__contextd__branch_create', input: createInput },
        { name: 'Read', input: { file_path: '/w/config.txt' } }] },
      { tools: [{ name: 'mcp__contextd__branch_return', input: returnInput }] },
      { text: 'The port is 8080.' },
    ],
  });
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['model_gateway:', '  anthropic:', `    base_url: ${double.url}`,
    'scrub:', '  archive_originals: true', `  key_file: ${keyFile}`, ''].join('\n'));
  let server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const origin = new URL(server.url).origin;
    const { client } = await connectHttp(server.url);
    const userText = `Find the port. <private>${M.user} my token ${token('a')}</private> public ${token('b')}`;
    const messages = [{ role: 'user', content: [{ type: 'text', text: userText }] }];
    const r1 = await post(origin, messages);
    const create = useOf(r1, 'mcp__contextd__branch_create');
    const read = useOf(r1, 'Read');
    assert.ok(create && read, JSON.stringify(r1.content));

    // The agent runs the calls: contextd's branch_create over MCP, its built-in Read itself.
    const created = await client.callTool({ name: 'branch_create', arguments: createInput });
    assert.ok(!created.isError, textOf(created));
    const branch = branchIdIn(textOf(created));
    assert.ok(branch, textOf(created));
    const readResult = `port = 8080\n<private>${M.tool} ${token('c')}</private>\ngithub ${token('d')}\n`;
    messages.push({ role: 'assistant', content: r1.content });
    messages.push({ role: 'user', content: [
      { type: 'tool_result', tool_use_id: create.id, content: textOf(created) },
      { type: 'tool_result', tool_use_id: read.id, content: readResult }] });
    const r2 = await post(origin, messages);
    const ret = useOf(r2, 'mcp__contextd__branch_return');
    assert.ok(ret, JSON.stringify(r2.content));
    const returned = await client.callTool({ name: 'branch_return', arguments: returnInput });
    assert.ok(!returned.isError, textOf(returned));
    // The summary is the branch from now on: the reply carries it as stored.
    assert.ok(textOf(returned).includes('port is 8080 <private>[withheld]</private>'), textOf(returned));
    messages.push({ role: 'assistant', content: r2.content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: ret.id, content: textOf(returned) }] });
    const r3 = await post(origin, messages);
    assert.equal(r3.content.at(-1).text, 'The port is 8080.');

    // What the model received: the private text as sent, secrets redacted inside and out.
    const [q1, q2, q3] = double.requests.filter((r) => r.main);
    assert.equal(q1.json.messages[0].content[0].text,
      `Find the port. <private>${M.user} my token ${REDACTED}</private> public ${REDACTED}`);
    // Inside the branch the model reads its isolated view (issue 33): the read's result is in the
    // user message that opens the branch, with its description and prompt, private text as sent.
    const opening = messageText(q2.json.messages.at(-1));
    assert.ok(opening.startsWith(`${kViewOpening}${branch}`), opening);
    assert.ok(opening.includes(`port = 8080\n<private>${M.tool} ${REDACTED}</private>\ngithub ${REDACTED}\n`), opening);
    assert.ok(opening.includes(createInput.description) && opening.includes(createInput.prompt), opening);
    // The fold: the branch's work is gone, its stored summary stands for it.
    assert.ok(!q3.raw.includes(M.tool), 'the branch folded away');
    assert.ok(q3.raw.includes('port is 8080 <private>[withheld]</private>'), q3.raw);
    assert.ok(q3.raw.includes(M.user), 'the first message is kept as sent');
    await client.close();

    // A restart on the same data dir: the stored decisions (the redaction of the first message,
    // the fold) are repeated byte for byte; the double would refuse a changed prefix.
    assert.equal((await server.stop()).code, 0);
    server = await startHttpServer({ dataDir, args: ['--config', config] });
    messages.push({ role: 'assistant', content: r3.content });
    messages.push({ role: 'user', content: [{ type: 'text', text: `thanks <private>${M.later}</private>` }] });
    await post(new URL(server.url).origin, messages);
    assert.deepEqual(double.errors, []);
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    const q4 = double.requests.filter((r) => r.main).at(-1);
    const kept = q3.json.messages.length;
    assert.deepEqual(withoutMarkers(q4.json.messages.slice(0, kept)), withoutMarkers(q3.json.messages));
    assert.ok(q4.raw.includes(M.later));
    assert.equal((await server.stop()).code, 0);
    server = null;

    const originals = assertNothingKept(dataDir, keyFile, Object.values(M));
    // The secrets outside the spans were archived (with the spans withheld); the ones inside not.
    assert.ok(originals.some((o) => o.includes(token('b')) && o.includes('<private>[withheld]</private>')),
      originals.join('\n---\n'));
    assert.ok(originals.some((o) => o.includes(token('d'))), originals.join('\n---\n'));
    assert.ok(!originals.some((o) => o.includes(token('a')) || o.includes(token('c'))), originals.join('\n---\n'));
  } finally {
    if (server) await server.stop();
    await double.close();
    cleanup(dataDir);
  }
});

test('MCP gateway: an upstream result with private text reaches the client and no storage', { skip: missing ?? (existsSync(FS_SERVER) ? false : 'tools/npm/upstreams is not installed'), timeout: 90000 }, async () => {
  const files = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-private-files-')));
  const M = { file: marker('file'), desc: marker('mcp-desc'), summary: marker('mcp-summary'), arg: marker('arg'),
    memory: marker('memory') };
  const content = `host = db.local\n<private>${M.file} ${token('e')}</private>\ntoken ${token('f')}\n`;
  writeFileSync(join(files, 'private.txt'), content);
  const dataDir = tempDataDir();
  const keyFile = keyFileIn(dataDir);
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['upstreams:', '  - name: fs', '    stdio:', '      command: node',
    `      args: [${JSON.stringify(FS_SERVER)}, ${JSON.stringify(files)}]`, '    timeout_seconds: 20',
    'trail:', '  auto_scope_upstreams: true',
    'scrub:', '  archive_originals: true', `  key_file: ${keyFile}`, ''].join('\n'));
  let server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const { client } = await connectHttp(server.url);
    const expected = `host = db.local\n<private>${M.file} ${REDACTED}</private>\ntoken ${REDACTED}\n`;
    // Outside any branch: an auto-scope, whose summary samples the arguments.
    const outside = await client.callTool({ name: 'fs__read_text_file', arguments: { path: join(files, 'private.txt') } });
    assert.equal(textOf(outside), expected);
    const missingFile = await client.callTool({ name: 'fs__read_text_file',
      arguments: { path: join(files, `<private>${M.arg}</private>.txt`) } });
    assert.ok(missingFile.isError, textOf(missingFile));
    const created = await client.callTool({ name: 'branch_create', arguments: {
      description: `inspect <private>${M.desc}</private>`, prompt: 'read private.txt' } });
    assert.ok(!created.isError, textOf(created));
    const inside = await client.callTool({ name: 'fs__read_text_file', arguments: { path: join(files, 'private.txt') } });
    assert.equal(textOf(inside), expected);
    const returned = await client.callTool({ name: 'branch_return', arguments: { message: `host db.local <private>${M.summary}</private>` } });
    assert.ok(!returned.isError, textOf(returned));
    const view = await client.callTool({ name: 'context_view', arguments: {} });
    assert.ok(!textOf(view).includes(M.file), textOf(view));
    // A memory recorded with private text keeps it withheld.
    const recorded = await client.callTool({ name: 'memory_record', arguments: {
      title: `db host <private>${M.memory}</private>`, description: 'When the db host is needed.',
      content: `Read private.txt. <private>${M.memory}</private>` } });
    assert.ok(!recorded.isError, textOf(recorded));
    const found = await client.callTool({ name: 'memory_search', arguments: { query: 'db host private.txt' } });
    assert.ok(textOf(found).includes('db host <private>[withheld]</private>'), textOf(found));
    await client.close();
    assert.equal((await server.stop()).code, 0);
    server = null;
    const originals = assertNothingKept(dataDir, keyFile, Object.values(M));
    assert.ok(originals.some((o) => o.includes(token('f'))), originals.join('\n---\n'));
    assert.ok(!originals.some((o) => o.includes(token('e'))), originals.join('\n---\n'));
  } finally {
    if (server) await server.stop();
    cleanup(dataDir);
    cleanup(files);
  }
});
