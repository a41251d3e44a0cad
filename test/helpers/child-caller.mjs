// A separate OS process that calls the executor once, for test/faults/multi-process.test.ts.
// Plain JavaScript on the compiled library (dist/), because child processes cannot load TypeScript.
//
// Usage (forked with an IPC channel): node child-caller.mjs <db-path> <key> <body>
// Sends 'ready' once the store is open, waits for 'go', calls the executor, prints one JSON line
// with the outcome on stdout and exits.
import { randomUUID } from 'node:crypto';
import process from 'node:process';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { Executor } from 'idem';

const [dbPath, key, body] = process.argv.slice(2);
if (dbPath === undefined || key === undefined || body === undefined || process.send === undefined) {
  process.stderr.write('usage: fork child-caller.mjs <db-path> <key> <body>\n');
  process.exit(2);
}

const createNote = {
  name: 'create_note',
  version: 1,
  effect(db, args, context) {
    const noteId = `note_${randomUUID()}`;
    db.prepare('INSERT INTO notes (note_id, workspace, body) VALUES (?, ?, ?)').run(
      noteId,
      context.identity.workspace,
      args.body,
    );
    return { resource_id: noteId, note_id: noteId };
  },
};

const db = openSqlite(dbPath);
const store = new SqliteStore(db, { lockTimeoutMs: 10_000 });
const executor = new Executor({ store, authorize: () => true });

process.once('message', async (message) => {
  if (message !== 'go') return;
  const outcome = await executor.run(createNote, {
    principal: 'alice',
    workspace: 'ws-1',
    key,
    args: { body },
  });
  const report = outcome.ok
    ? { ok: true, replayed: outcome.replayed, operationId: outcome.operationId, result: outcome.result }
    : { ok: false, code: outcome.error.code, message: outcome.error.message };
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...report })}\n`);
  await store.close();
  process.disconnect();
});
process.send('ready');
