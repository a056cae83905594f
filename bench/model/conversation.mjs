// bench/model's conversation generator: turns recorded trajectories (../shared/workloads, format in
// its README) into the model turns of an agent that talks Anthropic Messages the way Claude Code
// does, for each variant. Pure: no I/O. The driver (run.mjs) plays the turns.
//
// A plan is {task, turns}: `task` is the first user message; each turn is one model request whose
// scripted answer is an assistant message with `text` (optional) and one tool_use per action:
//   {kind: 'bash', command, observation}   the recorded command and its recorded result
//   {kind: 'create', args}                 mcp__contextd__branch_create
//   {kind: 'return', message}              mcp__contextd__branch_return (branch_id added by the driver)
// A turn with no action (a recorded format error) is answered by a user text (`userText`, the
// recorded observation). `nextTask` (long sessions) is the next run's task: in the minimal form a
// user text after the turn's results; in the claude-code form (boundary 'answer') the task ends
// with the model's final answer, a turn {final: true, thinking, text} with no action, and the
// next task is the user message answering it.
import { recordedCalls } from '../replay/trajectory.mjs';
import { segment, summaryText } from '../replay/segment.mjs';
import { cutToTokens, SUMMARY_MAX_TOKENS } from '../replay/replay.mjs';

export const VARIANTS = Object.freeze(['direct', 'clear-tool-uses', 'contextd-nofold', 'create-own-turn', 'create-first-turn',
  'create-first-turn-inherited', 'auto-fold', 'auto-fold+branches', 'auto-fold-remove', 'auto-fold-wait', 'auto-fold-off']);
// The variants of `bench/model/run.sh` with no flag (issue 17's set; the others are named).
export const DEFAULT_VARIANTS = Object.freeze(['direct', 'contextd-nofold', 'create-own-turn', 'create-first-turn']);
// Variants that go through contextd's gateway; of those, the ones whose agent opens branches, and
// the ones with contextd's auto-fold on. `clear-tool-uses` is `direct` with the provider's
// context editing (clear_tool_uses.mjs) applied by the double.
export const THROUGH_CONTEXTD = new Set(['contextd-nofold', 'create-own-turn', 'create-first-turn', 'create-first-turn-inherited',
  'auto-fold', 'auto-fold+branches', 'auto-fold-remove', 'auto-fold-wait', 'auto-fold-off']);
export const BRANCHING = new Set(['create-own-turn', 'create-first-turn', 'create-first-turn-inherited', 'auto-fold+branches']);
export const AUTO_FOLD = new Set(['auto-fold', 'auto-fold+branches', 'auto-fold-remove', 'auto-fold-wait', 'auto-fold-off']);
// Issue 34: auto-fold under thinking (model_gateway.auto_fold.thinking) per variant; `auto-fold`
// and `auto-fold+branches` leave it to contextd's default (remove, from issue 34 on).
export const AUTO_FOLD_THINKING = Object.freeze({ 'auto-fold-remove': 'remove', 'auto-fold-wait': 'wait', 'auto-fold-off': 'off' });
// Issue 33: the branch view contextd forwards while a branch is open (context_folding.branch_view).
// Every branching variant runs with contextd's default (`isolated` from issue 33 on) but
// `create-first-turn-inherited`: the same turns as create-first-turn with `branch_view: inherited`
// (the whole transcript, as before issue 33).
export const BRANCH_VIEW = Object.freeze({ 'create-first-turn-inherited': 'inherited' });
// Variants that fold, one way or another (checked against the targets).
export const FOLDING = new Set([...BRANCHING, ...AUTO_FOLD, 'clear-tool-uses']);
export const MCP_SERVER = 'contextd';  // Claude Code names MCP tools mcp__<server>__<tool>

// A system prompt in the two blocks Claude Code sends (an identity line, then the prompt with the
// cache breakpoint), here with mini-swe-agent's instructions, which the recorded runs followed.
export const SYSTEM = Object.freeze([
  { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
  {
    type: 'text',
    text: [
      'You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks.',
      'Your response must contain exactly ONE bash tool call with the command to run, and a short THOUGHT before it',
      'explaining your reasoning. Each command runs in a new subshell: directory and environment changes are not',
      'persistent. Use non-interactive flags, avoid editors and pagers, and keep outputs short (head, tail, sed -n, grep).',
      'Work in the repository in the current directory. Do not modify the tests unless the task asks for it.',
      'When you have finished, run `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached`.',
      '',
      'Context folding: for a stretch of exploration or debugging whose details you will not need afterwards, open',
      'a branch with branch_create, do the work, and close it with branch_return and a summary of what you found.',
      'Only the summary stays in your context.',
    ].join('\n'),
  },
]);

export const BASH_TOOL = Object.freeze({
  name: 'bash',
  description: 'Executes a bash command in a new subshell in the repository and returns its exit code and output ' +
    '(long outputs are cut in the middle).',
  input_schema: {
    type: 'object',
    properties: { command: { type: 'string', description: 'The command to execute' } },
    required: ['command'],
    additionalProperties: false,
  },
});

// The Anthropic tool definition of a contextd MCP tool, as Claude Code lists it.
export function mcpToolDefinition(tool) {
  return { name: `mcp__${MCP_SERVER}__${tool.name}`, description: tool.description ?? '', input_schema: tool.inputSchema ?? { type: 'object' } };
}

// The tools Claude Code sends from an MCP tools/list: those it does not defer behind its
// ToolSearch (decision 0014: contextd sets _meta["anthropic/alwaysLoad"] on the folding tools).
export function loadedMcpTools(tools) {
  return tools.filter((t) => t._meta?.['anthropic/alwaysLoad'] === true).map(mcpToolDefinition);
}

// One run's material: {id, task, calls (replay's recordedCalls), segments (replay's rule)}.
export function runOf(trajectory) {
  const calls = recordedCalls(trajectory);
  return { id: trajectory.meta?.instance_id ?? String(trajectory.id), task: String(trajectory.task ?? ''), calls, segments: segment(calls).segments };
}

function stepTurn(call) {
  const text = summaryText(call.message);
  if (call.recordedCommand === null || call.toolName === 'format_error') {
    return { text, actions: [], userText: call.observation };
  }
  return { text, actions: [{ kind: 'bash', command: call.command, observation: call.observation }] };
}

// The branch_create arguments of a segment (as bench/replay writes them).
function createArgs(seg, calls) {
  const n = seg.end - seg.start;
  const first = calls[seg.start].command.split('\n')[0];
  return {
    description: `${seg.kind}: recorded steps ${seg.start}-${seg.end - 1} (${n} commands)`,
    prompt: `Replay of ${n} recorded commands, starting with: ${first.slice(0, 300) || '(none)'}`,
  };
}

// The summary of a segment (bench/replay's rule): the agent's next recorded message, its action
// and THOUGHT label removed, cut to 200 o200k_base tokens.
export function segmentSummary(enc, seg, calls) {
  const next = calls[seg.end]?.message ?? calls[seg.end - 1].message;
  return cutToTokens(enc, summaryText(next), SUMMARY_MAX_TOKENS) || '(no summary)';
}

// The turns of one run under `variant`.
export function runTurns(enc, run, variant) {
  const turns = [];
  const starts = new Map();
  const ends = new Map();
  if (BRANCHING.has(variant)) {
    for (const s of run.segments) { starts.set(s.start, s); ends.set(s.end - 1, s); }
  }
  // The summary of a segment is the agent's next thought (branch_return's message): the turn
  // after the return carries only what the summary left out, not a second copy.
  const summarized = new Map();
  run.calls.forEach((call, i) => {
    const seg = starts.get(i);
    const turn = stepTurn(call);
    if (summarized.has(i)) {
      const summary = summarized.get(i);
      turn.text = turn.text.startsWith(summary) ? turn.text.slice(summary.length).trim() : turn.text;
    }
    if (seg && variant === 'create-own-turn') {
      turns.push({ actions: [{ kind: 'create', args: createArgs(seg, run.calls) }] });
    } else if (seg) {  // create-first-turn(-inherited), auto-fold+branches: branch_create beside the segment's first command
      turn.actions.unshift({ kind: 'create', args: createArgs(seg, run.calls) });
    }
    turns.push(turn);
    const done = ends.get(i);
    if (done) {
      const message = segmentSummary(enc, done, run.calls);
      if (done.end < run.calls.length) summarized.set(done.end, message);
      turns.push({ actions: [{ kind: 'return', message }] });
    }
  });
  return turns;
}

// What the model thinks and says when a run's task is done (the claude-code form's boundary): the
// recorded runs end with their submit command, so the answer is scripted, the same in every variant.
export const FINAL_THOUGHT = 'The task is done.';
export const finalAnswer = (run) => `Done: ${run.id}.`;

// The plan of a conversation of one or more runs played one after another. `boundary`: how each
// later run's task arrives: 'text' (the minimal form) as a user text after the previous run's last
// result; 'answer' (the claude-code form, as Claude Code sends it) the previous run ends with the
// model's final answer (a thinking block and a text, stop_reason end_turn) and the task is a new
// user message.
export function conversationPlan(enc, runs, variant, { boundary = 'text' } = {}) {
  if (!['text', 'answer'].includes(boundary)) throw new Error(`conversationPlan: boundary text or answer, not ${boundary}`);
  const turns = [];
  runs.forEach((run, k) => {
    if (k > 0 && turns.length) {
      if (boundary === 'answer') turns.push({ final: true, thinking: FINAL_THOUGHT, text: finalAnswer(runs[k - 1]), actions: [] });
      turns[turns.length - 1].nextTask = run.task;
    }
    turns.push(...runTurns(enc, run, variant));
  });
  return { task: runs[0].task, turns };
}
