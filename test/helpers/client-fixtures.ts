import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client, type Transport } from '@modelcontextprotocol/client';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { IdemClient, type IdemClientOptions } from '../../packages/idem/src/client/idem-client.js';
import { IntentJournal } from '../../packages/idem/src/client/intent-journal.js';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { Clock } from '../../packages/idem/src/core/clock.js';
import type { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { REPO_ROOT, ensureBuilt, makeTempDir } from './mcp-fixtures.js';

/** One tools/call as the scripted server saw it. */
export interface SeenCall {
  tool: string;
  args: Record<string, unknown>;
  /** The test clock's monotonic time at arrival. */
  at: number;
}

/** Returns the result of one call, or never settles (`hang`) until the client cancels it. */
export type Script = (call: SeenCall, index: number) => CallToolResult | 'hang';

/** A JSON result in Idem's shape (structuredContent plus the same JSON as text). */
export function result(content: Record<string, unknown>, isError = false): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(content) }],
    structuredContent: content,
    ...(isError ? { isError: true } : {}),
  };
}

export function idemError(
  code: string,
  extra: { retryable?: boolean; retry_after_ms?: number; operation_id?: string; status?: string } = {},
): CallToolResult {
  const { retryable = false, retry_after_ms, operation_id, status = 'rejected' } = extra;
  return result(
    {
      status,
      ...(operation_id === undefined ? {} : { operation_id }),
      error: {
        code,
        message: `${code} (scripted)`,
        retryable,
        ...(retry_after_ms === undefined ? {} : { retry_after_ms }),
      },
      next_action: `next action for ${code}`,
    },
    true,
  );
}

/**
 * An in-process MCP server whose tools answer from per-tool scripts, recording every call with the
 * injected clock's time. Any tool name is accepted; a tool without a script answers `tool_error`.
 * The server is a low-level SDK 1.x `Server`, the client an SDK v2 `Client` (as in `idem/client`):
 * every test on it also checks that the v2 client side works against a 1.x server.
 */
export class ScriptedServer {
  readonly calls: SeenCall[] = [];
  readonly #scripts = new Map<string, Script>();

  constructor(private readonly clock: Clock) {}

  script(tool: string, script: Script): this {
    this.#scripts.set(tool, script);
    return this;
  }

  callsOf(tool: string): SeenCall[] {
    return this.calls.filter((c) => c.tool === tool);
  }

  /** A connected SDK v2 client (in memory), its transport optionally wrapped. */
  async connect(wrap?: (transport: Transport) => Transport): Promise<Client> {
    const server = new Server({ name: 'scripted', version: '0.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const call: SeenCall = {
        tool: request.params.name,
        args: { ...(request.params.arguments ?? {}) },
        at: this.clock.monotonic(),
      };
      this.calls.push(call);
      const index = this.callsOf(call.tool).length - 1;
      const script = this.#scripts.get(call.tool);
      const answer = script ? script(call, index) : result({ error: 'no script' }, true);
      if (answer !== 'hang') return answer;
      return new Promise<CallToolResult>((_, reject) => {
        extra.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
      });
    });
    const [v1ClientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const clientSide: Transport = v1ClientSide;
    const client = new Client({ name: 'test', version: '0.0.0' });
    await client.connect(wrap ? wrap(clientSide) : clientSide);
    return client;
  }
}

/** A journal in a fresh temp dir (removed by mcp-fixtures' cleanup()). */
export function tempJournal(clock?: Clock): { journal: IntentJournal; path: string } {
  const path = join(makeTempDir('idem-client-'), 'intents.sqlite');
  return { journal: IntentJournal.open(path, clock === undefined ? {} : { clock }), path };
}

/** An IdemClient on a scripted server, a fake clock and a fresh journal; jitter fixed at 0. */
export async function scriptedClient(
  server: ScriptedServer,
  clock: FakeClock,
  options: Partial<IdemClientOptions> = {},
): Promise<IdemClient> {
  const { journal } = tempJournal(clock);
  return new IdemClient({
    connect: () => server.connect(),
    journal,
    clock,
    random: () => 0,
    ...options,
  });
}

/**
 * Runs `promise` to completion while moving the fake clock forward in `stepMs` steps, letting I/O
 * and microtasks run between steps. Fails if it is still pending after `limitMs` of fake time.
 */
export async function drive<T>(
  clock: FakeClock,
  promise: Promise<T>,
  stepMs = 10,
  limitMs = 600_000,
): Promise<T> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  const start = clock.monotonic();
  for (;;) {
    for (let i = 0; i < 3 && !settled; i += 1) await new Promise((resolve) => setImmediate(resolve));
    if (settled) return promise;
    if (clock.monotonic() - start > limitMs)
      throw new Error(`still pending after ${limitMs} ms of fake time`);
    clock.advance(stepMs);
  }
}

/** Builds the packages if the client, testing or CLI output a child process needs is missing. */
export function ensureClientBuilt(): void {
  ensureBuilt();
  const needed = ['dist/client/index.js', 'dist/testing/transport-faults.js'];
  if (needed.every((file) => existsSync(join(REPO_ROOT, 'packages', 'idem', file)))) return;
  execFileSync('npm', ['run', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
}

/** The ids of the notes with this body, read from the reference server's SQLite file directly. */
export function noteIdsInDb(dbPath: string, body: string): string[] {
  const db = openSqlite(dbPath, { readonly: true });
  try {
    const rows = db.prepare('SELECT note_id FROM notes WHERE body = ? ORDER BY created_at').all(body);
    return (rows as { note_id: string }[]).map((row) => row.note_id);
  } finally {
    db.close();
  }
}
