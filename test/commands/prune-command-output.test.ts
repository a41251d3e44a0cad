import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { newOperationId } from '../../packages/idem/src/core/ids.js';
import { outputPaths } from '../../packages/idem/src/commands/command-output.js';
import { pruneCommandOutput } from '../../packages/idem/src/commands/index.js';
import { requestCancel } from '../../packages/idem/src/operations/ledger-transitions.js';
import type { OperationsLedger } from '../../packages/idem/src/ports/operations-ledger.js';
import { memoryStore } from '../../packages/idem/src/testing/memory-store.js';
import { postgresAvailable } from '../helpers/postgres-fixtures.js';
import { tempDir } from '../operations/operations-fixtures.js';
import { commandHarness, until, type CommandEngine } from './command-fixtures.js';

// Real files in a temp dir, real operations carried by a real Worker with real processes, on each
// store: what the sweep turned into a tombstone loses its files, everything else keeps them.

const engines: CommandEngine[] = postgresAvailable ? ['memory', 'sqlite', 'postgres'] : ['memory', 'sqlite'];

const sh = (script: string) => ({ argv: ['sh', '-c', script], timeout: '30s' });
const DAY = 24 * 3_600_000;

/** A well-formed operation id no ledger has. */
const unknownId = () => newOperationId(systemClock.now());

describe.each(engines)('pruneCommandOutput on %s', (engine) => {
  it("removes the files of swept operations only: live ones (accepted, running, final) and others' files stay", async () => {
    const h = await commandHarness(engine, {
      quick: sh('echo printed'),
      long: sh('echo started >> "$SIDE"; echo working; sleep 30'),
    });
    const out = h.handler.outputDir;
    const files = (id: string) => outputPaths(out, id);
    const worker = h.startWorker();

    // A: finished, then swept as if its retention had passed.
    const a = (await h.run('quick', randomUUID())).sc.operation_id as string;
    expect((await h.settled(a)).status).toBe('succeeded');
    expect(existsSync(files(a).out) && existsSync(files(a).meta)).toBe(true);
    const swept = await h.store.housekeeping.sweep({
      now: systemClock.now() + 2 * DAY,
      tombstoneTtlMs: 30 * DAY,
      batchSize: 100,
    });
    expect(swept.tombstoned).toBe(1);
    // What the pruner goes by: a swept id is unknown to the ledger, on every store.
    expect(await h.store.ledger.get(a)).toBeUndefined();

    // B: final, its retention not passed.
    const b = (await h.run('quick', randomUUID())).sc.operation_id as string;
    expect((await h.settled(b)).status).toBe('succeeded');
    // C: running (the worker's one loop is busy with it from now on).
    const c = (await h.run('long', randomUUID())).sc.operation_id as string;
    // Cancelled when the test ends, also when it fails (before the worker stops, which waits for it).
    onTestFinished(async () => {
      await requestCancel(h.store.ledger, c, systemClock.now());
    });
    await until(() => h.sideLines().length === 1);
    // D: accepted; its files are what a worker that just claimed it would have written.
    const d = (await h.run('quick', randomUUID())).sc.operation_id as string;
    writeFileSync(files(d).meta, '{"state":"starting"}\n');
    writeFileSync(files(d).out, '');

    // Not Idem's: other names, an id of another shape, a directory and a link named like output.
    const orphan = unknownId();
    const foreign = [
      'notes.txt',
      'package.json',
      'op_123.out',
      `OP_${'a'.repeat(32)}.out`,
      `${unknownId()}.outx`,
      `${unknownId()}.json.bak`,
      `x${unknownId()}.out`,
    ];
    for (const name of foreign) writeFileSync(join(out, name), 'keep me');
    const dirNamed = `${unknownId()}.out`;
    mkdirSync(join(out, dirNamed));
    const linkNamed = `${unknownId()}.json`;
    symlinkSync(join(out, 'notes.txt'), join(out, linkNamed));
    // An id that never existed here (a run whose operation is gone, and a crash's temporary file).
    writeFileSync(files(orphan).out, 'old');
    writeFileSync(`${files(orphan).meta}.tmp`, '{}');

    const before = readdirSync(out).sort();
    expect((await h.get(b)).status).toBe('succeeded');
    expect((await h.get(c)).status).toBe('running');
    expect((await h.get(d)).status).toBe('accepted');
    const result = await pruneCommandOutput(out, h.store.ledger);
    expect(result).toEqual({ operations: 2, files: 4, failed: 0 });
    const gone = [`${a}.out`, `${a}.json`, `${orphan}.out`, `${orphan}.json.tmp`];
    expect(readdirSync(out).sort()).toEqual(before.filter((name) => !gone.includes(name)));
    for (const id of [b, c, d]) expect(existsSync(files(id).out) && existsSync(files(id).meta)).toBe(true);
    for (const name of [...foreign, dirNamed, linkNamed]) expect(existsSync(join(out, name))).toBe(true);
    // The running command's output is still readable, and a second pass finds nothing to remove.
    await until(async () => ((await h.read({ operation_id: c })).sc.output as string) === 'working\n');
    expect(await pruneCommandOutput(out, h.store.ledger)).toEqual({ operations: 0, files: 0, failed: 0 });

    await requestCancel(h.store.ledger, c, systemClock.now());
    expect((await h.settled(c)).status).toBe('cancelled');
    await worker.stop();
    expect(h.sideLines()).toEqual(['started']);
  });
});

describe('pruneCommandOutput', () => {
  /** A directory with the files of `count` operations no ledger has. */
  function orphans(count: number): { dir: string; names: string[] } {
    const dir = join(tempDir(), 'out');
    mkdirSync(dir);
    const names: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const { out, meta } = outputPaths(dir, unknownId());
      writeFileSync(out, 'output');
      writeFileSync(meta, '{}');
      names.push(out, meta);
    }
    return { dir, names };
  }

  it('a missing directory is nothing to prune', async () => {
    const dir = join(tempDir(), 'never-created');
    expect(await pruneCommandOutput(dir, memoryStore().ledger)).toEqual({
      operations: 0,
      files: 0,
      failed: 0,
    });
  });

  it('an aborted signal rejects with its reason and removes nothing', async () => {
    const { dir, names } = orphans(2);
    const controller = new AbortController();
    const reason = new Error('stopping');
    controller.abort(reason);
    await expect(pruneCommandOutput(dir, memoryStore().ledger, { signal: controller.signal })).rejects.toBe(
      reason,
    );
    for (const name of names) expect(existsSync(name)).toBe(true);
  });

  it('an abort during the pass rejects with its reason; the files not reached stay', async () => {
    const { dir, names } = orphans(3);
    const store = memoryStore();
    const controller = new AbortController();
    const reason = new Error('stopping');
    let lookups = 0;
    const ledger: Pick<OperationsLedger, 'get'> = {
      get: async (id, options) => {
        lookups += 1;
        // The second lookup is where the server stops: the store sees the aborted signal.
        if (lookups === 2) controller.abort(reason);
        return store.ledger.get(id, options);
      },
    };
    await expect(pruneCommandOutput(dir, ledger, { signal: controller.signal })).rejects.toBe(reason);
    expect(lookups).toBe(2);
    // The first operation's two files went before the abort; the other two operations' stay.
    expect(names.filter((name) => existsSync(name))).toHaveLength(4);
  });

  it('a file removed by someone else meanwhile is not counted and is no failure', async () => {
    const { dir, names } = orphans(1);
    const store = memoryStore();
    const ledger: Pick<OperationsLedger, 'get'> = {
      get: async (id, options) => {
        rmSync(names[0] as string); // another server pruning the same directory
        return store.ledger.get(id, options);
      },
    };
    expect(await pruneCommandOutput(dir, ledger)).toEqual({ operations: 1, files: 1, failed: 0 });
    expect(readdirSync(dir)).toEqual([]);
  });

  it("a ledger that cannot answer fails the pass with the store's error; nothing is removed", async () => {
    const { dir, names } = orphans(1);
    const store = memoryStore();
    await store.close();
    await expect(pruneCommandOutput(dir, store.ledger)).rejects.toMatchObject({ code: 'unavailable' });
    for (const name of names) expect(existsSync(name)).toBe(true);
  });
});
