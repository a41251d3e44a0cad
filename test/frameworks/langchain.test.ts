import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IntentJournal } from 'idem/client';
import { callIdentity, idemLangChainTools, type LangChainMcpClient } from 'idem/langchain';
import { noteIdsInDb } from '../helpers/client-fixtures.js';
import {
  REPO_ROOT,
  cleanup,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { ensureExampleBuilt, lastJsonLine, spawnExample } from './ai-sdk-fixtures.js';
import { FaultProxy } from './fault-proxy.js';

// The LangChain.js adapter (idem/langchain) against a real `idem serve`, through a fault proxy on
// loopback that loses or holds an answer: examples/langchain-agent.ts as its own process (lost
// answer; SIGKILL between send and answer, then a restart), in process the schema the model sees,
// the same fault without the adapter, and server-memory behind `idem proxy`.

const MEMORY = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');

/** A chat model that answers each turn with the next scripted message; it records the tools bound. */
class ScriptedChatModel extends BaseChatModel {
  readonly bound: StructuredToolInterface[][] = [];
  readonly #turns: AIMessage[];

  constructor(turns: AIMessage[]) {
    super({});
    this.#turns = [...turns];
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(tools: StructuredToolInterface[]): this {
    this.bound.push(tools);
    return this;
  }

  async _generate(_messages: BaseMessage[]): Promise<ChatResult> {
    const message = this.#turns.shift() ?? new AIMessage('');
    return { generations: [{ text: String(message.content), message }] };
  }
}

function callOf(id: string, name: string, args: Record<string, unknown>): AIMessage {
  return new AIMessage({ content: '', tool_calls: [{ id, name, args }] });
}

let server: ServerProcess;
let dbPath: string;
const closing: Array<() => Promise<void>> = [];

async function faultProxy(target: string): Promise<FaultProxy> {
  const proxy = await new FaultProxy(target).start();
  closing.push(() => proxy.close());
  return proxy;
}

async function connected(url: string): Promise<{ mcp: MultiServerMCPClient; client: LangChainMcpClient }> {
  const mcp = new MultiServerMCPClient({ mcpServers: { idem: { transport: 'http', url } } });
  closing.push(() => mcp.close());
  const client = await mcp.getClient('idem');
  if (client === undefined) throw new Error('no client');
  return { mcp, client: client as unknown as LangChainMcpClient };
}

function toolMessages(messages: BaseMessage[]): ToolMessage[] {
  return messages.filter((message): message is ToolMessage => ToolMessage.isInstance(message));
}

beforeAll(async () => {
  ensureExampleBuilt('langchain-agent');
  dbPath = join(makeTempDir('idem-langchain-'), 'notes.sqlite');
  server = await startServerProcess({ args: ['--db', dbPath] });
}, 180_000);
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});
afterAll(cleanup);

describe('examples/langchain-agent.ts on a real idem serve', () => {
  it('a lost answer: the same key is sent again and the note is replayed, one note', async () => {
    const proxy = (await faultProxy(server.url)).arm({ fault: 'drop', tool: 'create_note' });
    const body = `langchain lost answer ${randomUUID()}`;
    const state = makeTempDir('idem-langchain-state-');
    const env = { IDEM_URL: proxy.url, NOTE_BODY: body, AGENT_STATE: state };
    const result = await lastJsonLine(spawnExample('langchain-agent', env));

    expect(result).toMatchObject({ status: 'succeeded', replayed: true });
    expect(noteIdsInDb(dbPath, body)).toEqual([result.note_id]);
    const sends = proxy.callsOf('create_note');
    expect(sends.map((send) => send.fate)).toEqual(['dropped', 'passed']);
    const [first, second] = sends.map((send) => send.args);
    expect(first?.idempotency_key).toEqual(expect.any(String));
    expect(second).toEqual(first); // same key, same arguments
    expect(first).toMatchObject({ workspace: 'default', body });
  });

  it('killed between send and answer: restarted with the same state, it resumes the call (same key), one note', async () => {
    const proxy = (await faultProxy(server.url)).arm({ fault: 'hold', tool: 'create_note' });
    const body = `langchain killed ${randomUUID()}`;
    const state = makeTempDir('idem-langchain-state-');
    const env = { IDEM_URL: proxy.url, NOTE_BODY: body, AGENT_STATE: state };

    const first = spawnExample('langchain-agent', env);
    await proxy.answered('create_note', 1); // the server acted; its answer is held
    first.proc.kill('SIGKILL');
    expect((await first.exited()).signal).toBe('SIGKILL');
    expect(first.lines).toEqual([]);
    expect(noteIdsInDb(dbPath, body)).toHaveLength(1);

    const result = await lastJsonLine(spawnExample('langchain-agent', env));
    expect(result).toMatchObject({ status: 'succeeded', replayed: true });
    expect(noteIdsInDb(dbPath, body)).toEqual([result.note_id]);
    const sends = proxy.callsOf('create_note');
    expect(sends.map((send) => send.fate)).toEqual(['held', 'passed']);
    expect(sends[1]?.args).toEqual(sends[0]?.args);
  });
});

describe('LangChain.js in process', () => {
  it('the model never sees idempotency_key; get_operation stays a tool; one unkeyed line', async () => {
    const lines: string[] = [];
    const { client } = await connected(server.url);
    const idem = await idemLangChainTools(client, {
      journal: IntentJournal.open(join(makeTempDir(), 'intents.sqlite')),
      runId: `run-${randomUUID()}`,
      logger: (line) => lines.push(line),
    });
    expect(idem.keyed).toContain('create_note');
    expect(idem.unkeyed).toEqual(expect.arrayContaining(['get_operation', 'get_note', 'list_notes']));
    const model = new ScriptedChatModel([new AIMessage('nothing to do')]);
    await createReactAgent({ llm: model, tools: idem.tools }).invoke({
      messages: [{ role: 'user', content: 'hi' }],
    });
    const seen = model.bound[0] ?? [];
    const create = seen.find((tool) => tool.name === 'create_note') as unknown as {
      schema: { properties: object; required?: string[] };
    };
    expect(Object.keys(create.schema.properties)).toEqual(expect.arrayContaining(['workspace', 'body']));
    expect(Object.keys(create.schema.properties)).not.toContain('idempotency_key');
    expect(create.schema.required ?? []).not.toContain('idempotency_key');
    expect(seen.map((tool) => tool.name)).toContain('get_operation');
    const unkeyed = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.event === 'idem.agent.unkeyed_tools');
    expect(unkeyed).toHaveLength(1);
  });

  it('a key the model sends anyway is dropped: the call goes out with the key made from run id and call id', async () => {
    const proxy = await faultProxy(server.url); // nothing armed: it only records what is sent
    const { client } = await connected(proxy.url);
    const runId = `run-${randomUUID()}`;
    const idem = await idemLangChainTools(client, {
      journal: IntentJournal.open(join(makeTempDir(), 'intents.sqlite')),
      runId,
    });
    const body = `langchain model key ${randomUUID()}`;
    const model = new ScriptedChatModel([
      callOf('call-3', 'create_note', { workspace: 'default', body, idempotency_key: 'model-made' }),
      new AIMessage('ok'),
    ]);
    const result = await createReactAgent({ llm: model, tools: idem.tools }).invoke({
      messages: [{ role: 'user', content: 'write' }],
    });
    const [answer] = toolMessages(result.messages);
    expect(JSON.parse(String(answer?.content))).toMatchObject({ status: 'succeeded', replayed: false });
    const sends = proxy.callsOf('create_note');
    expect(sends.map((send) => send.args.idempotency_key)).toEqual([callIdentity(runId, 'call-3').key]);
    expect(noteIdsInDb(dbPath, body)).toHaveLength(1);
  });

  it('the same call id run again (a re-run step) resumes the journaled call: same key, no second note', async () => {
    const { client } = await connected(server.url);
    const journalPath = join(makeTempDir(), 'intents.sqlite');
    const runId = `run-${randomUUID()}`;
    const body = `langchain re-run ${randomUUID()}`;
    const answers: Record<string, unknown>[] = [];
    for (let i = 0; i < 2; i += 1) {
      const idem = await idemLangChainTools(client, { journal: IntentJournal.open(journalPath), runId });
      const model = new ScriptedChatModel([
        callOf('call-7', 'create_note', { workspace: 'default', body }),
        new AIMessage('ok'),
      ]);
      const result = await createReactAgent({ llm: model, tools: idem.tools }).invoke({
        messages: [{ role: 'user', content: 'write' }],
      });
      const [answer] = toolMessages(result.messages);
      answers.push(JSON.parse(String(answer?.content)) as Record<string, unknown>);
    }
    expect(answers[0]).toMatchObject({ status: 'succeeded', replayed: false });
    expect(answers[1]).toMatchObject({ status: 'succeeded', note_id: answers[0]?.note_id });
    expect(noteIdsInDb(dbPath, body)).toHaveLength(1);
  });

  it('without the adapter (loadMcpTools alone), the same lost answer makes two notes: the model makes a new key per call', async () => {
    const proxy = (await faultProxy(server.url)).arm({ fault: 'drop', tool: 'create_note' });
    const { mcp } = await connected(proxy.url);
    const tools = await mcp.getTools();
    const create = tools.find((tool) => tool.name === 'create_note') as unknown as {
      schema: { properties: object };
    };
    expect(Object.keys(create.schema.properties)).toContain('idempotency_key');
    const body = `langchain without adapter ${randomUUID()}`;
    // What a model does with a key it must invent: one per call; after an error, a new call.
    const model = new ScriptedChatModel([
      callOf('call-1', 'create_note', { workspace: 'default', body, idempotency_key: 'model-key-1' }),
      callOf('call-2', 'create_note', { workspace: 'default', body, idempotency_key: 'model-key-2' }),
      new AIMessage('done'),
    ]);
    const result = await createReactAgent({ llm: model, tools }).invoke({
      messages: [{ role: 'user', content: 'write' }],
    });
    expect(toolMessages(result.messages)[0]?.status).toBe('error');
    expect(noteIdsInDb(dbPath, body)).toHaveLength(2);
    expect(proxy.callsOf('create_note').map((send) => send.fate)).toEqual(['dropped', 'passed']);
  });

  it('server-memory behind idem proxy: a lost answer is replayed, one entity', async () => {
    const dir = makeTempDir('idem-langchain-memory-');
    const idemProxy = await startServerProcess({
      command: 'proxy',
      args: ['--db', join(dir, 'proxy.sqlite'), '--', process.execPath, MEMORY],
      env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
      readyTimeoutMs: 30_000,
    });
    closing.push(() => idemProxy.kill('SIGTERM').then(() => undefined));
    const proxy = (await faultProxy(idemProxy.url)).arm({ fault: 'drop', tool: 'create_entities' });
    const { client } = await connected(proxy.url);
    const idem = await idemLangChainTools(client, {
      journal: IntentJournal.open(join(dir, 'intents.sqlite')),
      runId: `run-${randomUUID()}`,
      policy: { attemptTimeoutMs: 5000 },
    });
    expect(idem.keyed).toContain('create_entities');
    expect(idem.unkeyed).toContain('read_graph');
    const entities = [{ name: 'alpha', entityType: 'test', observations: ['one'] }];
    const model = new ScriptedChatModel([
      callOf('call-1', 'create_entities', { entities }),
      new AIMessage('done'),
    ]);
    const result = await createReactAgent({ llm: model, tools: idem.tools }).invoke({
      messages: [{ role: 'user', content: 'remember' }],
    });
    // A second forward would have answered `entities: []` (server-memory skips a name it has).
    const [answer] = toolMessages(result.messages);
    expect(JSON.parse(String(answer?.content))).toEqual({ entities });
    const sends = proxy.callsOf('create_entities');
    expect(sends.map((send) => send.fate)).toEqual(['dropped', 'passed']);
    expect(sends[1]?.args).toEqual(sends[0]?.args);
    const graph = (await client.callTool({ name: 'read_graph', arguments: {} })) as {
      structuredContent?: { entities?: unknown[] };
    };
    expect(graph.structuredContent?.entities).toHaveLength(1);
  });
});
