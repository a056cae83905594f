// "Context a branch loses" (issue 33), for bench/model: of the file paths and identifiers a step's
// command uses, those the agent had seen before (the transcript it sent) that the model did not
// get (the request the provider received). Pure: no I/O.
//
// The rule, kept simple on purpose:
// - The command is split into words at white space, quotes and the shell's punctuation
//   (; | & < > ( ) { } [ ] = , : ` $ and backslash).
// - A path is a word with a `/` of at least two parts, each of [A-Za-z0-9_.+~-] with a letter in
//   it (leading `./` and a trailing `/` dropped; an absolute path's leading `/` kept), that is
//   not a sed/tr expression (`s/a/b/`, `y/a/b/`) nor under /dev or /proc; or a word (with or
//   without one `/`) that ends in one of FILE_EXTENSIONS (`models.py`, `/setup.cfg`). Python's
//   dotted names (`np.bitwise_or`) are not paths.
// - An identifier is a run [A-Za-z_][A-Za-z0-9_]{3,} (4 characters or more) of what is left once
//   the paths are taken out, that looks like code: it has a `_`, a digit or a capital after its
//   first character (`keep_attrs`, `uts46`, `DataArray`, `dataLim`), or the command writes it as
//   an attribute or a call (`.merge`, `merge(`, `scipy.`); and it is not in STOP_WORDS (shell
//   commands and flags, Python keywords and builtins, common words; compared lower-cased). Plain
//   words (`Dataset` alone, English in a heredoc's strings and comments) do not count.
// - "Contains": a path is found where it is not preceded by [A-Za-z0-9_.-] nor followed by
//   [A-Za-z0-9_] (so `a.py` is found in `src/a.py` but not in `data.py`); an identifier where it
//   is a whole word ([A-Za-z0-9_] on neither side).
// - The text of a request is its system prompt and messages (text, thinking, tool inputs' string
//   values, tool results), not its tool definitions.

export const FILE_EXTENSIONS = new Set(('py pyi pyx pxd c h cc cpp hpp cxx rs go java js mjs ts tsx jsx rb php ' +
  'json yaml yml toml cfg ini conf txt md rst html css scss xml csv sh bash in lock patch diff log sql ' +
  'ipynb mk cmake').split(' '));

export const STOP_WORDS = new Set([
  // shell commands, their common flags' words, shell keywords
  'grep', 'egrep', 'fgrep', 'sed', 'awk', 'find', 'head', 'tail', 'echo', 'printf', 'python', 'python3',
  'pip', 'pip3', 'pytest', 'cat', 'less', 'more', 'diff', 'patch', 'xargs', 'sort', 'uniq', 'tee', 'bash',
  'touch', 'chmod', 'mkdir', 'rmdir', 'export', 'source', 'exec', 'eval', 'test', 'then', 'else', 'elif',
  'done', 'while', 'until', 'case', 'esac', 'true', 'false', 'null', 'which', 'type', 'name', 'iname',
  'print', 'print0', 'maxdepth', 'mindepth', 'include', 'exclude', 'color', 'never', 'always', 'recursive',
  'ignore', 'count', 'files', 'with', 'matches', 'quiet', 'verbose', 'regexp', 'fixed', 'strings', 'context',
  'after', 'before', 'lines', 'number', 'line', 'invert', 'match', 'only', 'binary', 'text', 'tests',
  'cached', 'stat', 'show', 'status', 'stash', 'checkout', 'apply', 'commit', 'reset', 'install', 'editable',
  'upgrade', 'version', 'help', 'home', 'testbed', 'tmp', 'EOF', 'heredoc', 'nl', 'wc', 'dev', 'stdout',
  'stderr', 'tb', 'short', 'long', 'native', 'disable', 'warnings', 'rootdir', 'noconftest',
  'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT',
  // Python keywords and common builtins
  'from', 'import', 'return', 'class', 'self', 'None', 'True', 'False', 'lambda', 'assert', 'except',
  'raise', 'pass', 'break', 'continue', 'yield', 'async', 'await', 'global', 'nonlocal', 'finally',
  'open', 'read', 'write', 'range', 'dict', 'list', 'tuple', 'float', 'bool', 'isinstance', 'getattr',
  'setattr', 'hasattr', 'super', 'init', '__init__', '__name__', '__main__', 'main', 'repr', 'format',
  'join', 'split', 'strip', 'replace', 'append', 'keys', 'values', 'items', 'sys', 'argv', 'path',
  'object', 'args', 'kwargs', 'Exception', 'ValueError', 'TypeError', 'KeyError', 'AttributeError',
  'Traceback', 'Error', 'error', 'result', 'value', 'data',
  // common English words
  'this', 'that', 'these', 'those', 'there', 'their', 'they', 'them', 'what', 'when', 'where', 'have',
  'will', 'would', 'should', 'could', 'about', 'into', 'also', 'than', 'were', 'been', 'being', 'some',
  'such', 'each', 'other', 'over', 'same', 'does', 'make', 'made', 'like', 'just', 'file', 'code',
  'output', 'input', 'here', 'check', 'first', 'last', 'next', 'cases', 'both', 'your',
  'want', 'need', 'used', 'using', 'uses', 'work', 'works', 'issue', 'expected', 'actual', 'example',
  'reproduce', 'script', 'temp', 'success', 'failed',
]);
const STOP_LOWER = new Set([...STOP_WORDS].map((w) => w.toLowerCase()));

const SPLIT = /[\s'"`;|&<>(){}[\]=,:$\\]+/;
const PATH_PART = /^[A-Za-z0-9_.+~-]+$/;
const EXTENSION = /^[A-Za-z0-9_+~-][A-Za-z0-9_.+~-]*\.([A-Za-z0-9]+)$/;
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]{3,}/g;

// A word of a command as a path, or null.
export function asPath(word) {
  let w = word.replace(/^\.\//, '').replace(/[.]+$/, '');
  if (w.length > 1) w = w.replace(/\/+$/, '');
  if (/^[sy]\//.test(w) || /^\/(dev|proc)(\/|$)/.test(w)) return null;
  const parts = (w.startsWith('/') ? w.slice(1) : w).split('/');
  if (parts.some((p) => !PATH_PART.test(p) || !/[A-Za-z]/.test(p))) return null;
  if (parts.length >= 2) return w;
  const m = parts[0].match(EXTENSION);
  return m && FILE_EXTENSIONS.has(m[1].toLowerCase()) ? w : null;
}

// The paths and identifiers `command` uses: {paths, identifiers} (each in order, no repeats).
export function commandItems(command) {
  const paths = [];
  let rest = String(command ?? '');
  for (const word of rest.split(SPLIT)) {
    const p = word ? asPath(word) : null;
    if (!p) continue;
    if (!paths.includes(p)) paths.push(p);
    rest = rest.replaceAll(word, ' ');
  }
  const identifiers = [];
  for (const m of rest.matchAll(IDENTIFIER)) {
    const id = m[0];
    const before = rest[m.index - 1];
    const after = rest[m.index + id.length];
    const codeShaped = /[_0-9]/.test(id) || /[A-Z]/.test(id.slice(1)) || before === '.' || after === '.' || after === '(';
    if (codeShaped && !STOP_LOWER.has(id.toLowerCase()) && !identifiers.includes(id)) identifiers.push(id);
  }
  return { paths, identifiers };
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

// Whether `text` contains the path (kind 'path') or identifier (kind 'identifier') `item`.
export function contains(text, item, kind) {
  if (!text.includes(item)) return false;
  const re = kind === 'path'
    ? new RegExp(`(?<![A-Za-z0-9_.-])${escape(item)}(?![A-Za-z0-9_])`)
    : new RegExp(`(?<![A-Za-z0-9_])${escape(item)}(?![A-Za-z0-9_])`);
  return re.test(text);
}

const contentText = (content) => (typeof content === 'string' ? content
  : (content ?? []).map((c) => (typeof c === 'string' ? c : c?.text ?? '')).join('\n'));
const inputText = (input) => Object.values(input ?? {}).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('\n');

// The text a request shows the model (system and messages, no tool definitions), for either API's
// body: Messages ({system, messages} with blocks) or Chat ({messages} with tool_calls).
export function requestText(body) {
  const out = [];
  if (typeof body.system === 'string') out.push(body.system);
  else for (const b of body.system ?? []) out.push(b.text ?? '');
  for (const m of body.messages ?? []) {
    if (typeof m.content === 'string') out.push(m.content);
    else {
      for (const b of m.content ?? []) {
        if (b.type === 'text') out.push(b.text ?? '');
        else if (b.type === 'thinking') out.push(b.thinking ?? '');
        else if (b.type === 'tool_use') out.push(inputText(b.input));
        else if (b.type === 'tool_result') out.push(contentText(b.content));
      }
    }
    for (const c of m.tool_calls ?? []) {
      let args = c.function?.arguments ?? '';
      try { args = inputText(JSON.parse(args)); } catch { /* not JSON: as it is */ }
      out.push(args);
    }
  }
  return out.join('\n');
}

// What the step running `command` lost: the items it uses that `sentText` (the transcript the
// agent sent) contains and `forwardedText` (what the model got) does not.
// -> {items, seen, lost: [{kind, item}]}
export function lostItems(command, sentText, forwardedText) {
  const { paths, identifiers } = commandItems(command);
  const all = [...paths.map((item) => ({ kind: 'path', item })), ...identifiers.map((item) => ({ kind: 'identifier', item }))];
  const seen = all.filter((x) => contains(sentText, x.item, x.kind));
  const lost = seen.filter((x) => !contains(forwardedText, x.item, x.kind));
  return { items: all.length, seen: seen.length, lost };
}
