import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  REPO_ROOT,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  freePort,
  makeTempDir,
  startServerProcess,
  track,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

// What `idem proxy` says about a forwarded call is what happened, checked against the upstream's own
// record of the calls it received (test/proxy/truth-upstream.mjs): an answer the proxy's client
// could not validate, a JSON-RPC error after the upstream acted, an answer over the size limit,
// pass-through tools under a token without the workspace, and what the upstream sends besides
// answers (progress, an elicitation request, a changed tool list). Real processes, SQLite.

const UPSTREAM = join(REPO_ROOT, 'test/proxy/truth-upstream.mjs');

type Result = CallToolResult & { _meta?: Record<string, unknown> };

let clients: Client[] = [];

beforeAll(() => ensureBuilt());
afterEach(async () => {
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await cleanup();
});

function startProxy(dir: string, args: string[] = []): Promise<ServerProcess> {
  return startServerProcess({
    command: 'proxy',
    args: ['--db', join(dir, 'proxy.sqlite'), ...args, '--', 'node', UPSTREAM],
    env: { UPSTREAM_LOG: join(dir, 'calls.jsonl') },
    readyTimeoutMs: 30_000,
  });
}

/** The upstream over Streamable HTTP on `port`, as its own process. */
async function startHttpUpstream(dir: string, port: number): Promise<ChildProcess> {
  const proc = track(
    spawn(process.execPath, [UPSTREAM], {
      cwd: REPO_ROOT,
      env: cleanEnv({ UPSTREAM_LOG: join(dir, 'calls.jsonl'), UPSTREAM_HTTP_PORT: String(port) }),
      stdio: ['ignore', 'ignore', 'pipe'],
    }),
  );
  await new Promise<void>((resolve, reject) => {
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('listening')) resolve();
    });
    proc.once('exit', (code) => reject(new Error(`upstream exited (${code})`)));
  });
  return proc;
}

async function connect(proxy: ServerProcess, token?: string): Promise<Client> {
  const client = await connectHttp(proxy.url, token);
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Result> {
  return (await client.callTool({ name, arguments: args }, { timeout: 30_000 })) as Result;
}

/** The calls the upstream received with this label (its own record, written on arrival). */
function received(dir: string, label: string): number {
  const log = join(dir, 'calls.jsonl');
  if (!existsSync(log)) return 0;
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .filter((line) => (JSON.parse(line) as { label?: string }).label === label).length;
}

function errorOf(result: Result): { code?: string; message?: string } | undefined {
  return (result.structuredContent as { error?: { code?: string; message?: string } } | undefined)?.error;
}

async function statusOf(client: Client, operationId: unknown): Promise<string> {
  const status = await call(client, 'get_operation', { operation_id: operationId });
  return (status.structuredContent as { status: string }).status;
}

// Each case starts real processes and waits on them: generous bounds for a loaded two-core machine.
describe('idem proxy: what it says is what happened', { timeout: 90_000 }, () => {
  it('an answer that does not fit the output schema is the upstream answer, kept and replayed, never "nothing was done"', async () => {
    const dir = makeTempDir('idem-proxy-truth-');
    const client = await connect(await startProxy(dir));
    const args = { idempotency_key: 'shape-1', label: 'shape' };
    const first = await call(client, 'shaped_call', args);
    expect(JSON.stringify(first)).not.toMatch(/nothing was done/);
    // The upstream's answer as it came, marked as a tool error (a client checks no schema on one).
    expect(first.isError).toBe(true);
    expect(first.content[0]).toEqual({ type: 'text', text: 'did shape' });
    expect(first.structuredContent).toEqual({ wrong: 'shape' });
    expect(first._meta?.['idem/answer_problem']).toMatch(/output schema/);
    expect((first.content.at(-1) as { text: string }).text).toMatch(/may have acted/);
    expect(received(dir, 'shape')).toBe(1);
    expect(await statusOf(client, first._meta?.['idem/operation_id'])).toBe('succeeded');

    const retry = await call(client, 'shaped_call', args);
    expect(retry._meta?.['idem/replayed']).toBe(true);
    expect(retry.content).toEqual(first.content);
    expect(retry.structuredContent).toEqual(first.structuredContent);
    expect(received(dir, 'shape')).toBe(1);
  });

  it('a JSON-RPC error after the upstream acted is outcome_unknown with a next_action, never "nothing was done"', async () => {
    const dir = makeTempDir('idem-proxy-truth-');
    const client = await connect(await startProxy(dir));
    for (const [code, label] of [
      [-32602, 'params'],
      [-32601, 'method'],
      [-32603, 'internal'],
    ] as const) {
      const args = { idempotency_key: `rpc-${label}`, label, code };
      const answer = await call(client, 'rpc_error_call', args);
      expect(JSON.stringify(answer)).not.toMatch(/nothing was done/);
      expect(answer.isError).toBe(true);
      expect(errorOf(answer)?.code).toBe('outcome_unknown');
      const sc = answer.structuredContent as { next_action: string; operation_id: string };
      expect(sc.next_action).toMatch(/rpc_error_call/);
      expect(await statusOf(client, sc.operation_id)).toBe('outcome_unknown');
      const retry = await call(client, 'rpc_error_call', args);
      expect(errorOf(retry)?.code).toBe('outcome_unknown');
      expect(received(dir, label)).toBe(1);
    }
  });

  it('read-only and --exclude tools are authorized as keyed ones are: a token without the workspace reaches nothing', async () => {
    const dir = makeTempDir('idem-proxy-truth-');
    const tokens = join(dir, 'tokens.json');
    const member = 'member-token-0123456789abcdef';
    const outsider = 'outsider-token-0123456789abcdef';
    writeFileSync(
      tokens,
      JSON.stringify({
        [member]: { principal: 'alice', workspaces: ['team'] },
        [outsider]: { principal: 'carol', workspaces: ['elsewhere'] },
      }),
    );
    const proxy = await startProxy(dir, ['--tokens', tokens, '--workspace', 'team', '--exclude', 'big_call']);
    const inside = await connect(proxy, member);
    const outside = await connect(proxy, outsider);
    const tools = (await outside.listTools()).tools;
    expect(tools.find((tool) => tool.name === 'big_call')?.inputSchema.properties).not.toHaveProperty(
      'idempotency_key',
    );

    const read = await call(outside, 'read_secret', { label: 'read-out' });
    expect(read.isError).toBe(true);
    expect(errorOf(read)?.code).toBe('forbidden');
    const excluded = await call(outside, 'big_call', { label: 'excluded-out', bytes: 10 });
    expect(errorOf(excluded)?.code).toBe('forbidden');
    const keyed = await call(outside, 'shaped_call', { idempotency_key: 'k', label: 'keyed-out' });
    expect(errorOf(keyed)?.code).toBe('forbidden');
    expect(received(dir, 'read-out') + received(dir, 'excluded-out') + received(dir, 'keyed-out')).toBe(0);

    // The token that holds the workspace reaches both.
    expect((await call(inside, 'read_secret', { label: 'read-in' })).isError).not.toBe(true);
    expect((await call(inside, 'big_call', { label: 'excluded-in', bytes: 10 })).isError).not.toBe(true);
    expect(received(dir, 'read-in') + received(dir, 'excluded-in')).toBe(2);
  });

  it('an answer over --max-answer-bytes is answered once and kept as a bounded record (answer_too_large)', async () => {
    const dir = makeTempDir('idem-proxy-truth-');
    const client = await connect(await startProxy(dir, ['--max-answer-bytes', '2048']));
    const args = { idempotency_key: 'big-1', label: 'big', bytes: 5_000 };
    const first = await call(client, 'big_call', args);
    expect(first.isError).not.toBe(true);
    expect((first.content[0] as { text: string }).text).toHaveLength(5_000);
    const operationId = first._meta?.['idem/operation_id'];
    expect(await statusOf(client, operationId)).toBe('succeeded');

    const retry = await call(client, 'big_call', args);
    expect(retry._meta?.['idem/replayed']).toBe(true);
    expect(retry._meta?.['idem/operation_id']).toBe(operationId);
    expect(retry.isError).toBe(true);
    const kept = retry._meta?.['idem/answer_not_kept'] as Record<string, unknown>;
    expect(kept).toMatchObject({ code: 'answer_too_large', limit_bytes: 2048, upstream_is_error: false });
    expect(kept.bytes).toBeGreaterThan(5_000);
    const text = (retry.content[0] as { text: string }).text;
    expect(text).toMatch(/not kept/);
    expect(text).not.toMatch(/xxxx/);
    expect(JSON.stringify(retry).length).toBeLessThan(2048);
    expect(received(dir, 'big')).toBe(1);

    // Within the limit, the answer is kept as it came.
    const small = { idempotency_key: 'big-2', label: 'small', bytes: 100 };
    const smallFirst = await call(client, 'big_call', small);
    const smallRetry = await call(client, 'big_call', small);
    expect(smallRetry.content).toEqual(smallFirst.content);
    expect(smallRetry.isError).not.toBe(true);
  });

  it('an HTTP upstream down when the call is forwarded: nothing was sent, so it is sent once the upstream is back', async () => {
    const dir = makeTempDir('idem-proxy-truth-');
    const port = await freePort();
    const upstream = await startHttpUpstream(dir, port);
    const proxy = await startServerProcess({
      command: 'proxy',
      args: [
        '--db',
        join(dir, 'proxy.sqlite'),
        '--in-flight-wait',
        '500ms',
        '--upstream',
        `http://127.0.0.1:${port}/mcp`,
      ],
      readyTimeoutMs: 30_000,
    });
    const client = await connect(proxy);
    upstream.kill('SIGKILL');
    await new Promise((resolve) => upstream.once('exit', resolve));
    const args = { idempotency_key: 'down-1', label: 'down', bytes: 10 };
    const first = await call(client, 'big_call', args);
    // The connection was refused: no byte reached the upstream, so the outcome is not unknown.
    expect(errorOf(first)?.code).toBe('in_progress');
    const operationId = (first.structuredContent as { operation_id: string }).operation_id;
    expect(await statusOf(client, operationId)).not.toBe('outcome_unknown');
    await startHttpUpstream(dir, port);
    let answer = await call(client, 'big_call', args);
    // The worker's backoff between refused connections reaches 5 s (the proxy's policy).
    const deadline = Date.now() + 60_000;
    while (errorOf(answer)?.code === 'in_progress' && Date.now() < deadline) {
      await sleep(200);
      answer = await call(client, 'big_call', args);
    }
    expect(answer.isError).not.toBe(true);
    expect((answer.content[0] as { text: string }).text).toBe('x'.repeat(10));
    expect(await statusOf(client, operationId)).toBe('succeeded');
    expect(received(dir, 'down')).toBe(1);
  }, 120_000);

  it('a changed tool list is picked up without a restart (HTTP callers)', async () => {
    const dir = makeTempDir('idem-proxy-truth-');
    const client = await connect(await startProxy(dir));
    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('late_call');
    const before = { idempotency_key: 'shape-v1', label: 'versioned' };
    expect((await call(client, 'shaped_call', before))._meta?.['idem/replayed']).toBe(false);
    await call(client, 'grow_tools', { idempotency_key: 'grow-1', label: 'grow' });
    let late: { inputSchema: { required?: string[] } } | undefined;
    const deadline = Date.now() + 15_000;
    while (late === undefined && Date.now() < deadline) {
      late = (await client.listTools()).tools.find((tool) => tool.name === 'late_call');
      if (late === undefined) await sleep(100);
    }
    expect(late?.inputSchema.required).toEqual(['label', 'idempotency_key']);
    const answer = await call(client, 'late_call', { idempotency_key: 'late-1', label: 'late' });
    expect(answer.isError).not.toBe(true);
    expect(received(dir, 'late')).toBe(1);
    // shaped_call's input schema changed with the list: a new version, which refuses the old keys.
    const again = await call(client, 'shaped_call', before);
    expect(errorOf(again)?.code).toBe('version_conflict');
    expect(received(dir, 'versioned')).toBe(1);
  });
});

describe('idem proxy --stdio: what the upstream sends besides answers', { timeout: 90_000 }, () => {
  it('relays progress and log messages, refuses elicitation with a clear error, and tells its client of a changed tool list', async () => {
    const dir = makeTempDir('idem-proxy-truth-');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'proxy', '--stdio', '--db', join(dir, 'proxy.sqlite'), '--', 'node', UPSTREAM],
      env: cleanEnv({ UPSTREAM_LOG: join(dir, 'calls.jsonl') }),
      stderr: 'ignore',
    });
    let changed = 0;
    const client = new Client(
      { name: 'proxy-truth', version: '0.0.0' },
      {
        listChanged: {
          tools: {
            onChanged: () => {
              changed++;
            },
          },
        },
      },
    );
    clients.push(client);
    const logs: unknown[] = [];
    client.setNotificationHandler('notifications/message', (notification) => {
      logs.push(notification.params.data);
    });
    await client.connect(transport, { timeout: 30_000 });

    const steps: { progress: number; total?: number; message?: string }[] = [];
    for (const name of ['progress_call', 'progress_call']) {
      // Once through a keyed forward; the replay has no upstream call, hence no progress.
      const answer = (await client.callTool(
        { name, arguments: { idempotency_key: 'p-1', label: 'progress' } },
        { timeout: 30_000, onprogress: (step) => steps.push(step) },
      )) as Result;
      expect(answer.isError).not.toBe(true);
    }
    expect(steps.map((step) => [step.progress, step.total, step.message])).toEqual([
      [1, 3, 'step 1'],
      [2, 3, 'step 2'],
      [3, 3, 'step 3'],
    ]);
    // The upstream's log message reached the one caller of a stdio proxy.
    expect(logs).toContain('working on progress');

    const elicited = (await client.callTool(
      { name: 'elicit_call', arguments: { idempotency_key: 'e-1', label: 'elicit' } },
      { timeout: 30_000 },
    )) as Result;
    expect(elicited.isError).toBe(true);
    expect((elicited.content[0] as { text: string }).text).toMatch(
      /idem proxy does not relay elicitation\/create/,
    );
    expect(received(dir, 'elicit')).toBe(1);

    expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('late_call');
    await client.callTool(
      { name: 'grow_tools', arguments: { idempotency_key: 'g-1', label: 'grow' } },
      { timeout: 30_000 },
    );
    const deadline = Date.now() + 15_000;
    while (changed === 0 && Date.now() < deadline) await sleep(50);
    expect(changed).toBeGreaterThan(0);
    const late = (await client.listTools()).tools.find((tool) => tool.name === 'late_call');
    expect(late?.inputSchema.required).toEqual(['label', 'idempotency_key']);
    const answer = (await client.callTool(
      { name: 'late_call', arguments: { idempotency_key: 'l-1', label: 'late' } },
      { timeout: 30_000 },
    )) as Result;
    expect(answer.isError).not.toBe(true);
    expect(received(dir, 'late')).toBe(1);
  });
});
