import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createMCPClient } from '@ai-sdk/mcp';
import { generateText, stepCountIs, type ToolSet } from 'ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { idemMcpTools } from 'idem/ai-sdk';
import { IntentJournal } from 'idem/client';
import { noteIdsInDb } from '../helpers/client-fixtures.js';
import {
  REPO_ROOT,
  cleanup,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import {
  ensureExampleBuilt,
  lastJsonLine,
  scriptedModel,
  spawnExample,
  toolCall,
} from './ai-sdk-fixtures.js';
import { FaultProxy } from './fault-proxy.js';

// The AI SDK adapter (idem/ai-sdk) against a real `idem serve` process, with a fault proxy on
// loopback between them that loses or holds an answer: examples/ai-sdk-agent.ts as its own process
// (lost answer; SIGKILL between send and answer, then a restart), the same fault without the
// adapter, and server-memory behind `idem proxy`.

const MEMORY = join(REPO_ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');

let server: ServerProcess;
let dbPath: string;
const proxies: FaultProxy[] = [];

async function faultProxy(target: string): Promise<FaultProxy> {
  const proxy = await new FaultProxy(target).start();
  proxies.push(proxy);
  return proxy;
}

beforeAll(async () => {
  ensureExampleBuilt('ai-sdk-agent');
  dbPath = join(makeTempDir('idem-ai-sdk-'), 'notes.sqlite');
  server = await startServerProcess({ args: ['--db', dbPath] });
}, 180_000);
afterEach(async () => {
  await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
});
afterAll(cleanup);

describe('examples/ai-sdk-agent.ts on a real idem serve', () => {
  it('a lost answer: the same key is sent again and the note is replayed, one note', async () => {
    const proxy = (await faultProxy(server.url)).arm({ fault: 'drop', tool: 'create_note' });
    const body = `ai-sdk lost answer ${randomUUID()}`;
    const state = makeTempDir('idem-ai-sdk-state-');
    const run = spawnExample('ai-sdk-agent', { IDEM_URL: proxy.url, NOTE_BODY: body, AGENT_STATE: state });
    const result = await lastJsonLine(run);

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
    const body = `ai-sdk killed ${randomUUID()}`;
    const state = makeTempDir('idem-ai-sdk-state-');
    const env = { IDEM_URL: proxy.url, NOTE_BODY: body, AGENT_STATE: state };

    const first = spawnExample('ai-sdk-agent', env);
    await proxy.answered('create_note', 1); // the server acted; its answer is held
    first.proc.kill('SIGKILL');
    expect((await first.exited()).signal).toBe('SIGKILL');
    expect(first.lines).toEqual([]);
    expect(noteIdsInDb(dbPath, body)).toHaveLength(1);

    const result = await lastJsonLine(spawnExample('ai-sdk-agent', env));
    expect(result).toMatchObject({ status: 'succeeded', replayed: true });
    expect(noteIdsInDb(dbPath, body)).toEqual([result.note_id]);
    const sends = proxy.callsOf('create_note');
    expect(sends.map((send) => send.fate)).toEqual(['held', 'passed']);
    expect(sends[1]?.args).toEqual(sends[0]?.args);
  });

  it('a fresh state is a new run: the same body and call id make a second note under another key', async () => {
    // The key comes from the run id and the call id: another run is another action.
    const body = `ai-sdk two runs ${randomUUID()}`;
    const env = (state: string) => ({ IDEM_URL: server.url, NOTE_BODY: body, AGENT_STATE: state });
    const a = await lastJsonLine(spawnExample('ai-sdk-agent', env(makeTempDir('idem-ai-sdk-state-'))));
    const b = await lastJsonLine(spawnExample('ai-sdk-agent', env(join(makeTempDir(), 'agent.sqlite'))));
    expect(a.note_id).not.toEqual(b.note_id);
    expect(noteIdsInDb(dbPath, body)).toHaveLength(2);
  });
});

describe('the AI SDK in process', () => {
  it('the model never sees idempotency_key; get_operation stays a tool; one unkeyed line', async () => {
    const lines: string[] = [];
    const mcp = await createMCPClient({ transport: { type: 'http', url: server.url } });
    try {
      const idem = await idemMcpTools(mcp, {
        journal: IntentJournal.open(join(makeTempDir(), 'intents.sqlite')),
        runId: `run-${randomUUID()}`,
        logger: (line) => lines.push(line),
      });
      expect(idem.keyed).toContain('create_note');
      expect(idem.unkeyed).toEqual(expect.arrayContaining(['get_operation', 'get_note', 'list_notes']));
      const model = scriptedModel([[{ type: 'text', text: 'nothing to do' }]]);
      await generateText({ model, tools: idem.tools, prompt: 'hi' });
      const seen = model.doGenerateCalls[0]?.tools ?? [];
      const create = seen.find((tool) => tool.name === 'create_note') as {
        inputSchema: { properties: object; required?: string[] };
      };
      expect(Object.keys(create.inputSchema.properties)).not.toContain('idempotency_key');
      expect(create.inputSchema.required ?? []).not.toContain('idempotency_key');
      expect(seen.map((tool) => tool.name)).toContain('get_operation');
      const unkeyed = lines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((l) => l.event === 'idem.agent.unkeyed_tools');
      expect(unkeyed).toHaveLength(1);
    } finally {
      await mcp.close();
    }
  });

  it('without the adapter, the same lost answer makes two notes (the model makes a new key per call)', async () => {
    const proxy = (await faultProxy(server.url)).arm({ fault: 'drop', tool: 'create_note' });
    const body = `ai-sdk without adapter ${randomUUID()}`;
    const mcp = await createMCPClient({ transport: { type: 'http', url: proxy.url }, maxRetries: 2 });
    try {
      const tools = await mcp.tools();
      // What a model does with a key it must invent: one per call; after an error, a new call.
      const model = scriptedModel([
        [toolCall('call-1', 'create_note', { workspace: 'default', body, idempotency_key: 'model-key-1' })],
        [toolCall('call-2', 'create_note', { workspace: 'default', body, idempotency_key: 'model-key-2' })],
        [{ type: 'text', text: 'done' }],
      ]);
      const result = await generateText({
        model,
        tools: tools as ToolSet,
        prompt: 'write it',
        stopWhen: stepCountIs(3),
      });
      expect(result.steps[0]?.content.some((part) => part.type === 'tool-error')).toBe(true);
      expect(noteIdsInDb(dbPath, body)).toHaveLength(2);
      expect(proxy.callsOf('create_note').map((send) => send.fate)).toEqual(['dropped', 'passed']);
    } finally {
      await mcp.close();
    }
  });

  it('server-memory behind idem proxy: a lost answer is replayed, one entity', async () => {
    const dir = makeTempDir('idem-ai-sdk-memory-');
    const idemProxy = await startServerProcess({
      command: 'proxy',
      args: ['--db', join(dir, 'proxy.sqlite'), '--', process.execPath, MEMORY],
      env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
      readyTimeoutMs: 30_000,
    });
    const proxy = (await faultProxy(idemProxy.url)).arm({ fault: 'drop', tool: 'create_entities' });
    const mcp = await createMCPClient({ transport: { type: 'http', url: proxy.url } });
    try {
      const idem = await idemMcpTools(mcp, {
        journal: IntentJournal.open(join(dir, 'intents.sqlite')),
        runId: `run-${randomUUID()}`,
        policy: { attemptTimeoutMs: 5000 },
      });
      expect(idem.keyed).toContain('create_entities');
      expect(idem.unkeyed).toContain('read_graph');
      const entities = [{ name: 'alpha', entityType: 'test', observations: ['one'] }];
      const model = scriptedModel([
        [toolCall('call-1', 'create_entities', { entities })],
        [{ type: 'text', text: 'done' }],
      ]);
      const result = await generateText({
        model,
        tools: idem.tools,
        prompt: 'remember',
        stopWhen: stepCountIs(2),
      });
      // A second forward would have answered `entities: []` (server-memory skips a name it has).
      expect(result.steps[0]?.toolResults[0]?.output).toEqual({ entities });
      const sends = proxy.callsOf('create_entities');
      expect(sends.map((send) => send.fate)).toEqual(['dropped', 'passed']);
      expect(sends[1]?.args).toEqual(sends[0]?.args);
      const graph = (await mcp.callTool({ name: 'read_graph', arguments: {} })) as {
        structuredContent?: { entities?: unknown[] };
      };
      expect(graph.structuredContent?.entities).toHaveLength(1);
    } finally {
      await mcp.close();
      await idemProxy.kill('SIGTERM');
    }
  });
});
