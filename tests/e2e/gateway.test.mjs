// End-to-end: contextd as a gateway in front of the real @modelcontextprotocol/server-filesystem
// and server-everything (tools/npm/upstreams), driven by the official SDK client over HTTP
// (issue 6): secrets scrubbed before the agent and the database see them, budgets charged with
// proxied results, an upstream killed and restarted, progress relayed, prompts forwarded.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpServer, connectHttp, connectStdio, cleanup, textOf, tempDataDir, sdkTypes } from './harness.mjs';

const upstreams = new URL('../../tools/npm/upstreams/node_modules/@modelcontextprotocol/', import.meta.url).pathname;
const FS_SERVER = join(upstreams, 'server-filesystem/dist/index.js');
const EVERYTHING_SERVER = join(upstreams, 'server-everything/dist/index.js');
// A GitHub token shape (ghp_ + 36): the scrubber's github-pat rule.
const SECRET = 'ghp_' + 'Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa'.slice(0, 36);

function setup() {
  const files = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-gw-files-')));
  writeFileSync(join(files, 'secret.txt'), `config\napi_token_for_ci ${SECRET}\nend\n`);
  writeFileSync(join(files, 'small.txt'), 'hello from the filesystem\n');
  writeFileSync(join(files, 'big.txt'), Array.from({ length: 6000 }, (_, i) => `line ${i} of a large file with words`).join('\n'));
  const dataDir = tempDataDir();
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, [
    'upstreams:',
    '  - name: fs',
    '    stdio:',
    '      command: node',
    `      args: [${JSON.stringify(FS_SERVER)}, ${JSON.stringify(files)}]`,
    '    timeout_seconds: 20',
    '  - name: ev',
    '    stdio:',
    '      command: node',
    `      args: [${JSON.stringify(EVERYTHING_SERVER)}, stdio]`,
    '',
  ].join('\n'));
  return { files, dataDir, config };
}

async function call(client, name, args, options) {
  return client.callTool({ name, arguments: args }, undefined, options);
}

// Child processes of `pid` whose command line contains `needle`.
function childPids(pid, needle) {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)]).toString();
  return out.split('\n').filter((l) => l.includes(needle)).map((l) => Number(l.trim().split(/\s+/)[0]));
}

test('gateway: filesystem reads scrubbed, charged, exhausted; restart; progress', async () => {
  assert.ok(existsSync(FS_SERVER), 'run npm install in tools/npm/upstreams');
  const { files, dataDir, config } = setup();
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const { client } = await connectHttp(server.url);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('fs__read_text_file'), names.join(','));
    assert.ok(names.includes('ev__echo'), names.join(','));
    assert.ok(names.includes('branch_create'));

    // 1. A secret in a file is redacted before the agent sees it (read inside a branch, so the
    // scrubbed excerpt is also what the store keeps).
    const branch = await call(client, 'branch_create', { description: 'read files', prompt: 'read secret.txt', budget: 4000 });
    assert.ok(!branch.isError, textOf(branch));
    const secret = await call(client, 'fs__read_text_file', { path: join(files, 'secret.txt') });
    assert.ok(!secret.isError, textOf(secret));
    assert.ok(!textOf(secret).includes(SECRET), textOf(secret));
    assert.match(textOf(secret), /\[REDACTED:github-pat/);
    assert.match(textOf(secret), /api_token_for_ci/);
    const small = await call(client, 'fs__read_text_file', { path: join(files, 'small.txt') });
    assert.equal(textOf(small).trim(), 'hello from the filesystem');
    const ret = await call(client, 'branch_return', { message: 'read the config' });
    assert.ok(!ret.isError, textOf(ret));

    // 2. A large file inside a small branch exhausts its budget: isError instead of the content.
    const tight = await call(client, 'branch_create', { description: 'read big', prompt: 'read big.txt', budget: 300 });
    assert.ok(!tight.isError, textOf(tight));
    const big = await call(client, 'fs__read_text_file', { path: join(files, 'big.txt') });
    assert.equal(big.isError, true);
    assert.match(textOf(big), /budget exhausted/);
    assert.ok(!textOf(big).includes('line 5999 of a large file'));

    // 3. Progress of server-everything's long running operation reaches the client.
    const progress = [];
    const longOp = await call(client, 'ev__trigger-long-running-operation', { duration: 0.3, steps: 3 },
      { onprogress: (p) => progress.push(p) });
    assert.ok(!longOp.isError, textOf(longOp));
    assert.deepEqual(progress.map((p) => p.progress), [1, 2, 3]);
    assert.equal(progress[0].total, 3);

    // 3b. Upstream prompts are re-exposed; prompts/get is forwarded and its text scrubbed.
    const prompts = (await client.listPrompts()).prompts;
    const argsPrompt = prompts.find((p) => p.name === 'ev__args-prompt');
    assert.ok(argsPrompt, prompts.map((p) => p.name).join(','));
    assert.ok(argsPrompt.arguments.some((a) => a.name === 'city' && a.required));
    const got = await client.getPrompt({ name: 'ev__args-prompt', arguments: { city: SECRET } });
    const promptText = got.messages[0].content.text;
    assert.match(promptText, /^What's weather in \[REDACTED:github-pat/);
    assert.ok(!promptText.includes(SECRET), promptText);

    // 4. Kill the filesystem upstream: calls answer isError unavailable, its tools stay listed,
    // and it is restarted.
    const [fsPid] = childPids(server.proc.pid, 'server-filesystem');
    assert.ok(fsPid > 0, 'found the fs child');
    process.kill(fsPid, 'SIGKILL');
    const down = await call(client, 'fs__read_text_file', { path: join(files, 'small.txt') });
    assert.equal(down.isError, true);
    assert.match(textOf(down), /upstream fs unavailable/);
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'fs__read_text_file'));
    let again;
    for (let i = 0; i < 100; i++) {
      again = await call(client, 'fs__read_text_file', { path: join(files, 'small.txt') });
      if (!again.isError) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(textOf(again).trim(), 'hello from the filesystem');
    const [newPid] = childPids(server.proc.pid, 'server-filesystem');
    assert.ok(newPid > 0 && newPid !== fsPid);
    await client.close();
  } finally {
    await server.stop();
    // The secret never reached the database (db, wal, shm), though the scrubbed excerpt of the
    // read inside the branch did.
    let stored = Buffer.alloc(0);
    for (const f of ['contextd.db', 'contextd.db-wal', 'contextd.db-shm']) {
      const p = join(dataDir, f);
      if (existsSync(p)) stored = Buffer.concat([stored, readFileSync(p)]);
    }
    assert.ok(stored.includes('api_token_for_ci'), 'the scrubbed read was stored');
    assert.ok(!stored.includes(SECRET), 'the database holds the secret');
    assert.ok(existsSync(join(dataDir, 'contextd.db')));
    // The children are gone with the server.
    cleanup(dataDir);
    cleanup(files);
  }
});

test('gateway: server-everything sampling and elicitation reach the client whose call caused them', async () => {
  assert.ok(existsSync(EVERYTHING_SERVER), 'run npm install in tools/npm/upstreams');
  const { files, dataDir, config } = setup();
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const { client } = await connectHttp(server.url, 'e2e-sampling', { sampling: {}, elicitation: {} });
    const sampled = [];
    client.setRequestHandler(sdkTypes.CreateMessageRequestSchema, async (request) => {
      sampled.push(request.params);
      return { model: 'e2e-model', role: 'assistant', content: { type: 'text', text: 'sampled by the e2e client' } };
    });
    const elicited = [];
    client.setRequestHandler(sdkTypes.ElicitRequestSchema, async (request) => {
      elicited.push(request.params);
      return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
    });
    // A second client without those capabilities: nothing may be routed to it.
    const { client: bystander } = await connectHttp(server.url, 'e2e-bystander');
    let bystanderAsked = 0;
    bystander.fallbackRequestHandler = async () => { bystanderAsked++; return {}; };

    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('ev__trigger-sampling-request'), names.join(','));
    assert.ok(names.includes('ev__trigger-elicitation-request'), names.join(','));

    const branch = await call(client, 'branch_create', { description: 'ask the model', prompt: 'sample once', budget: 4000 });
    assert.ok(!branch.isError, textOf(branch));
    const sampling = await call(client, 'ev__trigger-sampling-request', { prompt: 'what is folding?', maxTokens: 20 });
    assert.ok(!sampling.isError, textOf(sampling));
    assert.equal(sampled.length, 1);
    assert.match(sampled[0].messages[0].content.text, /what is folding\?/);
    assert.match(textOf(sampling), /sampled by the e2e client/);

    const elicitation = await call(client, 'ev__trigger-elicitation-request', {});
    assert.ok(!elicitation.isError, textOf(elicitation));
    assert.equal(elicited.length, 1);
    assert.ok(elicited[0].requestedSchema.properties.name, JSON.stringify(elicited[0]));
    assert.match(textOf(elicitation), /Name: Ada Lovelace/);
    assert.equal(bystanderAsked, 0);

    // Both proxied results were charged to the branch.
    const status = await call(client, 'branch_status', {});
    assert.match(JSON.stringify(status.structuredContent), /"tokens_used":\s*\d{2,}/);
    await bystander.close();
    await client.close();
  } finally {
    await server.stop();
    cleanup(dataDir);
    cleanup(files);
  }
});

test('gateway over stdio: a filesystem read is scrubbed, charged to the branch and folded', async () => {
  assert.ok(existsSync(FS_SERVER), 'run npm install in tools/npm/upstreams');
  const { files, dataDir, config } = setup();
  const { client, transport } = await connectStdio({ dataDir, args: ['--config', config] });
  try {
    const branch = await call(client, 'branch_create', { description: 'read the config', prompt: 'find the token', budget: 4000 });
    assert.ok(!branch.isError, textOf(branch));
    const read = await call(client, 'fs__read_text_file', { path: join(files, 'secret.txt') });
    assert.ok(!read.isError, textOf(read));
    assert.match(textOf(read), /\[REDACTED:github-pat:/);
    assert.ok(!textOf(read).includes(SECRET));
    const status = await call(client, 'branch_status', { branch_id: branch.structuredContent.branch_id });
    assert.ok(status.structuredContent.branches[0].tokens_used > branch.structuredContent.prompt_tokens,
      JSON.stringify(status.structuredContent));
    const returned = await call(client, 'branch_return', { message: 'the token is in secret.txt (redacted)' });
    assert.ok(!returned.isError, textOf(returned));
    const view = await call(client, 'context_view', {});
    assert.match(textOf(view), /the token is in secret\.txt/);
    assert.ok(!textOf(view).includes(SECRET));
  } finally {
    await client.close();
    await transport.close?.();
    let stored = Buffer.alloc(0);
    for (const f of ['contextd.db', 'contextd.db-wal']) {
      const p = join(dataDir, f);
      if (existsSync(p)) stored = Buffer.concat([stored, readFileSync(p)]);
    }
    assert.ok(!stored.includes(Buffer.from(SECRET)), 'the secret reached the SQLite files');
    cleanup(dataDir);
    cleanup(files);
  }
});
