// Reading the recorded trajectories of ../shared/workloads (format: its README.md). Pure helpers,
// shared by the replay upstream and the driver.
import { readFileSync } from 'node:fs';

// The trajectories of a JSONL file, one object per non-empty line.
export function readTrajectories(file) {
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

// The recorded calls of a trajectory, in order: each assistant step with the tool step after it,
// as {command, toolName, message (the assistant's text), observation (the tool result, verbatim)}.
// A format-error step has no command; it is replayed as the command "".
export function recordedCalls(trajectory) {
  const calls = [];
  const steps = trajectory.steps ?? [];
  for (let i = 0; i < steps.length; i++) {
    if (steps[i].role !== 'assistant') continue;
    const next = steps[i + 1];
    if (!next || next.role !== 'tool') continue;
    calls.push({
      command: steps[i].args?.command ?? '',
      recordedCommand: steps[i].args?.command ?? null,
      toolName: steps[i].tool_name ?? null,
      message: String(steps[i].content ?? ''),
      observation: String(next.content ?? ''),
    });
    i++;
  }
  return calls;
}
