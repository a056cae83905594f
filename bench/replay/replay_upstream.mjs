// A replay upstream MCP server (stdio) for bench/replay and tests/e2e/replay.test.mjs: it serves
// one recorded trajectory, answering each call of its `bash` tool with the next recorded tool
// result, verbatim. Single-threaded (one Node event loop); one process serves one trajectory.
//
//   node replay_upstream.mjs TRAJECTORIES.jsonl TRAJECTORY_ID
//
// The file holds one JSON object per line ({id, steps: [{role: "assistant", tool_name,
// args: {command}}, {role: "tool", content}, ...]}). Calls must come in the recorded order with the
// recorded command (a format-error step, which has no command, is called with ""); a call out of
// order or past the end is answered with isError and a message naming the step, so a driver bug
// cannot pass for a replay.
import { readTrajectories, recordedCalls } from './trajectory.mjs';

const sdkRoot = new URL('../../tools/npm/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Server } = await import(new URL('server/index.js', sdkRoot));
const { StdioServerTransport } = await import(new URL('server/stdio.js', sdkRoot));
const { ListToolsRequestSchema, CallToolRequestSchema } = await import(new URL('types.js', sdkRoot));

function loadTrajectory(file, id) {
  const found = readTrajectories(file).find((t) => String(t.id) === id);
  if (!found) throw new Error(`trajectory ${id} not in ${file}`);
  return found;
}

async function main() {
  const [file, id] = process.argv.slice(2);
  if (!file || !id) {
    process.stderr.write('usage: replay_upstream.mjs TRAJECTORIES.jsonl TRAJECTORY_ID\n');
    process.exit(2);
  }
  const calls = recordedCalls(loadTrajectory(file, id));
  let next = 0;
  const server = new Server({ name: 'contextd-replay', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{
      name: 'bash',
      description: `Replays trajectory ${id}: returns the recorded output of the next command (${calls.length} recorded).`,
      inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const error = (text) => ({ isError: true, content: [{ type: 'text', text }] });
    if (request.params.name !== 'bash') return error(`replay: unknown tool ${request.params.name}`);
    const command = String(request.params.arguments?.command ?? '');
    if (next >= calls.length) return error(`replay: all ${calls.length} recorded steps were served`);
    const expected = calls[next];
    if (command !== expected.command) {
      return error(`replay: step ${next} expects the command ${JSON.stringify(expected.command.slice(0, 200))}, ` +
        `got ${JSON.stringify(command.slice(0, 200))}`);
    }
    next++;
    return { content: [{ type: 'text', text: expected.observation }] };
  });
  await server.connect(new StdioServerTransport());
}

main().catch((e) => {
  process.stderr.write(`replay upstream: ${e.stack ?? e}\n`);
  process.exit(1);
});
