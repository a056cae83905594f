// End-to-end: the replay benchmark's parts (bench/replay) against the built binary. A short
// synthetic trajectory, written here, is served by bench/replay/replay_upstream.mjs behind contextd
// (stdio, official SDK client); its exploration segment is folded into a branch. Checks that every
// recorded result comes back verbatim through contextd and that context_view's folded total is
// below the unfolded one.
import test from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectStdio, cleanup, textOf, tempDataDir } from './harness.mjs';
import { recordedCalls } from '../../bench/replay/trajectory.mjs';
import { classify, segment, summaryText, Kind, SegmentKind } from '../../bench/replay/segment.mjs';

const UPSTREAM = new URL('../../bench/replay/replay_upstream.mjs', import.meta.url).pathname;

const bigFile = Array.from({ length: 400 }, (_, i) => `${i + 1}\tdef helper_${i}(x):  # line of a source file`).join('\n');
const trajectory = {
  id: 'synthetic/replay-1',
  steps: [
    { role: 'assistant', tool_name: 'ls', args: { command: 'ls src' }, content: 'THOUGHT: look around.\n\n```bash\nls src\n```' },
    { role: 'tool', tool_name: 'ls', args: null, content: '<returncode>0</returncode>\n<output>\nparser.py\nlexer.py\n</output>' },
    { role: 'assistant', tool_name: 'grep', args: { command: 'grep -n "def parse" src/*.py' }, content: 'THOUGHT: find parse.' },
    { role: 'tool', tool_name: 'grep', args: null, content: '<returncode>0</returncode>\n<output>\nsrc/parser.py:12:def parse(text):\n</output>' },
    { role: 'assistant', tool_name: 'nl', args: { command: "nl -ba src/parser.py | sed -n '1,400p'" }, content: 'THOUGHT: read it.' },
    { role: 'tool', tool_name: 'nl', args: null, content: `<returncode>0</returncode>\n<output>\n${bigFile}\n</output>` },
    { role: 'assistant', tool_name: 'sed', args: { command: "sed -i 's/x + 1/x + 2/' src/parser.py" }, content: 'THOUGHT: parse() in src/parser.py adds 1 where it should add 2; fix line 12.\n\n```bash\nsed -i \'s/x + 1/x + 2/\' src/parser.py\n```' },
    { role: 'tool', tool_name: 'sed', args: null, content: '<returncode>0</returncode>\n<output>\n</output>' },
    { role: 'assistant', tool_name: 'submit', args: { command: 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached' }, content: 'THOUGHT: done.' },
    { role: 'tool', tool_name: 'submit', args: null, content: 'diff --git a/src/parser.py b/src/parser.py\n-    return x + 1\n+    return x + 2\n' },
  ],
};

test('replay: a recorded trajectory through the replay upstream; results verbatim; exploration folds', async () => {
  const dataDir = tempDataDir();
  const file = join(dataDir, 'trajectories.jsonl');
  writeFileSync(file, JSON.stringify(trajectory) + '\n');
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['upstreams:', '  - name: replay', '    stdio:',
    `      command: ${JSON.stringify(process.execPath)}`,
    `      args: [${JSON.stringify(UPSTREAM)}, ${JSON.stringify(file)}, ${JSON.stringify(trajectory.id)}]`,
    'context_folding:', '  branch_creation_rate_limit: 1000/minute', ''].join('\n'));
  const calls = recordedCalls(trajectory);
  const { segments } = segment(calls);
  assert.deepEqual(segments, [{ start: 0, end: 3, kind: SegmentKind.FILE_EXPLORATION }]);

  const { client } = await connectStdio({ dataDir, args: ['--config', config] });
  try {
    let names = [];
    for (let i = 0; i < 200 && !names.includes('replay__bash'); i++) {
      names = (await client.listTools()).tools.map((t) => t.name);
      if (!names.includes('replay__bash')) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(names.includes('replay__bash'), names.join(','));

    const summary = 'parse() in src/parser.py adds 1 where it should add 2; fix line 12.';
    const br = await client.callTool({ name: 'branch_create', arguments: { description: 'explore the parser', prompt: 'find parse()', inject_memories: false } });
    assert.ok(!br.isError, textOf(br));
    for (const [i, c] of calls.entries()) {
      const r = await client.callTool({ name: 'replay__bash', arguments: { command: c.command } });
      assert.ok(!r.isError, textOf(r));
      assert.equal(textOf(r), c.observation, `step ${i} came back verbatim`);
      if (i === 2) {
        const ret = await client.callTool({ name: 'branch_return', arguments: { message: summary } });
        assert.ok(!ret.isError, textOf(ret));
      }
    }
    const past = await client.callTool({ name: 'replay__bash', arguments: { command: 'ls' } });
    assert.equal(past.isError, true);
    assert.match(textOf(past), /all 5 recorded steps were served/);

    const view = await client.callTool({ name: 'context_view', arguments: {} });
    const v = view.structuredContent;
    assert.ok(v.tokens_folded < v.tokens_unfolded, JSON.stringify(v));
    assert.ok(v.tokens_unfolded - v.tokens_folded > 4000, `the 400-line read folds away: ${JSON.stringify(v)}`);
    assert.ok(textOf(view).includes(summary), textOf(view));
    assert.ok(!textOf(view).includes('def helper_399'), 'the folded read is not in the view');
    assert.ok(textOf(view).includes('git diff --cached'), 'the submission stays in the main context');
    await client.close();
  } finally {
    cleanup(dataDir);
  }
});

test('replay: the segmentation rule classifies commands by what they do', () => {
  const cases = [
    ['ls -R', Kind.EXPLORE],
    ["nl -ba src/a.py | sed -n '10,20p'", Kind.EXPLORE],
    ['grep -rn "a|b; c" src 2>/dev/null | head -n 5', Kind.EXPLORE],
    ['cd repo && git log --oneline -3', Kind.EXPLORE],
    ["sed -i 's/a/b/' src/a.py", Kind.EDIT],
    ["cat <<'EOF' > repro.py\nimport x; print(x > 1)\nEOF", Kind.EDIT],
    ['pytest tests/test_a.py > out.txt 2>&1', Kind.EDIT],
    ['git checkout src/a.py', Kind.EDIT],
    ['find . -name "*.pyc" -delete', Kind.EDIT],
    ['python repro.py 2>&1', Kind.RUN],
    ['python - <<EOF\nprint(1)\nEOF', Kind.RUN],
    ['XDG_DATA_HOME=/tmp/x python3 -m pytest -q tests', Kind.RUN],
    ['grep -n foo a.py && python -c "import a"', Kind.RUN],
    ['echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached', Kind.SUBMIT],
    ['curl -I https://example.org', Kind.OTHER],
  ];
  for (const [command, kind] of cases) assert.equal(classify(command, 'x'), kind, command);
  assert.equal(classify(null, 'format_error'), Kind.OTHER);
  const steps = ['ls', 'grep -n a b.py', "sed -i 's/a/b/' b.py", 'python r.py', 'cat b.py', 'python r.py', 'ls']
    .map((command) => ({ command, toolName: command.split(' ')[0] }));
  assert.deepEqual(segment(steps).segments, [
    { start: 0, end: 2, kind: SegmentKind.FILE_EXPLORATION },
    { start: 3, end: 7, kind: SegmentKind.DEBUGGING },
  ]);
  assert.equal(summaryText('THOUGHT: it is in b.py.\n\n```bash\nsed -i x b.py\n```'), 'it is in b.py.');
});
