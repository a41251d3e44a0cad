import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { IntentJournal } from '../../packages/idem/src/client/intent-journal.js';
import type { LogFields, Logger } from '../../packages/idem/src/core/logger.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { cleanup, connectInMemory, makeTempDir } from '../helpers/mcp-fixtures.js';
import { openTestStore, type SqliteTestStore } from '../helpers/store-fixtures.js';
import { mountTmpfs, reportNoTmpfs } from '../helpers/tmpfs.js';

// A real full disk: SQLite on a 2 MiB tmpfs, the rest of it taken by a filler file. Each call writes
// a 10,000-character body, so every COMMIT appends new WAL frames (the WAL only grows: far below
// its checkpoint threshold), needs new pages of the file system, and meets ENOSPC.

const tmpfs = mountTmpfs(2048);
const BODY = 'x'.repeat(10_000);

interface LogLine extends LogFields {
  level: string;
  event: string;
}

function capturingLogger(lines: LogLine[]): Logger {
  const at =
    (level: string) =>
    (event: string, fields: LogFields = {}) =>
      void lines.push({ level, event, ...fields });
  return { info: at('info'), warn: at('warn'), error: at('error') };
}

const opened: SqliteTestStore[] = [];
const apps: ReferenceApp[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((t) => t.close()));
  await Promise.all(apps.splice(0).map((app) => app.close()));
  await cleanup();
});

afterAll(() => {
  if ('dir' in tmpfs) tmpfs.unmount();
});

if ('dir' in tmpfs) {
  describe('a full disk (SQLite on a small tmpfs)', () => {
    it('calls before it succeed; while full every call is unavailable (retryable) and writes nothing; replays go on; after freeing, calls succeed', async () => {
      const path = join(tmpfs.dir, 'executor.sqlite');
      const t = openTestStore({ path });
      opened.push(t);
      const lines: LogLine[] = [];
      const executor = new Executor({
        store: t.store,
        authorize: () => true,
        logger: capturingLogger(lines),
      });
      const call = (key: string) =>
        executor.run(t.createNote, { principal: 'p', workspace: 'w', key, args: { body: BODY } });

      const before = [await call('before-1'), await call('before-2')];
      for (const outcome of before) expect(outcome.ok).toBe(true);

      const filler = tmpfs.fill();
      const whileFull = [await call('full-1'), await call('full-2')];
      // Concurrent calls share one group commit: the whole batch fails, each call alike.
      whileFull.push(...(await Promise.all([call('full-3'), call('full-4'), call('full-5')])));
      for (const outcome of whileFull) {
        if (outcome.ok) throw new Error(`a call succeeded on a full disk: ${JSON.stringify(outcome)}`);
        expect(outcome.error).toMatchObject({
          code: 'unavailable',
          retryable: true,
          message: `the database disk is full (SQLITE_FULL) at ${path}; nothing was committed`,
          cause: { driverCode: 'SQLITE_FULL', path },
        });
        expect(outcome.error.retryAfterMs).toBeGreaterThan(0);
        expect(outcome.error.nextAction).toContain('same idempotency_key');
      }
      // The log line names the condition and the file, never the body.
      const failedLines = lines.filter((l) => l.event === 'idem.call' && l.outcome === 'unavailable');
      expect(failedLines).toHaveLength(5);
      for (const line of failedLines) {
        expect(line).toMatchObject({ level: 'error', driver_code: 'SQLITE_FULL', db_path: path });
        expect(JSON.stringify(line)).not.toContain('xxxxxxxx');
      }

      // Replays of the earlier keys still answer, from the full disk.
      const replays = [await call('before-1'), await call('before-2')];
      replays.forEach((replay, i) => {
        expect(replay).toMatchObject({ ok: true, replayed: true });
        if (replay.ok && before[i]?.ok) expect(replay.result).toEqual(before[i].result);
      });
      expect(await t.countNotes()).toBe(2);
      expect(await t.countReceipts()).toBe(2);

      tmpfs.free(filler);
      // Nothing of the failed calls appeared once there was room again.
      expect(await t.countNotes()).toBe(2);
      expect(await t.countReceipts()).toBe(2);
      // The retry of a failed key runs once now; a new key runs too.
      const retried = await call('full-1');
      expect(retried).toMatchObject({ ok: true, replayed: false });
      expect(await call('after-1')).toMatchObject({ ok: true, replayed: false });
      expect(await call('full-1')).toMatchObject({ ok: true, replayed: true });
      expect(await t.countNotes()).toBe(4);
      expect(await t.countReceipts()).toBe(4);
    });

    it('IdemClient keeps retrying a call answered unavailable (retryable) and gets it done once space is freed', async () => {
      const dbPath = join(tmpfs.dir, 'server.sqlite');
      const lines: LogLine[] = [];
      const app = new ReferenceApp({
        dbPath,
        registry: TokenRegistry.fixed({ principal: 'dev', workspaces: ['default'] }),
        logger: capturingLogger(lines),
      });
      apps.push(app);
      const journal = IntentJournal.open(join(makeTempDir(), 'intents.sqlite'));
      const idem = new IdemClient({
        connect: () => connectInMemory(app, 'dev'),
        journal,
        policy: {
          totalMs: 20_000,
          attemptTimeoutMs: 5_000,
          maxAttempts: 10,
          baseDelayMs: 20,
          maxDelayMs: 200,
        },
      });
      const first = await idem.call('create_note', { workspace: 'default', body: BODY });
      expect(first.status).toBe('succeeded');

      const filler = tmpfs.fill();
      let refusals = 0;
      // The operator frees the disk after the server refused the second attempt.
      const watch = setInterval(() => {
        refusals = lines.filter((l) => l.event === 'idem.call' && l.outcome === 'unavailable').length;
        if (refusals >= 2) {
          clearInterval(watch);
          tmpfs.free(filler);
        }
      }, 5);
      let outcome;
      try {
        outcome = await idem.call('create_note', { workspace: 'default', body: 'y'.repeat(10_000) });
      } finally {
        clearInterval(watch);
      }
      if (outcome.status !== 'succeeded') throw new Error(`expected success: ${JSON.stringify(outcome)}`);
      expect(refusals).toBe(2);
      expect(outcome.attempts).toBe(3);
      expect(outcome.replayed).toBe(false);
      // One key throughout, one note: the refused attempts wrote nothing.
      expect(app.notes.list('default')).toHaveLength(2);
      const receipts = app.db.prepare('SELECT count(*) AS n FROM idem_operations').get() as { n: number };
      expect(receipts.n).toBe(2);
      expect(idem.unsettled()).toHaveLength(0);
      await idem.close();
      journal.close();
    });

    it('IdemClient does not abandon an action while the disk stays full: outcome_unknown, resumable, done once freed', async () => {
      const dbPath = join(tmpfs.dir, 'resume.sqlite');
      const app = new ReferenceApp({
        dbPath,
        registry: TokenRegistry.fixed({ principal: 'dev', workspaces: ['default'] }),
      });
      apps.push(app);
      const journal = IntentJournal.open(join(makeTempDir(), 'intents.sqlite'));
      const idem = new IdemClient({
        connect: () => connectInMemory(app, 'dev'),
        journal,
        policy: {
          totalMs: 10_000,
          attemptTimeoutMs: 5_000,
          maxAttempts: 2,
          baseDelayMs: 20,
          maxDelayMs: 200,
        },
      });
      const filler = tmpfs.fill();
      const outcome = await idem.call('create_note', { workspace: 'default', body: BODY });
      if (outcome.status !== 'outcome_unknown')
        throw new Error(`expected outcome_unknown: ${JSON.stringify(outcome)}`);
      expect(outcome.attempts).toBe(2);
      expect(outcome.lastError).toMatchObject({ code: 'unavailable', retryable: true });
      expect(outcome.lastError?.message).toContain('SQLITE_FULL');
      expect(outcome.nextAction).toContain('Resume intent');
      // Not settled as failed: the intent waits in the journal with its key.
      expect(idem.unsettled().map((intent) => intent.intentId)).toEqual([outcome.intentId]);
      expect(app.notes.list('default')).toHaveLength(0);

      tmpfs.free(filler);
      const resumed = await idem.resume(outcome.intentId);
      expect(resumed).toMatchObject({ status: 'succeeded', key: outcome.key, replayed: false });
      expect(app.notes.list('default')).toHaveLength(1);
      expect(idem.unsettled()).toHaveLength(0);
      await idem.close();
      journal.close();
    });
  });
} else {
  reportNoTmpfs('the full-disk suite', tmpfs.reason);
  describe('a full disk (SQLite on a small tmpfs)', () => {
    it('is not run: no tmpfs could be mounted (see stderr)', () => expect(tmpfs.reason).not.toBe(''));
  });
}
