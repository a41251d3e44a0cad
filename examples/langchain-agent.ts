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
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { IntentJournal } from 'idem/client';
import { idemLangChainTools, type LangChainMcpClient } from 'idem/langchain';

/** A chat model that answers each turn with the next scripted message (a stand-in for the LLM). */
class ScriptedChatModel extends BaseChatModel {
  readonly #turns: AIMessage[];

  constructor(turns: AIMessage[]) {
    super({});
    this.#turns = [...turns];
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(_messages: BaseMessage[]): Promise<ChatResult> {
    const message = this.#turns.shift() ?? new AIMessage('');
    return { generations: [{ text: String(message.content), message }] };
  }
}

const url = process.env.IDEM_URL ?? 'http://127.0.0.1:3000/mcp';
const body = process.env.NOTE_BODY ?? 'Investigate the parser';
const state = statePaths(process.env.AGENT_STATE ?? './agent-state');
// The run's id is saved before anything is sent: with the tool call's id it makes each key.
const runId = savedRunId(state.run);

const mcp = new MultiServerMCPClient({ mcpServers: { idem: { transport: 'http', url } } });
const client = (await mcp.getClient('idem')) as LangChainMcpClient | undefined;
if (client === undefined) throw new Error(`no MCP connection to ${url}`);
const idem = await idemLangChainTools(client, {
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
  const model = new ScriptedChatModel([
    new AIMessage({
      content: '',
      tool_calls: [{ id: 'call-1', name: 'create_note', args: { workspace: 'default', body } }],
    }),
    new AIMessage('The note is written.'),
  ]);
  const agent = createReactAgent({ llm: model, tools: idem.tools });
  const result = await agent.invoke({ messages: [{ role: 'user', content: `Write a note: ${body}` }] });
  const answer = result.messages.find((message): message is ToolMessage => ToolMessage.isInstance(message));
  if (answer === undefined || answer.status === 'error') throw new Error(String(answer?.content));
  output = JSON.parse(String(answer.content));
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
