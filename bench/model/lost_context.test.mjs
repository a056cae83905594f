// Tests of the lost-context extraction (node --test bench/model/): which words of a command are
// paths and identifiers, how they are found in a request's text, and what a step lost.
import test from 'node:test';
import assert from 'node:assert/strict';
import { asPath, commandItems, contains, requestText, lostItems } from './lost_context.mjs';

test('paths: a word with a / of lettered parts, or a file name with a known extension', () => {
  assert.equal(asPath('django/db/models/query.py'), 'django/db/models/query.py');
  assert.equal(asPath('./src/a.py'), 'src/a.py');
  assert.equal(asPath('xarray/core/'), 'xarray/core');
  assert.equal(asPath('/testbed/setup.cfg'), '/testbed/setup.cfg');
  assert.equal(asPath('reproduce_issue.py'), 'reproduce_issue.py');
  assert.equal(asPath('README.rst'), 'README.rst');
  // Not paths: dotted names, sed expressions, /dev, numbers, one bare part.
  for (const w of ['np.bitwise_or', 'self.mask', 's/foo/bar/g', 'y/abc/xyz/', '/dev/null', '0/min-lines', '/def', 'src', '1,20p']) {
    assert.equal(asPath(w), null, w);
  }
});

test('identifiers: code-shaped words of 4+ characters outside the paths, stop words left out', () => {
  assert.deepEqual(commandItems("grep -n \"def _clean_fields\\|class BaseForm\" django/forms/forms.py | head -20"),
    { paths: ['django/forms/forms.py'], identifiers: ['_clean_fields', 'BaseForm'] });
  // Attributes and calls count; plain words, keywords and builtins do not.
  assert.deepEqual(commandItems('python3 -c "import idna; print(idna.encode(\'x\', uts46=True))"').identifiers, ['idna', 'encode', 'uts46']);
  assert.deepEqual(commandItems("sed -i 's/self._connect()/self.connect()/' lib/matplotlib/offsetbox.py"),
    { paths: ['lib/matplotlib/offsetbox.py'], identifiers: ['_connect', 'connect'] });
  assert.deepEqual(commandItems('ls -la && cat setup.py | grep Sphinx'), { paths: ['setup.py'], identifiers: [] });
  assert.deepEqual(commandItems('echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached'), { paths: [], identifiers: [] });
});

test('contains: a path where no name character touches it; an identifier as a whole word', () => {
  assert.equal(contains('see src/a.py:12', 'a.py', 'path'), true);
  assert.equal(contains('see src/data.py', 'a.py', 'path'), false);
  assert.equal(contains('in astropy/nddata/mixins/x.py', 'astropy/nddata', 'path'), true);
  assert.equal(contains('def keep_attrs_default(', 'keep_attrs', 'identifier'), false);
  assert.equal(contains('if keep_attrs is None:', 'keep_attrs', 'identifier'), true);
});

test('the text of a request: system and messages in either form, not the tool definitions', () => {
  const messages = {
    system: [{ type: 'text', text: 'sys' }], tools: [{ name: 'bash', description: 'tool_only_word', input_schema: {} }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'task' }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'tool_use', id: 't', name: 'bash', input: { command: 'cat "a.py"' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'out' }] }] },
    ],
  };
  assert.equal(requestText(messages), 'sys\ntask\nhmm\ncat "a.py"\nout');
  const chat = { tools: [{ type: 'function', function: { name: 'bash' } }], messages: [
    { role: 'system', content: 'sys' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'bash', arguments: '{"command":"cat \\"a.py\\""}' } }] },
    { role: 'tool', tool_call_id: 'c', content: 'out' },
  ] };
  assert.equal(requestText(chat), 'sys\ncat "a.py"\nout');
});

test('a step loses what the agent had seen and the model was not sent', () => {
  const sent = 'task: fix NDDataRef\n$ cat astropy/nddata/mixins/ndarithmetic.py\ndef _arithmetic_mask(self, operation, operand, handle_mask):';
  const forwarded = 'task: fix NDDataRef\n[contextd] Branch br_1 ...';
  const r = lostItems("grep -n '_arithmetic_mask\\|handle_mask\\|NDDataRef\\|_never_seen' astropy/nddata/mixins/ndarithmetic.py", sent, forwarded);
  assert.equal(r.items, 5);
  assert.equal(r.seen, 4);  // _never_seen was not in the transcript
  assert.deepEqual(r.lost.map((x) => x.item).sort(), ['_arithmetic_mask', 'astropy/nddata/mixins/ndarithmetic.py', 'handle_mask']);
  assert.deepEqual(lostItems('ls', sent, forwarded), { items: 0, seen: 0, lost: [] });
});
