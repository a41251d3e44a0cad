import { randomUUID } from 'node:crypto';
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
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IntentJournal } from 'idem/client';
import { idemFunctionTools } from 'idem/openai-agents';
import { noteIdsInDb } from '../helpers/client-fixtures.js';
import {
  cleanup,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { ensureExampleBuilt, lastJsonLine, spawnExample } from './ai-sdk-fixtures.js';
import { FaultProxy } from './fault-proxy.js';

// The OpenAI Agents JS adapter (idem/openai-agents) against a real `idem serve`, through a fault
// proxy on loopback that loses the first answer; a scripted Model stands in for the LLM.

type Output = ModelResponse['output'];

/** A Model that answers each turn with the next scripted output; it records what it was shown. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  readonly #turns: Output[];

  constructor(turns: Output[]) {
    this.#turns = [...turns];
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    return {
      usage: new Usage(),
      output: this.#turns.shift() ?? [],
      responseId: `resp_${this.requests.length}`,
    };
  }

  // eslint-disable-next-line require-yield -- never streamed here
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the scripted model does not stream');
  }
}

function functionCall(callId: string, name: string, args: Record<string, unknown>): Output[number] {
  return { type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' };
}

function message(text: string): Output[number] {
  return {
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text }],
  };
}

let server: ServerProcess;
let dbPath: string;
const closing: Array<() => Promise<void>> = [];
const runner = new Runner({ tracingDisabled: true });

async function connected(url: string): Promise<MCPServerStreamableHttp> {
  const mcp = new MCPServerStreamableHttp({ url, name: 'idem' });
  await mcp.connect();
  closing.push(() => mcp.close());
  return mcp;
}

async function faultProxy(): Promise<FaultProxy> {
  const proxy = await new FaultProxy(server.url).arm({ fault: 'drop', tool: 'create_note' }).start();
  closing.push(() => proxy.close());
  return proxy;
}

beforeAll(async () => {
  ensureBuilt();
  ensureExampleBuilt('openai-agents-agent');
  dbPath = join(makeTempDir('idem-openai-agents-'), 'notes.sqlite');
  server = await startServerProcess({ args: ['--db', dbPath] });
}, 180_000);
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});
afterAll(cleanup);

describe('OpenAI Agents JS with idem/openai-agents', () => {
  it('a lost answer: the same key is sent again, the note is replayed, one note; the model never sees the key', async () => {
    const proxy = await faultProxy();
    const mcp = await connected(proxy.url);
    const lines: string[] = [];
    const idem = await idemFunctionTools(mcp, {
      journal: IntentJournal.open(join(makeTempDir(), 'intents.sqlite')),
      runId: `run-${randomUUID()}`,
      policy: { attemptTimeoutMs: 5000 },
      logger: (line) => lines.push(line),
    });
    expect(idem.keyed).toContain('create_note');
    expect(idem.unkeyed).toContain('get_operation');
    const body = `openai-agents lost answer ${randomUUID()}`;
    const model = new ScriptedModel([
      [functionCall('call-1', 'create_note', { workspace: 'default', body })],
      [message('The note is written.')],
    ]);
    const agent = new Agent({ name: 'notes', instructions: 'Write notes.', model, tools: idem.tools });
    const result = await runner.run(agent, `Write a note: ${body}`);
    expect(result.finalOutput).toBe('The note is written.');

    const shown = model.requests[0]?.tools.find((tool) => tool.name === 'create_note') as
      { parameters: { properties: object; required?: string[] } } | undefined;
    expect(Object.keys(shown?.parameters.properties ?? {})).toEqual(
      expect.arrayContaining(['workspace', 'body']),
    );
    expect(Object.keys(shown?.parameters.properties ?? {})).not.toContain('idempotency_key');
    expect(shown?.parameters.required ?? []).not.toContain('idempotency_key');
    expect(model.requests[0]?.tools.map((tool) => tool.name)).toContain('get_operation');

    const output = result.newItems.find((item) => item.type === 'tool_call_output_item') as
      { output: unknown } | undefined;
    const answer = JSON.parse(String(output?.output)) as Record<string, unknown>;
    expect(answer).toMatchObject({ status: 'succeeded', replayed: true });
    expect(noteIdsInDb(dbPath, body)).toEqual([answer.note_id]);
    const sends = proxy.callsOf('create_note');
    expect(sends.map((send) => send.fate)).toEqual(['dropped', 'passed']);
    expect(sends[1]?.args).toEqual(sends[0]?.args);
    expect(sends[0]?.args.idempotency_key).toEqual(expect.any(String));
    const unkeyedLines = lines.filter((line) => line.includes('idem.agent.unkeyed_tools'));
    expect(unkeyedLines).toHaveLength(1);
  });

  it('the same call id run again (a re-run step) resumes the journaled call: same key, no second note', async () => {
    const mcp = await connected(server.url);
    const journalPath = join(makeTempDir(), 'intents.sqlite');
    const runId = `run-${randomUUID()}`;
    const body = `openai-agents re-run ${randomUUID()}`;
    const turns = (): Output[] => [
      [functionCall('call-7', 'create_note', { workspace: 'default', body })],
      [message('ok')],
    ];
    const answers: Record<string, unknown>[] = [];
    for (let i = 0; i < 2; i += 1) {
      const idem = await idemFunctionTools(mcp, { journal: IntentJournal.open(journalPath), runId });
      const agent = new Agent({ name: 'notes', model: new ScriptedModel(turns()), tools: idem.tools });
      const result = await runner.run(agent, 'write');
      const output = result.newItems.find((item) => item.type === 'tool_call_output_item') as {
        output: unknown;
      };
      answers.push(JSON.parse(String(output.output)) as Record<string, unknown>);
    }
    expect(answers[1]?.note_id).toEqual(answers[0]?.note_id);
    expect(noteIdsInDb(dbPath, body)).toHaveLength(1);
  });

  it('without the adapter (mcpServers), the same lost answer makes two notes: the model makes a new key per call', async () => {
    const proxy = await faultProxy();
    const mcp = await connected(proxy.url);
    const body = `openai-agents without adapter ${randomUUID()}`;
    const model = new ScriptedModel([
      [functionCall('call-1', 'create_note', { workspace: 'default', body, idempotency_key: 'model-key-1' })],
      [functionCall('call-2', 'create_note', { workspace: 'default', body, idempotency_key: 'model-key-2' })],
      [message('done')],
    ]);
    const agent = new Agent({ name: 'notes', model, mcpServers: [mcp] });
    await runner.run(agent, 'write');
    const shown = model.requests[0]?.tools.find((tool) => tool.name === 'create_note') as {
      parameters: { properties: object };
    };
    expect(Object.keys(shown.parameters.properties)).toContain('idempotency_key');
    expect(noteIdsInDb(dbPath, body)).toHaveLength(2);
    expect(proxy.callsOf('create_note').map((send) => send.fate)).toEqual(['dropped', 'passed']);
  });
});

describe('examples/openai-agents-agent.ts on a real idem serve', () => {
  it('a lost answer: the same key is sent again and the note is replayed, one note', async () => {
    const proxy = await faultProxy();
    const body = `openai-agents example lost answer ${randomUUID()}`;
    const state = makeTempDir('idem-openai-agents-state-');
    const env = { IDEM_URL: proxy.url, NOTE_BODY: body, AGENT_STATE: state };
    const result = await lastJsonLine(spawnExample('openai-agents-agent', env));

    expect(result).toMatchObject({ status: 'succeeded', replayed: true });
    expect(noteIdsInDb(dbPath, body)).toEqual([result.note_id]);
    const sends = proxy.callsOf('create_note');
    expect(sends.map((send) => send.fate)).toEqual(['dropped', 'passed']);
    expect(sends[0]?.args.idempotency_key).toEqual(expect.any(String));
    expect(sends[1]?.args).toEqual(sends[0]?.args);
  });

  it('killed between send and answer: restarted with the same state, it resumes the call (same key), one note', async () => {
    const proxy = await new FaultProxy(server.url).arm({ fault: 'hold', tool: 'create_note' }).start();
    closing.push(() => proxy.close());
    const body = `openai-agents killed ${randomUUID()}`;
    const state = makeTempDir('idem-openai-agents-state-');
    const env = { IDEM_URL: proxy.url, NOTE_BODY: body, AGENT_STATE: state };

    const first = spawnExample('openai-agents-agent', env);
    await proxy.answered('create_note', 1); // the server acted; its answer is held
    first.proc.kill('SIGKILL');
    expect((await first.exited()).signal).toBe('SIGKILL');
    expect(first.lines).toEqual([]);
    expect(noteIdsInDb(dbPath, body)).toHaveLength(1);

    const result = await lastJsonLine(spawnExample('openai-agents-agent', env));
    expect(result).toMatchObject({ status: 'succeeded', replayed: true });
    expect(noteIdsInDb(dbPath, body)).toEqual([result.note_id]);
    const sends = proxy.callsOf('create_note');
    expect(sends.map((send) => send.fate)).toEqual(['held', 'passed']);
    expect(sends[1]?.args).toEqual(sends[0]?.args);
  });
});
