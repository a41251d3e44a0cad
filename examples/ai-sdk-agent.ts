import { randomUUID } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { createMCPClient } from '@ai-sdk/mcp';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { idemMcpTools } from 'idem/ai-sdk';
import { IntentJournal } from 'idem/client';

const url = process.env.IDEM_URL ?? 'http://127.0.0.1:3000/mcp';
const body = process.env.NOTE_BODY ?? 'Investigate the parser';
const state = statePaths(process.env.AGENT_STATE ?? './agent-state');
// The run's id is saved before anything is sent: with the model's toolCallId it makes each key.
const runId = savedRunId(state.run);

const mcp = await createMCPClient({ transport: { type: 'http', url }, maxRetries: 2 });
const idem = await idemMcpTools(mcp, {
  journal: IntentJournal.open(state.journal), // each call's key is written here before it is sent
  runId,
  policy: { attemptTimeoutMs: 5000 },
});

let output: unknown;
const [unfinished] = idem.unsettled();
if (unfinished !== undefined) {
  // Restarted after the agent died mid-call: resume that call with its own key, not a new one.
  output = (await idem.resume(unfinished.intentId)).output;
} else {
  // A scripted model (the AI SDK's own test model): one step calls create_note, the next answers.
  const model = new MockLanguageModelV4({
    doGenerate: [
      step(
        [
          {
            type: 'tool-call',
            toolCallId: 'call-1',
            toolName: 'create_note',
            input: JSON.stringify({ workspace: 'default', body }),
          },
        ],
        'tool-calls',
      ),
      step([{ type: 'text', text: 'The note is written.' }], 'stop'),
    ],
  });
  const result = await generateText({
    model,
    tools: idem.tools,
    prompt: `Write a note: ${body}`,
    stopWhen: stepCountIs(2),
  });
  const error = result.steps[0]?.content.find((part) => part.type === 'tool-error');
  if (error !== undefined) throw error.error; // not an answer (e.g. the journal could not be written)
  output = result.steps[0]?.toolResults[0]?.output;
}
await mcp.close();
console.log(JSON.stringify(output)); // create_note's structured result (note_id, operation_id, …)

/** One scripted model response. */
function step(
  content: Array<
    | { type: 'tool-call'; toolCallId: string; toolName: string; input: string }
    | { type: 'text'; text: string }
  >,
  finish: 'tool-calls' | 'stop',
) {
  const none = { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined };
  return {
    content,
    finishReason: { unified: finish, raw: undefined },
    usage: { inputTokens: none, outputTokens: { total: undefined, text: undefined, reasoning: undefined } },
    warnings: [],
  };
}

/** $AGENT_STATE is a directory (created if missing) or, when it names a file, the journal itself. */
function statePaths(path: string): { journal: string; run: string } {
  const file = existsSync(path) ? statSync(path).isFile() : /\.(sqlite|db)$/.test(path);
  if (file) return { journal: path, run: `${path}.run` };
  mkdirSync(path, { recursive: true });
  return { journal: join(path, 'intents.sqlite'), run: join(path, 'run') };
}

/** The run id kept at `path`, or a new one written there durably (fsync, then rename). */
function savedRunId(path: string): string {
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const id = `run_${randomUUID()}`;
  const fd = openSync(`${path}.tmp`, 'w');
  writeSync(fd, id);
  fsyncSync(fd);
  closeSync(fd);
  renameSync(`${path}.tmp`, path);
  return id;
}
