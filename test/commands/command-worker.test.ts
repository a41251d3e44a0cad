import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { newAttemptId } from '../../packages/idem/src/core/ids.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { requestCancel, startAttempt } from '../../packages/idem/src/operations/ledger-transitions.js';
import { postgresAvailable } from '../helpers/postgres-fixtures.js';
import type { Engine } from '../operations/operations-fixtures.js';
import { alive, commandHarness, until } from './command-fixtures.js';

// A CommandHandler in a real Worker on a real store (SQLite, and PostgreSQL when reachable), with
// real processes: each command appends to a side file ($SIDE), which proves how often it ran.

const engines: Engine[] = postgresAvailable ? ['sqlite', 'postgres'] : ['sqlite'];

const sh = (script: string) => ({ argv: ['sh', '-c', script], timeout: '30s' });

describe.each(engines)('run_command on %s', (engine) => {
  it('exit 0: succeeded with the completion evidence; read_command_output returns what it printed', async () => {
    const h = await commandHarness(engine, {
      hello: sh('echo "ran" >> "$SIDE"; echo out-line; echo err-line >&2'),
    });
    h.startWorker();
    const accepted = await h.run('hello', randomUUID());
    expect(accepted).toMatchObject({ isError: false, sc: { status: 'accepted' } });
    const opId = accepted.sc.operation_id as string;
    const done = await h.settled(opId);
    expect(done.status).toBe('succeeded');
    expect(done.attemptCount).toBe(1);
    const printed = 'out-line\nerr-line\n';
    expect(done.result).toMatchObject({
      status: 'succeeded',
      operation_id: opId,
      command: 'hello',
      exit_code: 0,
      signal: null,
      output_bytes: printed.length,
      output_kept_bytes: printed.length,
      last_lines: ['out-line', 'err-line'],
    });
    expect(done.result?.output_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(typeof done.result?.duration_ms).toBe('number');
    expect(h.sideLines()).toEqual(['ran']);

    const read = await h.read({ operation_id: opId });
    expect(read).toMatchObject({
      isError: false,
      sc: {
        finished: true,
        started: true,
        offset: 0,
        next_offset: printed.length,
        output: printed,
        output_bytes: printed.length,
      },
    });
    const part = await h.read({ operation_id: opId, offset: 4, limit: 6 });
    expect(part.sc).toMatchObject({ offset: 4, next_offset: 10, output: 'line\ne' });
    // Owner-only, like get_operation: another principal gets exactly what an unknown id gets.
    expect((await h.read({ operation_id: opId }, 'mallory')).sc.error).toMatchObject({ code: 'not_found' });
    expect((await h.read({ operation_id: 'op_nope' })).sc.error).toMatchObject({ code: 'not_found' });
    // The replay of the call returns the stored result.
    const key = randomUUID();
    const first = await h.run('hello', key);
    await h.settled(first.sc.operation_id as string);
    expect((await h.run('hello', key)).sc).toMatchObject({
      status: 'succeeded',
      replayed: true,
      exit_code: 0,
    });
    expect(h.sideLines()).toEqual(['ran', 'ran']);
  });

  it('a non-zero exit: failed with the exit code and the output tail, never retried', async () => {
    const h = await commandHarness(engine, {
      migrate: sh('echo "ran" >> "$SIDE"; echo "applying 0042"; echo "ERROR: relation exists" >&2; exit 3'),
    });
    h.startWorker();
    const opId = (await h.run('migrate', randomUUID())).sc.operation_id as string;
    const done = await h.settled(opId);
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('internal');
    expect(done.error?.message).toContain('exited with code 3');
    expect(done.error?.message).toContain('ERROR: relation exists');
    expect(done.result).toMatchObject({
      exit_code: 3,
      signal: null,
      last_lines: ['applying 0042', 'ERROR: relation exists'],
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await h.get(opId)).attemptCount).toBe(1);
    expect(h.sideLines()).toEqual(['ran']);
  });

  it('a timeout: the process group is killed; failed with the reason', async () => {
    const h = await commandHarness(engine, {
      slow: {
        argv: [
          'sh',
          '-c',
          'echo "started" >> "$SIDE"; sleep 30 & echo $! >> "$SIDE"; wait; echo done >> "$SIDE"',
        ],
        timeout: '500ms',
      },
    });
    h.startWorker();
    const opId = (await h.run('slow', randomUUID())).sc.operation_id as string;
    const done = await h.settled(opId);
    expect(done.status).toBe('failed');
    expect(done.error?.message).toMatch(/timed out after 500 milliseconds and was killed/);
    expect(done.result).toMatchObject({ stopped_by: 'timeout', signal: 'SIGTERM', exit_code: null });
    const [started, grandchild] = h.sideLines();
    expect(started).toBe('started');
    // The background `sleep` was in the group: it is gone too.
    await until(() => !alive(Number(grandchild)));
    expect(h.sideLines()).toHaveLength(2);
  });

  it('cancel during a long command: SIGTERM to the group; cancelled, with the evidence', async () => {
    const h = await commandHarness(engine, {
      long: sh(
        'echo "started" >> "$SIDE"; echo working; sleep 30 & echo $! >> "$SIDE"; wait; echo done >> "$SIDE"',
      ),
    });
    h.startWorker();
    const opId = (await h.run('long', randomUUID())).sc.operation_id as string;
    await until(() => h.sideLines().length === 2);
    const running = await h.read({ operation_id: opId });
    expect(running.sc).toMatchObject({ status: 'running', finished: false, started: true });
    expect((await requestCancel(h.store.ledger, opId, systemClock.now()))?.status).toBe('cancel_requested');
    const done = await h.settled(opId);
    expect(done.status).toBe('cancelled');
    expect(done.result).toMatchObject({
      status: 'cancelled',
      operation_id: opId,
      stopped_by: 'cancel',
      signal: 'SIGTERM',
      last_lines: ['working'],
    });
    expect(done.result?.next_action).toMatch(/may have done part of its work/);
    await until(() => !alive(Number(h.sideLines()[1])));
    expect(h.sideLines()).toHaveLength(2);
  });

  it('cancel after the process exited by itself: the real outcome stands', async () => {
    // sh exits at once; the background sleep keeps the pipes open, so the run is still being
    // collected (up to the kill grace) when the cancel request is observed.
    const h = await commandHarness(
      engine,
      { quick: sh('echo $$ >> "$SIDE"; sleep 3 & echo bye') },
      { killGraceMs: 2500 },
    );
    h.startWorker();
    const opId = (await h.run('quick', randomUUID())).sc.operation_id as string;
    await until(() => h.sideLines().length === 1);
    const shPid = Number(h.sideLines()[0]);
    await until(() => !alive(shPid));
    expect((await h.get(opId)).status).toBe('running');
    await requestCancel(h.store.ledger, opId, systemClock.now());
    const done = await h.settled(opId);
    expect(done.status).toBe('succeeded');
    expect(done.result).toMatchObject({ exit_code: 0, last_lines: ['bye'] });
    expect(done.result?.stopped_by).toBeUndefined();
  });

  it('the same key sent concurrently: one operation, one process', async () => {
    const h = await commandHarness(engine, { once: sh('echo "ran $$" >> "$SIDE"; sleep 0.3') });
    h.startWorker();
    h.startWorker();
    const key = randomUUID();
    const calls = await Promise.all(Array.from({ length: 8 }, () => h.run('once', key)));
    const ids = new Set(calls.map((c) => c.sc.operation_id));
    expect(ids.size).toBe(1);
    const opId = [...ids][0] as string;
    await h.settled(opId);
    const replays = await Promise.all(Array.from({ length: 4 }, () => h.run('once', key)));
    for (const replay of replays)
      expect(replay.sc).toMatchObject({ status: 'succeeded', operation_id: opId });
    expect(h.sideLines()).toHaveLength(1);
  });

  it('the child gets only PATH, HOME, LANG and its declared env', async () => {
    const h = await commandHarness(
      engine,
      { env: { argv: ['env'], timeout: '10s', env: { APP_MODE: 'demo' } } },
      {
        serverEnv: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: '/home/idem',
          IDEM_TOKEN: 'server-token-123',
          DATABASE_URL: 'postgres://admin:hunter2@db/prod',
        },
      },
    );
    h.startWorker();
    const opId = (await h.run('env', randomUUID())).sc.operation_id as string;
    expect((await h.settled(opId)).status).toBe('succeeded');
    const out = (await h.read({ operation_id: opId })).sc.output as string;
    const names = out
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.split('=')[0])
      .sort();
    expect(names).toEqual(['APP_MODE', 'HOME', 'PATH', 'SIDE']);
    expect(out).not.toContain('server-token-123');
    expect(out).not.toContain('hunter2');
  });

  it('an unknown command is invalid_argument and nothing is recorded', async () => {
    const h = await commandHarness(engine, { known: sh('true') });
    const refused = await h.run('rm -rf /', randomUUID());
    expect(refused.isError).toBe(true);
    expect(refused.sc).toMatchObject({ status: 'rejected', error: { code: 'invalid_argument' } });
    expect(await h.store.ledger.list()).toHaveLength(0);
  });

  it('a run interrupted by a crash is never started again: outcome_unknown naming the command', async () => {
    const h = await commandHarness(engine, {
      migrate: { ...sh('echo "ran" >> "$SIDE"'), description: 'Apply migrations' },
    });
    const opId = (await h.run('migrate', randomUUID())).sc.operation_id as string;
    await crashAfterDispatch(h.store, opId);
    h.startWorker();
    const done = await h.settled(opId);
    expect(done.status).toBe('outcome_unknown');
    expect(done.error?.nextAction).toContain('command "migrate"');
    expect(done.error?.nextAction).toContain('read_command_output');
    expect(done.error?.nextAction).toContain('It is not run again automatically');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(h.sideLines()).toEqual([]);
  });

  it('a rerunnable command interrupted by a crash is run again by the next worker', async () => {
    const h = await commandHarness(engine, { build: { ...sh('echo "ran" >> "$SIDE"'), rerunnable: true } });
    const opId = (await h.run('build', randomUUID())).sc.operation_id as string;
    await crashAfterDispatch(h.store, opId);
    h.startWorker();
    const done = await h.settled(opId);
    expect(done.status).toBe('succeeded');
    expect(done.attemptCount).toBe(2);
    expect(h.sideLines()).toEqual(['ran']);
  });

  it('output is never logged', async () => {
    const h = await commandHarness(engine, { noisy: sh('echo SECRET-OUTPUT-LINE; exit 1') });
    h.startWorker();
    const opId = (await h.run('noisy', randomUUID())).sc.operation_id as string;
    expect((await h.settled(opId)).status).toBe('failed');
    expect(h.logger.lines.length).toBeGreaterThan(0);
    expect(JSON.stringify(h.logger.lines)).not.toContain('SECRET-OUTPUT-LINE');
    expect(readFileSync(`${h.handler.outputDir}/${opId}.out`).includes('SECRET-OUTPUT-LINE')).toBe(true);
  });
});

/** A worker that claimed the operation and recorded its attempt as dispatched, then died. */
async function crashAfterDispatch(store: IdemStore, opId: string) {
  const now = systemClock.now();
  const claimed = await store.ledger.claim({ workerId: 'dead-worker', now, leaseMs: 200 });
  expect(claimed?.operationId).toBe(opId);
  const started = await startAttempt(store.ledger, opId, {
    workerId: 'dead-worker',
    attemptId: newAttemptId(now),
    now,
    from: ['accepted', 'running'],
  });
  expect(started).toMatchObject({ status: 'running', dispatched: true });
}
