import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectTarget, type McpClient } from '../../packages/idem/src/client/connect-target.js';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import type { IntentOutcome } from '../../packages/idem/src/client/intent-outcome.js';
import type { RetryPolicy } from '../../packages/idem/src/core/retry-policy.js';
import { TransportFaults, type FaultRule } from '../../packages/idem/src/testing/transport-faults.js';
import { noteIdsInDb, tempJournal } from '../helpers/client-fixtures.js';
import {
  CLI,
  REPO_ROOT,
  cleanEnv,
  cleanup,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

/**
 * The client against the real reference server, with a fault at every point of one call: the
 * request lost, the response lost or late, the connection closed after sending or before the
 * answer, the server killed after committing and restarted. Every intended action must produce
 * exactly one note, and the caller must get that note's id.
 */

const POLICY: Partial<RetryPolicy> = {
  totalMs: 20_000,
  attemptTimeoutMs: 1_500,
  maxAttempts: 20,
  baseDelayMs: 50,
  maxDelayMs: 400,
};

/**
 * Over stdio an attempt includes spawning the server process (the client reconnects after a
 * close), which under CI load can take longer than the HTTP attempt bound: a roomier one, and a
 * late response later than it.
 */
const STDIO_POLICY: Partial<RetryPolicy> = { ...POLICY, attemptTimeoutMs: 5_000, totalMs: 25_000 };

/** One fault of each kind on `create_note`; the late response arrives after `lateMs`. */
function faultRules(lateMs: number): Array<[string, FaultRule]> {
  return [
    ['request lost', { fault: 'drop_request', tool: 'create_note' }],
    ['response lost', { fault: 'drop_response', tool: 'create_note' }],
    [
      'response late (after the attempt timed out)',
      { fault: 'delay_response', tool: 'create_note', delayMs: lateMs },
    ],
    ['connection closed right after sending', { fault: 'close_after_send', tool: 'create_note' }],
    ['connection closed before the answer', { fault: 'close_before_response', tool: 'create_note' }],
  ];
}

const clients: IdemClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(cleanup);

function expectOneNote(outcome: IntentOutcome, dbPath: string, body: string): void {
  if (outcome.status !== 'succeeded') throw new Error(`expected success, got ${JSON.stringify(outcome)}`);
  const ids = noteIdsInDb(dbPath, body);
  expect(ids).toHaveLength(1);
  expect(outcome.result.note_id).toBe(ids[0]);
  expect(outcome.result.resource_id).toBe(ids[0]);
}

describe('the client over Streamable HTTP', () => {
  let server: ServerProcess;
  let dbPath: string;

  beforeAll(async () => {
    ensureBuilt();
    dbPath = join(makeTempDir(), 'notes.sqlite');
    server = await startServerProcess({ args: ['--db', dbPath] });
  });

  function client(faults: TransportFaults, url = server.url): IdemClient {
    const idem = new IdemClient({
      connect: (options) => connectTarget({ url }, { ...options, wrap: (t) => faults.wrap(t) }),
      journal: tempJournal().journal,
      policy: POLICY,
    });
    clients.push(idem);
    return idem;
  }

  it.each(faultRules(2_500))('%s: one note, and the caller gets its id', async (_name, rule) => {
    const faults = new TransportFaults().inject(rule);
    const body = `http ${rule.fault} ${randomUUID()}`;
    const outcome = await client(faults).call('create_note', { workspace: 'default', body });
    expect(faults.events.map((e) => e.fault)).toEqual([rule.fault]);
    expect(outcome.attempts).toBeGreaterThanOrEqual(2); // 2, unless the machine is slow enough for a timeout
    expectOneNote(outcome, dbPath, body);
  });

  it('server killed after committing, before replying, then restarted: one note', async () => {
    const killDb = join(makeTempDir(), 'notes.sqlite');
    const doomed = await startServerProcess({
      args: ['--db', killDb],
      env: { IDEM_TEST_FAULTS: 'before_reply=kill' },
    });
    const body = `http kill ${randomUUID()}`;
    const pending = client(new TransportFaults(), doomed.url).call('create_note', {
      workspace: 'default',
      body,
    });
    const exit = await doomed.waitForExit();
    expect(exit.signal).toBe('SIGKILL');
    expect(noteIdsInDb(killDb, body)).toHaveLength(1); // committed before the kill
    await startServerProcess({ args: ['--db', killDb, '--port', String(doomed.port)] });

    const outcome = await pending;

    expect(outcome.attempts).toBeGreaterThanOrEqual(2);
    expect(outcome).toMatchObject({ status: 'succeeded', replayed: true });
    expectOneNote(outcome, killDb, body);
  });
});

describe('the client over stdio', () => {
  let dbPath: string;
  const spawned: string[][] = [];

  beforeAll(() => {
    ensureBuilt();
    dbPath = join(makeTempDir(), 'notes.sqlite');
  });

  /** Each connection spawns `idem serve --stdio` on the same database; `env(n)` for the n-th. */
  function client(
    faults: TransportFaults,
    env: (n: number) => Record<string, string> = () => ({}),
  ): IdemClient {
    let n = 0;
    const connect = (options: { signal?: AbortSignal }): Promise<McpClient> => {
      const args = [CLI, 'serve', '--stdio', '--db', dbPath];
      spawned.push(args);
      return connectTarget(
        { command: process.execPath, args, cwd: REPO_ROOT, env: cleanEnv(env(n++)) },
        { ...options, wrap: (t) => faults.wrap(t) },
      );
    };
    const idem = new IdemClient({ connect, journal: tempJournal().journal, policy: STDIO_POLICY });
    clients.push(idem);
    return idem;
  }

  it.each(faultRules(6_000))('%s: one note, and the caller gets its id', async (_name, rule) => {
    const faults = new TransportFaults().inject(rule);
    const body = `stdio ${rule.fault} ${randomUUID()}`;
    const outcome = await client(faults).call('create_note', { workspace: 'default', body });
    expect(faults.events.map((e) => e.fault)).toEqual([rule.fault]);
    expect(outcome.attempts).toBeGreaterThanOrEqual(2); // 2, unless the machine is slow enough for a timeout
    expectOneNote(outcome, dbPath, body);
  });

  it('server process killed after committing, before replying; a new one answers: one note', async () => {
    const body = `stdio kill ${randomUUID()}`;
    const idem = client(new TransportFaults(), (n): Record<string, string> =>
      n === 0 ? { IDEM_TEST_FAULTS: 'before_reply=kill' } : {},
    );
    const before = spawned.length;

    const outcome = await idem.call('create_note', { workspace: 'default', body });

    expect(spawned.length - before).toBe(2); // the killed server and its replacement
    expect(outcome).toMatchObject({ status: 'succeeded', replayed: true });
    expectOneNote(outcome, dbPath, body);
  });
});
