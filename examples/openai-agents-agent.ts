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
import {
  Agent,
  MCPServerStreamableHttp,
  Runner,
  Usage,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '@openai/agents';
import { IntentJournal } from 'idem/client';
import { idemFunctionTools } from 'idem/openai-agents';

/** A Model that answers each turn with the next scripted output (a stand-in for the LLM). */
class ScriptedModel implements Model {
  readonly #turns: ModelResponse['output'][];

  constructor(turns: ModelResponse['output'][]) {
    this.#turns = [...turns];
  }

  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    return { usage: new Usage(), output: this.#turns.shift() ?? [] };
  }

  // eslint-disable-next-line require-yield -- never streamed here
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the scripted model does not stream');
  }
}

const url = process.env.IDEM_URL ?? 'http://127.0.0.1:3000/mcp';
const body = process.env.NOTE_BODY ?? 'Investigate the parser';
const state = statePaths(process.env.AGENT_STATE ?? './agent-state');
// The run's id is saved before anything is sent: with the runner's call id it makes each key.
const runId = savedRunId(state.run);

const mcp = new MCPServerStreamableHttp({ url, name: 'idem' });
await mcp.connect();
const idem = await idemFunctionTools(mcp, {
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
  // A scripted model: its first turn calls create_note, its second answers.
  const model = new ScriptedModel([
    [
      {
        type: 'function_call',
        callId: 'call-1',
        name: 'create_note',
        arguments: JSON.stringify({ workspace: 'default', body }),
        status: 'completed',
      },
    ],
    [
      {
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'The note is written.' }],
      },
    ],
  ]);
  const agent = new Agent({ name: 'notes', instructions: 'Write notes.', model, tools: idem.tools });
  const result = await new Runner({ tracingDisabled: true }).run(agent, `Write a note: ${body}`);
  const answer = result.newItems.find((item) => item.type === 'tool_call_output_item');
  if (answer === undefined) throw new Error('the agent made no tool call');
  output = JSON.parse(String(answer.output));
}
await mcp.close();
console.log(JSON.stringify(output)); // create_note's structured result (note_id, operation_id, …)

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
