// The replay benchmark's segmentation rule: which recorded steps of a trajectory go into a branch.
// Pure functions over the recorded commands (no I/O); bench/replay/README.md states the rule in
// words. The rule looks only at the command text (what an agent knows before it runs it), never at
// the result, and it was written before the numbers were looked at; do not tune it to runs.

// Step classes.
export const Kind = Object.freeze({
  EXPLORE: 'explore', // reads the repository: ls, grep, find, cat FILE, sed -n, nl, head, git log...
  RUN: 'run',         // executes code without writing a file itself: python x.py, pytest, python -c
  EDIT: 'edit',       // writes a file or changes the tree: sed -i, cat > f, rm, git checkout, pip install
  SUBMIT: 'submit',   // the final submission (mini-swe-agent's COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT)
  OTHER: 'other',     // format errors (no command) and anything not recognised
});

// Segment kinds.
export const SegmentKind = Object.freeze({
  FILE_EXPLORATION: 'file-exploration', // every step is EXPLORE
  DEBUGGING: 'debugging',               // EXPLORE and RUN steps, at least one RUN
});

export const MIN_SEGMENT_STEPS = 2;

// Words that only set up the command after them (or do nothing worth a class).
const NEUTRAL = new Set(['cd', 'export', 'set', 'unset', 'source', '.', 'true', 'false', 'echo',
  'printf', 'sleep', 'clear', ':']);
// Prefixes whose real command is the next word.
const PREFIX = new Set(['time', 'env', 'nice', 'timeout', 'xargs', 'command', 'sudo']);
const EXPLORE = new Set(['ls', 'find', 'grep', 'egrep', 'fgrep', 'rg', 'ag', 'cat', 'head', 'tail',
  'nl', 'sed', 'awk', 'wc', 'tree', 'pwd', 'file', 'stat', 'diff', 'sort', 'uniq', 'cut', 'tr',
  'less', 'more', 'which', 'whereis', 'type', 'basename', 'dirname', 'realpath', 'readlink',
  'column', 'du', 'od', 'hexdump', 'xxd', 'strings', 'locate']);
const RUN = new Set(['python', 'python2', 'python3', 'pytest', 'py.test', 'tox', 'nox', 'make',
  'pylint', 'flake8', 'mypy', 'sphinx-build', 'node', 'bash', 'sh', 'runtests.py', 'test',
  'django-admin', 'coverage', 'ipython']);
const EDIT = new Set(['rm', 'mv', 'cp', 'mkdir', 'rmdir', 'touch', 'patch', 'chmod', 'chown', 'ln',
  'tee', 'truncate', 'dos2unix', 'install', 'unzip', 'tar']);
const GIT_READ = new Set(['log', 'show', 'diff', 'status', 'grep', 'blame', 'ls-files', 'rev-parse',
  'branch', 'describe', 'shortlog', 'cat-file', 'ls-tree']);
const PIP_READ = new Set(['show', 'list', 'freeze', 'check', 'index']);

// The shell text of `command` without heredoc bodies, and whether a heredoc feeds a file.
function dropHeredocs(command) {
  const lines = command.split('\n');
  const kept = [];
  let terminator = null;
  for (const line of lines) {
    if (terminator !== null) {
      if (line.trim() === terminator) terminator = null;
      continue;
    }
    kept.push(line);
    const m = line.match(/<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1/);
    if (m) terminator = m[2];
  }
  return kept.join('\n');
}

// Replaces quoted strings with a placeholder so operators inside them do not split the command.
function maskQuotes(text) {
  return text.replace(/'[^']*'/g, 'Q').replace(/"(?:[^"\\]|\\.)*"/g, 'Q');
}

// True if the masked shell text redirects output into a file (not /dev/null, not another fd).
function writesFile(masked) {
  const re = /(?:^|[^<>&])\d?>>?\s*([^\s&|;]*)/g;
  for (const m of masked.matchAll(re)) {
    if (m[1] !== '/dev/null' && m[1] !== '') return true; // '' : 2>&1 and the like
  }
  return /(^|[^<])&>/.test(masked);
}

function classifyWords(words) {
  let i = 0;
  while (i < words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i])) i++; // VAR=value
  while (i < words.length && PREFIX.has(words[i])) {
    i++;
    while (i < words.length && (words[i].startsWith('-') || /^\d+[smh]?$/.test(words[i]))) i++;
  }
  if (i >= words.length) return null;
  const word = words[i];
  const base = word.split('/').pop();
  const rest = words.slice(i + 1);
  if (NEUTRAL.has(base)) return null;
  if (base === 'sed') return rest.some((w) => /^-[A-Za-z]*i/.test(w) || w === '--in-place') ? Kind.EDIT : Kind.EXPLORE;
  if (base === 'find' && rest.some((w) => w === '-delete' || w === '-exec' || w === '-execdir')) {
    return rest.includes('-delete') || rest.some((w) => EDIT.has(w)) ? Kind.EDIT : Kind.EXPLORE;
  }
  if (base === 'git') {
    const sub = rest.find((w) => !w.startsWith('-'));
    return GIT_READ.has(sub) ? Kind.EXPLORE : Kind.EDIT;
  }
  if (base === 'pip' || base === 'pip3') return PIP_READ.has(rest[0]) ? Kind.EXPLORE : Kind.EDIT;
  if (/^python[0-9.]*$/.test(base) && rest[0] === '-m' && /^pip$/.test(rest[1] ?? '')) {
    return PIP_READ.has(rest[2]) ? Kind.EXPLORE : Kind.EDIT;
  }
  if (EXPLORE.has(base)) return Kind.EXPLORE;
  if (EDIT.has(base)) return Kind.EDIT;
  if (RUN.has(base) || /^python[0-9.]*$/.test(base) || /\.(py|sh)$/.test(base)) return Kind.RUN;
  return Kind.OTHER;
}

// The class of one recorded step: `toolName` and `command` as in the workload (command may be
// null for mini-swe-agent's format errors).
export function classify(command, toolName) {
  if (command === null || command === undefined || toolName === 'format_error') return Kind.OTHER;
  if (command.includes('COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT')) return Kind.SUBMIT;
  const heredocFree = dropHeredocs(command.replace(/\\\n/g, ' '));
  const masked = maskQuotes(heredocFree);
  if (writesFile(masked)) return Kind.EDIT;
  // Redirections that write no file (2>&1, 2>/dev/null) go before splitting at & and |.
  const plain = masked.replace(/\d*>>?\s*\/dev\/null/g, ' ').replace(/\d*>&\d*-?/g, ' ');
  const parts = plain.split(/&&|\|\||[;|\n&]/).map((p) => p.replace(/[()]/g, ' ').trim()).filter(Boolean);
  const kinds = [];
  for (const part of parts) {
    const k = classifyWords(part.split(/\s+/));
    if (k !== null) kinds.push(k);
  }
  if (kinds.length === 0) return Kind.OTHER;
  if (kinds.includes(Kind.EDIT)) return Kind.EDIT;
  if (kinds.includes(Kind.OTHER)) return Kind.OTHER;
  if (kinds.includes(Kind.RUN)) return Kind.RUN;
  return Kind.EXPLORE;
}

// The segments of a list of steps [{command, toolName}]: maximal runs of consecutive EXPLORE/RUN
// steps of at least MIN_SEGMENT_STEPS. Returns [{start, end (exclusive), kind}] in order.
export function segment(steps) {
  const classes = steps.map((s) => classify(s.command, s.toolName));
  const out = [];
  let i = 0;
  while (i < classes.length) {
    if (classes[i] !== Kind.EXPLORE && classes[i] !== Kind.RUN) { i++; continue; }
    let j = i;
    while (j < classes.length && (classes[j] === Kind.EXPLORE || classes[j] === Kind.RUN)) j++;
    if (j - i >= MIN_SEGMENT_STEPS) {
      const kind = classes.slice(i, j).every((c) => c === Kind.EXPLORE)
        ? SegmentKind.FILE_EXPLORATION : SegmentKind.DEBUGGING;
      out.push({ start: i, end: j, kind });
    }
    i = j;
  }
  return { classes, segments: out };
}

// The return summary of a segment: the agent's next message with its fenced action removed (the
// action is the next recorded call, which stays in the main context anyway) and the "THOUGHT:"
// label dropped; the whole message if nothing else is left.
export function summaryText(message) {
  const text = String(message ?? '');
  const stripped = text.replace(/```[a-zA-Z]*\n[\s\S]*?```/g, '').replace(/^\s*THOUGHT:\s*/, '').trim();
  return stripped.length > 0 ? stripped : text.trim();
}
