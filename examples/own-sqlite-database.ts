import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Executor, type IdempotentOperation } from 'idem';
import { SqliteStore } from 'idem/sqlite';

// Your better-sqlite3 Database, your table. Idem adds its tables (idem_*) to the same file.
const db = new Database(process.env.APP_DB ?? './app.sqlite');
db.pragma('journal_mode = WAL');
db.exec(
  'CREATE TABLE IF NOT EXISTS invoices (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, amount_cents INTEGER)',
);
const executor = new Executor({
  store: new SqliteStore(db), // closing the store closes the Database
  authorize: (principal, workspace) => principal === 'alice' && workspace === 'acme',
});

const createInvoice: IdempotentOperation<Database.Database, { amount_cents: number }> = {
  name: 'create_invoice',
  version: 1,
  // `tx` is your Database inside Idem's transaction (BEGIN IMMEDIATE): synchronous, like every
  // better-sqlite3 call; the invoice and the receipt commit together, a throw rolls both back.
  effect: (tx, args, context) => {
    const id = `inv_${context.operationId}`;
    tx.prepare('INSERT INTO invoices (id, workspace, amount_cents) VALUES (?, ?, ?)').run(
      id,
      context.identity.workspace,
      args.amount_cents,
    );
    return { resource_id: id, invoice_id: id };
  },
};

const request = { principal: 'alice', workspace: 'acme', key: randomUUID(), args: { amount_cents: 4200 } };
const first = await executor.run(createInvoice, request);
const retry = await executor.run(createInvoice, request); // the retry after a lost reply
const conflict = await executor.run(createInvoice, { ...request, args: { amount_cents: 1 } });
console.log(
  JSON.stringify({
    first: first.ok ? first.result : first.error.code,
    retry: retry.ok ? { ...retry.result, replayed: retry.replayed } : retry.error.code,
    conflict: conflict.ok ? conflict.result : conflict.error.code,
  }),
);
await executor.store.close();
