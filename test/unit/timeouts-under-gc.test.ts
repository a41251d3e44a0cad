import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import { SqliteTransactor } from '../../packages/idem/src/adapters/sqlite/sqlite-transactor.js';
import { callWithTimeout } from '../../packages/idem/src/client/call-with-timeout.js';
import type { McpClient } from '../../packages/idem/src/client/connect-target.js';
import { runProcess } from '../../packages/idem/src/commands/command-process.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { IdemError } from '../../packages/idem/src/core/errors.js';
import { OutboxDispatcher } from '../../packages/idem/src/operations/index.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { underForcedGc } from '../helpers/forced-gc.js';
import { removeTempFiles, tempFile } from '../helpers/temp-files.js';
import { memoryLogger, openStore, tempDir } from '../operations/operations-fixtures.js';
import { commitOnce } from '../../packages/idem/src/executor/commit-once.js';
import { newAttemptId, newOperationId } from '../../packages/idem/src/core/ids.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';

// Issue 22: every timeout and deadline fires on time whatever the garbage collector does. Each
// bounded wait below runs while a full collection runs every 20 ms, and must end within its cap plus
// a margin generous enough for a loaded two-core machine. (The ready HTTP handlers' attempt timeout is
// tested the same way in test/server/deployment-handler.test.ts.)

/** A loopback HTTP server that answers every request after 6 s (cleared when the test ends). */
async function stalledServer(): Promise<string> {
  const server = createServer((_req, res) => {
    const answer = setTimeout(() => res.writeHead(200).end('{}'), 6_000);
    res.once('close', () => clearTimeout(answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('timeouts under forced collections', () => {
  it("the outbox's send timeout: a stalled destination is retried after 300 ms, not 6 s", async () => {
    const clock = new FakeClock();
    const store = openStore(join(tempDir(), 'idem.sqlite'), clock);
    const destination = `${await stalledServer()}/hook`;
    const operationId = newOperationId(clock.now());
    const identity: OperationIdentity = {
      principal: 'alice',
      workspace: 'team-a',
      operation: 'notify',
      version: 1,
      key: operationId,
    };
    await commitOnce(store.receipts, {
      identity,
      context: { operationId, attemptId: newAttemptId(clock.now()), identity },
      decide: () => ({ kind: 'execute' }),
      effect: (_db, context) => {
        void context.enqueue({ destination, dedupKey: 'evt-gc', payload: {} });
        return { resource_id: 'r_1' };
      },
      receipt: () => ({
        operationId,
        identity,
        fingerprint: 'f',
        kind: 'local',
        status: 'succeeded',
        resourceId: 'r_1',
        result: { status: 'succeeded', operation_id: operationId, resource_id: 'r_1' },
        createdAt: clock.now(),
        updatedAt: clock.now(),
        expiresAt: clock.now() + 60_000,
        attemptCount: 1,
        dispatched: false,
      }),
    });
    const logger = memoryLogger();
    const dispatcher = new OutboxDispatcher({ store, clock, logger, leaseMs: 5_000, sendTimeoutMs: 300 });
    const { value, ms } = await underForcedGc(() => dispatcher.runOnce());
    expect(value).toBe(1);
    expect(logger.events('outbox.retry_scheduled')).toEqual([
      expect.objectContaining({ outcome: 'timeout' }),
    ]);
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(3_000);
  });

  it("the client's per-call timeout: a call that gets no answer ends after 300 ms", async () => {
    // A connection whose calls never answer (the SDK's behaviour: only the signal ends them).
    const client = {
      transport: {},
      callTool: (_params: unknown, options: { signal: AbortSignal }) =>
        new Promise((_resolve, reject) =>
          options.signal.addEventListener('abort', () => reject(options.signal.reason)),
        ),
    } as unknown as McpClient;
    const { value, ms } = await underForcedGc(() =>
      callWithTimeout({
        connection: async () => client,
        onClosed: () => undefined,
        tool: 'create_note',
        args: {},
        timeoutMs: 300,
        clock: systemClock,
        signal: new AbortController().signal,
      }),
    );
    expect(value).toMatchObject({ kind: 'failure', failure: { kind: 'transient' } });
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(3_000);
  });

  it("a command's timeout: `sleep 30` with a 300 ms timeout is stopped by then", async () => {
    const { value, ms } = await underForcedGc(() =>
      runProcess({
        spec: {
          name: 'sleepy',
          argv: ['sleep', '30'],
          cwd: tmpdir(),
          timeoutMs: 300,
          rerunnable: false,
          description: '',
          env: {},
        },
        clock: systemClock,
        killGraceMs: 200,
        onOutput: () => undefined,
        cancelSignal: new AbortController().signal,
        leaseSignal: new AbortController().signal,
      }),
    );
    expect(value).toMatchObject({ stoppedBy: 'timeout', signal: 'SIGTERM' });
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(3_000);
  });

  it("SQLite's lock wait: busy after the 300 ms lock timeout; an aborted waiting write leaves at once", async () => {
    onTestFinished(removeTempFiles);
    const path = tempFile();
    const db = openSqlite(path);
    db.exec('CREATE TABLE t (n INTEGER)');
    const holder = openSqlite(path);
    holder.exec('BEGIN IMMEDIATE'); // holds the write lock for the whole test
    onTestFinished(() => {
      holder.exec('ROLLBACK');
      holder.close();
      db.close();
    });
    const tx = new SqliteTransactor(db, systemClock, 300, { maxBatch: 8, gather: 'turn' });
    const caller = new AbortController();
    const t0 = performance.now();
    const settled = (promise: Promise<unknown>) =>
      promise.then(
        () => ({ error: undefined, ms: performance.now() - t0 }),
        (error: unknown) => ({ error, ms: performance.now() - t0 }),
      );
    const { value } = await underForcedGc(async () => {
      const waiting = settled(tx.write(() => db.exec('INSERT INTO t VALUES (1)')));
      const aborted = settled(tx.write(() => db.exec('INSERT INTO t VALUES (2)'), { signal: caller.signal }));
      setTimeout(() => caller.abort(new Error('caller gave up')), 100);
      return { waiting: await waiting, aborted: await aborted };
    });
    expect((value.aborted.error as Error).message).toBe('caller gave up');
    expect(value.aborted.ms).toBeLessThan(1_000);
    expect(value.waiting.error).toBeInstanceOf(IdemError);
    expect((value.waiting.error as IdemError).code).toBe('busy');
    expect(value.waiting.ms).toBeGreaterThanOrEqual(290);
    expect(value.waiting.ms).toBeLessThan(3_000);
  });
});
