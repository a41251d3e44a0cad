import { Console } from 'node:console';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import type { PgClient } from '../../packages/idem/src/adapters/postgres/postgres-pool.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/executor/executor.js';
import type { LoggerOption } from '../../packages/idem/src/log/to-logger.js';
import { storeFactories, type NoteArgs, type TestStore } from '../helpers/store-fixtures.js';

const SECRET = 'the body is private 7f3a';

/** Every line written to a stream, parsed as JSON. */
function captured(): { stream: PassThrough; lines: () => Array<Record<string, unknown>> } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return {
    stream,
    lines: () =>
      text
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/** The user's bug: an INSERT with three placeholders and one value, in the engine's own driver. */
function wrongParameterCount(store: TestStore): IdempotentOperation<unknown, NoteArgs> {
  const sql = (placeholders: string) =>
    `INSERT INTO notes (note_id, workspace, body) VALUES (${placeholders})`;
  return {
    name: 'create_note',
    version: 1,
    effect:
      store.name === 'sqlite'
        ? (db) => {
            (db as SqliteDatabase).prepare(sql('?, ?, ?')).run('only-one');
            return { resource_id: 'never' };
          }
        : async (client) => {
            await (client as PgClient).query(sql('$1, $2, $3'), ['only-one']);
            return { resource_id: 'never' };
          },
  };
}

async function open(factory: (typeof storeFactories)[number], logger: LoggerOption, authorize = () => true) {
  const t = await factory.create();
  onTestFinished(() => t.close());
  const executor = new Executor<unknown>({ store: t.store, authorize, logger });
  return { t, executor };
}

const request = (key: string) => ({ principal: 'alice', workspace: 'ws-1', key, args: { body: SECRET } });

// The engines' own stores: the effect below writes through the raw driver handle (better-sqlite3's
// Database, pg's PoolClient), which the ORM integrations do not hand out.
const engineStores = storeFactories.filter((f) => !f.name.includes(':'));

describe.each(engineStores)('errors in the application code are visible ($name)', (factory) => {
  it('an effect with a wrong SQL parameter count: internal with the operation id, one error line with the stack, nothing written', async () => {
    const log = captured();
    const { t, executor } = await open(factory, pino(log.stream));
    const outcome = await executor.run(wrongParameterCount(t), request('k-1'));

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error).toMatchObject({ code: 'internal', retryable: false });
    expect(outcome.error.operationId).toMatch(/^op_/);
    expect(outcome.error.message).toBe(
      `the tool's effect code failed; nothing was committed. The server log has the details under operation ${outcome.error.operationId}.`,
    );
    const [line, ...more] = log.lines();
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      level: 50, // pino's error
      msg: 'idem.call',
      event: 'idem.call',
      operation_id: outcome.error.operationId,
      attempt_id: outcome.attemptId,
      tool: 'create_note@v1',
      outcome: 'internal',
      error_source: 'effect',
    });
    expect(String(line?.error_message)).toMatch(
      factory.name === 'sqlite' ? /parameter/i : /bind message supplies 1 parameters/,
    );
    expect(String(line?.error_stack)).toContain('user-code-errors.test.ts');
    expect(JSON.stringify(log.lines())).not.toContain(SECRET);
    expect(await t.countNotes()).toBe(0);
    expect(await t.countReceipts()).toBe(0);

    // Nothing was kept: the same key with a corrected effect executes.
    const fixed = await executor.run(t.createNote, request('k-1'));
    expect(fixed).toMatchObject({ ok: true, replayed: false });
    expect(await t.countNotes()).toBe(1);
  });

  it('an authorize that throws: internal naming the attempt, logged as the authorize code, through console as it is', async () => {
    const log = captured();
    const logger = new Console({ stdout: log.stream, stderr: log.stream });
    const { executor, t } = await open(factory, logger, () => {
      throw new TypeError('acl.holds is not a function');
    });
    const outcome = await executor.run(t.createNote, request('k-2'));

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('internal');
    expect(outcome.error.message).toContain(`under attempt ${outcome.attemptId}`);
    expect(log.lines()).toEqual([
      expect.objectContaining({
        level: 'error',
        event: 'idem.call',
        attempt_id: outcome.attemptId,
        error_source: 'authorize',
        error_name: 'TypeError',
        error_message: 'acl.holds is not a function',
        error_stack: expect.stringContaining('user-code-errors.test.ts'),
      }),
    ]);
    expect(JSON.stringify(log.lines())).not.toContain(SECRET);
    expect(await t.countNotes()).toBe(0);
  });

  it('a successful call logs one info line through pino, without error fields', async () => {
    const log = captured();
    const { t, executor } = await open(factory, pino(log.stream));
    const outcome = await executor.run(t.createNote, request('k-3'));
    expect(outcome.ok).toBe(true);
    expect(log.lines()).toEqual([
      expect.objectContaining({ level: 30, msg: 'idem.call', outcome: 'executed', tool: 'create_note@v1' }),
    ]);
    expect(log.lines()[0]).not.toHaveProperty('error_stack');
  });
});
