import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, SdkError, SdkErrorCode, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  dropFirstResponse,
  ensureBuilt,
  listNotes,
  makeTempDir,
  parseJsonLine,
  track,
  type DropFirstResponse,
} from '../helpers/mcp-fixtures.js';

interface StdioSession {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  dropper?: DropFirstResponse;
}

let sessions: StdioSession[] = [];

async function connectStdio(dbPath: string, options: { drop?: boolean } = {}): Promise<StdioSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'serve', '--stdio', '--db', dbPath],
    cwd: REPO_ROOT,
    env: cleanEnv(),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer | string) => (stderr += chunk.toString()));
  let wire: Transport = transport;
  let dropper: DropFirstResponse | undefined;
  if (options.drop) wire = dropper = dropFirstResponse(transport);
  const client = new Client({ name: 'idem-e2e-stdio', version: '0.0.0' });
  const session: StdioSession = { client, transport, stderr: () => stderr, ...(dropper ? { dropper } : {}) };
  sessions.push(session);
  await client.connect(wire);
  await client.listTools();
  return session;
}

function waitForExit(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null) {
    return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  }
  return new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Collects stdout lines of `proc` and resolves when `done(lines)` holds. */
function readLines(proc: ChildProcess, done: (lines: string[]) => boolean): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const lines: string[] = [];
    let partial = '';
    let stderr = '';
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts);
      if (done(lines)) resolve(lines);
    });
    proc.once('exit', (code, signal) => {
      if (partial !== '') lines.push(partial);
      if (done(lines)) resolve(lines);
      else
        reject(
          new Error(`exited (${code ?? signal}) early; stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`),
        );
    });
  });
}

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

beforeAll(() => ensureBuilt());

afterEach(async () => {
  for (const s of sessions) {
    const pid = s.transport.pid;
    await closeQuietly(s.client);
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  sessions = [];
  await cleanup();
});

afterAll(cleanup);

describe('reference server over stdio', () => {
  it('creates a note and replays it for the same key', async () => {
    const dir = makeTempDir();
    const { client, stderr } = await connectStdio(join(dir, 'db.sqlite'));
    const body = `stdio-body-${randomUUID()}`;
    const args = { idempotency_key: 'stdio-1', workspace: 'default', body };

    const first = await callTool(client, 'create_note', args);
    expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
    const again = await callTool(client, 'create_note', args);
    expect(again.sc).toEqual({ ...first.sc, replayed: true });
    expect((await listNotes(client)).map((n) => n.note_id)).toEqual([first.sc.resource_id]);

    const read = () =>
      stderr()
        .split('\n')
        .map(parseJsonLine)
        .filter((l) => l !== undefined);
    // A call's log line follows its reply on another pipe: wait (bounded) for the third one.
    for (const end = Date.now() + 10_000; Date.now() < end;) {
      if (read().filter((l) => l.event === 'idem.call').length >= 3) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const logs = read();
    expect(logs.some((l) => l.event === 'idem.serving' && l.transport === 'stdio')).toBe(true);
    expect(logs.filter((l) => l.event === 'idem.call').map((l) => [l.principal, l.tool, l.outcome])).toEqual([
      ['dev', 'create_note@v1', 'executed'],
      ['dev', 'create_note@v1', 'replayed'],
      ['dev', 'list_notes', 'ok'],
    ]);
    expect(stderr()).not.toContain(body);
  });

  it('recovers the same ids after a dropped response', async () => {
    const dir = makeTempDir();
    const { client, dropper } = await connectStdio(join(dir, 'db.sqlite'), { drop: true });
    const args = { idempotency_key: randomUUID(), workspace: 'default', body: 'dropped over stdio' };

    const lost = await callTool(client, 'create_note', args, { timeout: 1000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(lost).toBeInstanceOf(SdkError);
    expect((lost as SdkError).code).toBe(SdkErrorCode.RequestTimeout);
    const original = dropper?.droppedResult();
    expect(original).toMatchObject({ status: 'succeeded', replayed: false });

    const retry = await callTool(client, 'create_note', args);
    expect(retry.sc).toMatchObject({
      status: 'succeeded',
      replayed: true,
      operation_id: original?.operation_id,
      resource_id: original?.resource_id,
    });
    const notes = await listNotes(client);
    expect(notes.map((n) => n.note_id)).toEqual([original?.resource_id]);
  });

  it('writes only JSON-RPC messages on stdout', async () => {
    const dir = makeTempDir();
    const proc = track(
      spawn(process.execPath, [CLI, 'serve', '--stdio', '--db', join(dir, 'db.sqlite')], {
        cwd: REPO_ROOT,
        env: cleanEnv(),
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const messages = [
      INITIALIZE,
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
      {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: {
          name: 'create_note',
          arguments: { idempotency_key: 'raw', workspace: 'default', body: 'x' },
        },
      },
      {
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'create_note', arguments: { body: '' } },
      },
    ];
    const ids = (lines: string[]) =>
      new Set(lines.map((l) => (parseJsonLine(l) as { id?: unknown } | undefined)?.id));
    const collected = readLines(proc, (lines) => [1, 2, 3, 4].every((id) => ids(lines).has(id)));
    for (const m of messages) proc.stdin?.write(`${JSON.stringify(m)}\n`);
    const lines = await collected;
    proc.stdin?.end();
    expect(await waitForExit(proc)).toEqual({ code: 0, signal: null });

    expect(lines.length).toBeGreaterThanOrEqual(4);
    for (const line of lines) {
      const message = JSON.parse(line) as Record<string, unknown>;
      expect(message.jsonrpc).toBe('2.0');
      expect('result' in message || 'error' in message || 'method' in message).toBe(true);
    }
    const byId = new Map(
      lines
        .map((l) => JSON.parse(l) as { id?: number; result?: Record<string, unknown> })
        .map((m) => [m.id, m]),
    );
    expect(byId.get(1)?.result).toMatchObject({ serverInfo: { name: 'idem-reference' } });
    const tools = (byId.get(2)?.result?.tools as { name: string }[]).map((t) => t.name).sort();
    expect(tools).toEqual([
      'cancel_operation',
      'create_note',
      'get_note',
      'get_operation',
      'list_notes',
      'start_deployment',
    ]);
    expect(byId.get(3)?.result).toMatchObject({ structuredContent: { status: 'succeeded' } });
    expect(byId.get(4)?.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'invalid_argument' } },
    });
  });
});
