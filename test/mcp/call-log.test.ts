import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { intentDigest } from '../../packages/idem/src/core/intent-digest.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { jsonLogger } from '../../packages/idem/src/log/json-logger.js';
import { authorizeByGrant } from '../../packages/idem/src/mcp/idem-identity.js';
import type { IdemTool, ToolCallContext } from '../../packages/idem/src/mcp/idem-tool.js';
import { NotesApp } from '../../packages/idem-cli/src/server/notes-app.js';
import { referenceTools } from '../../packages/idem-cli/src/server/reference-tools.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';
import { storeFactories } from '../helpers/store-fixtures.js';

// Values that must never reach a log line: the key and every argument of the calls below.
const KEY = 'key-Zq81-never-logged';
const BODY = 'body-private-4411';
const WORKSPACE = 'ws-logs';
const UNKNOWN_ID = 'op_unknown-id-never-logged-93';

type Line = Record<string, unknown>;

/** The raw text a logger wrote, and its `idem.call` lines parsed. */
function capture() {
  let text = '';
  const logger = jsonLogger((line) => (text += line));
  const lines = (): Line[] =>
    text
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Line);
  return { logger, text: () => text, lines, calls: () => lines().filter((l) => l.event === 'idem.call') };
}

const databases: SqliteDatabase[] = [];
afterEach(async () => {
  for (const db of databases.splice(0)) if (db.open) db.close();
  await cleanup();
});

/** The reference server's tools on SQLite, with an executor that logs into `log`. */
function reference(options: { lockTimeoutMs?: number } = {}) {
  const path = join(makeTempDir('idem-call-log-'), 'db.sqlite');
  const db = openSqlite(path);
  databases.push(db);
  const notes = new NotesApp(db, systemClock);
  const store = new SqliteStore(db, { lockTimeoutMs: options.lockTimeoutMs ?? 5000 });
  const log = capture();
  const executor = new Executor({ store, authorize: authorizeByGrant, logger: log.logger });
  const tools = referenceTools({ executor, notes, clock: systemClock, retentionMs: 60_000 });
  const tool = (name: string): IdemTool => {
    const found = tools.find((t) => t.name === name);
    if (found === undefined) throw new Error(`no tool ${name}`);
    return found;
  };
  const context: ToolCallContext = { principal: 'alice', credentials: { workspaces: [WORKSPACE] } };
  const call = (name: string, args: Record<string, unknown>, ctx: ToolCallContext = context) =>
    tool(name).handle(args, ctx);
  return { path, executor, log, call };
}

const createArgs = { idempotency_key: KEY, workspace: WORKSPACE, body: BODY };
const aliceIntent = (operation: string, key = KEY) =>
  intentDigest({ principal: 'alice', workspace: WORKSPACE, operation, key });

/** Fails the test if any line carries the key or an argument value. */
function expectNoValues(text: string, ...more: string[]) {
  for (const value of [KEY, BODY, UNKNOWN_ID, ...more]) expect(text).not.toContain(value);
}

describe('one idem.call line per MCP tool call, linked by an intent digest', () => {
  it('a busy first attempt and its successful retry log the same intent and different attempt ids', async () => {
    const { path, log, call } = reference({ lockTimeoutMs: 100 });
    const holder = openSqlite(path);
    databases.push(holder);
    holder.exec('BEGIN IMMEDIATE'); // another connection holds the write lock

    const busy = await call('create_note', createArgs);
    expect(busy.structuredContent).toMatchObject({ error: { code: 'busy', retryable: true } });
    holder.exec('ROLLBACK');
    const retry = await call('create_note', createArgs);
    expect(retry.structuredContent).toMatchObject({ status: 'succeeded', replayed: false });

    const [first, second, ...more] = log.calls();
    expect(more).toEqual([]);
    expect(first).toMatchObject({
      tool: 'create_note@v1',
      outcome: 'busy',
      intent: aliceIntent('create_note'),
    });
    expect(second).toMatchObject({
      tool: 'create_note@v1',
      outcome: 'executed',
      intent: aliceIntent('create_note'),
      operation_id: retry.structuredContent.operation_id,
      principal: 'alice',
      workspace: WORKSPACE,
    });
    expect(first?.attempt_id).toMatch(/^att_/);
    expect(second?.attempt_id).toMatch(/^att_/);
    expect(first?.attempt_id).not.toBe(second?.attempt_id);
    expectNoValues(log.text());
  });

  it('an invalid_argument refusal logs one line, with the intent its corrected retry logs', async () => {
    const { log, call } = reference();
    const refused = await call('create_note', { ...createArgs, colour: 'secret-colour-55' });
    expect(refused.structuredContent).toMatchObject({ error: { code: 'invalid_argument' } });
    expect(log.calls()).toEqual([
      expect.objectContaining({
        tool: 'create_note@v1',
        outcome: 'invalid_argument',
        intent: aliceIntent('create_note'),
        attempt_id: expect.stringMatching(/^att_/),
        principal: 'alice',
        workspace: WORKSPACE,
      }),
    ]);
    expect(log.calls()[0]).not.toHaveProperty('operation_id');

    await call('create_note', createArgs);
    expect(log.calls()[1]).toMatchObject({ outcome: 'executed', intent: aliceIntent('create_note') });

    // No key at all: still one line, without an intent; nor one without a principal.
    await call('create_note', { workspace: WORKSPACE, body: BODY });
    await call('create_note', createArgs, { principal: undefined });
    const [, , keyless, anonymous, ...more] = log.calls();
    expect(more).toEqual([]);
    expect(keyless).toMatchObject({ outcome: 'invalid_argument' });
    expect(keyless).not.toHaveProperty('intent');
    expect(anonymous).toMatchObject({ outcome: 'forbidden' });
    expect(anonymous).not.toHaveProperty('principal');
    expectNoValues(log.text(), 'secret-colour-55');
  });

  it('each read, status and cancel tool call logs one line, whatever its outcome', async () => {
    const { log, call } = reference();
    const created = await call('create_note', createArgs);
    const noteId = String(created.structuredContent.note_id);
    const started = await call('start_deployment', {
      idempotency_key: KEY,
      workspace: WORKSPACE,
      service: 'svc-private-12',
      version: 'ver-private-34',
    });
    const operationId = String(started.structuredContent.operation_id);
    const before = log.calls().length;
    expect(before).toBe(2);

    const reads: Array<[string, Record<string, unknown>, string]> = [
      ['get_note', { workspace: WORKSPACE, note_id: noteId }, 'ok'],
      ['get_note', { workspace: WORKSPACE, note_id: 'note-private-77' }, 'not_found'],
      ['list_notes', { workspace: WORKSPACE }, 'ok'],
      ['list_notes', { workspace: 'ws-not-granted' }, 'forbidden'],
      ['get_operation', { operation_id: operationId }, 'ok'],
      ['get_operation', { operation_id: UNKNOWN_ID }, 'not_found'],
      ['get_operation', { operation_id: 42 }, 'invalid_argument'],
      ['cancel_operation', { operation_id: operationId }, 'ok'],
      ['cancel_operation', { operation_id: UNKNOWN_ID }, 'not_found'],
    ];
    for (const [tool, args, outcome] of reads) {
      const count = log.calls().length;
      await call(tool, args);
      const added = log.calls().slice(count);
      expect(added, `${tool} ${outcome}`).toEqual([
        expect.objectContaining({
          tool,
          outcome,
          principal: 'alice',
          attempt_id: expect.stringMatching(/^att_/),
        }),
      ]);
    }
    // Without a principal, a read tool still logs its one line.
    await call('get_operation', { operation_id: operationId }, { principal: undefined });
    expect(log.calls().at(-1)).toMatchObject({ tool: 'get_operation', outcome: 'forbidden' });

    // The status and cancel lines name the operation and its action, joined to the start's line.
    const lines = log.calls();
    const deployIntent = aliceIntent('start_deployment');
    expect(lines[1]).toMatchObject({
      tool: 'start_deployment@v1',
      intent: deployIntent,
      operation_id: operationId,
    });
    const about = lines.filter((l) => l.operation_id === operationId);
    expect(about.map((l) => [l.tool, l.outcome, l.intent, l.workspace])).toEqual([
      ['start_deployment@v1', 'accepted', deployIntent, WORKSPACE],
      ['get_operation', 'ok', deployIntent, WORKSPACE],
      ['cancel_operation', 'ok', deployIntent, WORKSPACE],
    ]);
    // An unknown id is never logged (it is the caller's text, not the server's id).
    for (const line of lines.slice(before).filter((l) => l.outcome === 'not_found')) {
      expect(line).not.toHaveProperty('operation_id');
      expect(line).not.toHaveProperty('intent');
    }
    expect(new Set(lines.map((l) => l.attempt_id)).size).toBe(lines.length);
    expectNoValues(log.text(), 'svc-private-12', 'ver-private-34', 'note-private-77', noteId);
  });
});

describe.each(storeFactories)(
  'the executor links an internal first attempt to its retry ($name)',
  (factory) => {
    it('same intent, different attempt and operation ids, no key or argument in the text', async () => {
      const t = await factory.create();
      onTestFinished(() => t.close());
      const log = capture();
      const executor = new Executor<unknown>({
        store: t.store,
        faults: t.faults,
        authorize: () => true,
        logger: log.logger,
      });
      const request = { principal: 'alice', workspace: WORKSPACE, key: KEY, args: { body: BODY } };
      t.faults.arm('after_effect', () => {
        throw new Error('the disk hiccuped');
      });
      const failed = await executor.run(t.createNote, request);
      expect(failed).toMatchObject({ ok: false, error: { code: 'internal' } });
      const retried = await executor.run(t.createNote, request);
      expect(retried).toMatchObject({ ok: true, replayed: false });

      const [first, second, ...more] = log.calls();
      expect(more).toEqual([]);
      expect(first).toMatchObject({
        level: 'error',
        outcome: 'internal',
        intent: aliceIntent('create_note'),
      });
      expect(second).toMatchObject({
        level: 'info',
        outcome: 'executed',
        intent: aliceIntent('create_note'),
      });
      expect(first?.attempt_id).not.toBe(second?.attempt_id);
      expect(first?.operation_id).not.toBe(second?.operation_id);
      expectNoValues(log.text());
    });
  },
);

const failingInfo = {
  throws: () => {
    throw new RangeError('log sink full');
  },
  rejects: () => Promise.reject(new RangeError('log sink full')) as unknown as void,
};

describe.each(Object.keys(failingInfo) as Array<keyof typeof failingInfo>)('a logger that %s', (how) => {
  it('never changes what a committed call answers; the line it lost goes to stderr', async () => {
    const t = await storeFactories[0]!.create();
    onTestFinished(() => t.close());
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    onTestFinished(() => spy.mockRestore());
    const logger = { info: failingInfo[how], warn: () => {}, error: () => {} };
    const executor = new Executor<unknown>({ store: t.store, authorize: () => true, logger });
    const request = { principal: 'alice', workspace: WORKSPACE, key: KEY, args: { body: BODY } };

    const outcome = await executor.run(t.createNote, request);
    expect(outcome).toMatchObject({ ok: true, replayed: false });
    expect(await t.countNotes()).toBe(1);
    await new Promise((resolve) => setImmediate(resolve)); // a rejection is reported a tick later
    spy.mockRestore();
    const lines = written.map((line) => JSON.parse(line) as Line);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'error',
        event: 'idem.log_failed',
        log_error: 'RangeError',
        outcome: 'executed',
        intent: aliceIntent('create_note'),
      }),
    ]);
    expectNoValues(written.join(''));
  });
});
