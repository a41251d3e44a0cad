import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Op } from '../lib/measure.js';
import { newKey, noteBody, WORKSPACE } from '../lib/notes.js';
import { measureRows, type PlannedRow } from '../lib/rows.js';
import type { RowResult, SuiteContext } from '../lib/types.js';

const SERVER = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'mcp-server.js');
const GROUP = 'MCP over Streamable HTTP (reference server, SQLite FULL, server in its own process)';

interface StructuredResult {
  isError?: boolean;
  structuredContent?: { status?: string; replayed?: boolean };
}

/**
 * Idem end to end: an MCP client calls the reference server's create_note over Streamable HTTP,
 * beside the same server's plain create_note_plain (the same insert without idempotency).
 */
export async function mcpSuite(context: SuiteContext): Promise<RowResult[]> {
  const replayKeyCount = context.quick ? 100 : 500;
  const server = spawn(process.execPath, [SERVER, '--db', join(context.tmpDir, 'mcp.sqlite')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const clients: Client[] = [];
  try {
    const first = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('the bench MCP server did not start within 15 s')),
        15_000,
      );
      createInterface({ input: server.stdout }).once('line', (line) => {
        clearTimeout(timer);
        resolve(line);
      });
      server.once('exit', (code) => reject(new Error(`the bench MCP server exited (${String(code)})`)));
    });
    const { url } = JSON.parse(first) as { url: string };
    for (let i = 0; i < 8; i += 1) {
      const client = new Client({ name: 'idem-bench', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      clients.push(client);
    }
    const call = async (
      lane: number,
      name: string,
      args: Record<string, unknown>,
    ): Promise<StructuredResult> => {
      const result = (await (clients[lane] as Client).callTool({
        name,
        arguments: args,
      })) as StructuredResult;
      if (result.isError === true || result.structuredContent?.status !== 'succeeded') {
        throw new Error(`${name} failed: ${JSON.stringify(result.structuredContent)}`);
      }
      return result;
    };
    const replayKeys = Array.from({ length: replayKeyCount }, () => newKey());
    for (const [i, key] of replayKeys.entries()) {
      await call(0, 'create_note', { idempotency_key: key, workspace: WORKSPACE, body: noteBody(i) });
    }
    const plain: Op = async (lane, seq) => {
      await call(lane, 'create_note_plain', { workspace: WORKSPACE, body: noteBody(seq) });
    };
    // Warm the plain path as much as the replay keys above warmed the idempotent one.
    for (let i = 0; i < replayKeyCount; i += 1) await plain(0, i);
    const first_: Op = async (lane, seq) => {
      const result = await call(lane, 'create_note', {
        idempotency_key: newKey(),
        workspace: WORKSPACE,
        body: noteBody(seq),
      });
      if (result.structuredContent?.replayed !== false) throw new Error('a fresh key replayed');
    };
    const replay: Op = async (lane, seq) => {
      const i = seq % replayKeyCount;
      const result = await call(lane, 'create_note', {
        idempotency_key: replayKeys[i],
        workspace: WORKSPACE,
        body: noteBody(i),
      });
      if (result.structuredContent?.replayed !== true) throw new Error('a replay executed');
    };
    const planned: PlannedRow[] = [];
    for (const c of [1, 8]) {
      const plainId = `mcp/plain/first/c${c}`;
      // Calls take milliseconds here: a longer window than the in-process rows, even with --quick.
      const common = {
        rssPid: server.pid as number,
        rssSelf: false,
        durationMs: Math.max(context.durationMs, 1000),
      };
      planned.push({
        spec: {
          id: plainId,
          group: GROUP,
          system: 'create_note_plain (no idempotency), same server',
          scenario: 'first execution',
          concurrency: c,
        },
        op: plain,
        ...common,
      });
      planned.push({
        spec: {
          id: `mcp/idem/first/c${c}`,
          group: GROUP,
          system: 'create_note (Idem), same server',
          scenario: 'first execution',
          concurrency: c,
          baseline: plainId,
          ratioOf: 'p50',
        },
        op: first_,
        ...common,
      });
      planned.push({
        spec: {
          id: `mcp/idem/replay/c${c}`,
          group: GROUP,
          system: 'create_note (Idem), same server',
          scenario: 'replay',
          concurrency: c,
          baseline: plainId,
          ratioOf: 'p50',
        },
        op: replay,
        ...common,
      });
    }
    const rows = await measureRows(context, planned);
    return rows.map((row) => ({ ...row, notes: ['peak RSS is the server process'] }));
  } finally {
    for (const client of clients) await client.close().catch(() => undefined);
    server.kill('SIGTERM');
    const timer = setTimeout(() => server.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}
