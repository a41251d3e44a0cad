import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Executor, type EffectContext, type IdempotentOperation } from 'idem';
import { PostgresStore } from 'idem/postgres';

// Your pool, your table. Idem adds its own tables (idem_*) to the same database.
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/app' });
await pool.query(`CREATE TABLE IF NOT EXISTS invoices (
  id TEXT PRIMARY KEY, workspace TEXT NOT NULL, amount_cents INTEGER NOT NULL)`);
const store = await PostgresStore.create(pool); // migrates idem_*; closing the store leaves the pool open
const executor = new Executor({
  store,
  authorize: (principal, workspace) => principal === 'alice' && workspace === 'acme',
});

const createInvoice: IdempotentOperation<pg.PoolClient, { amount_cents: number }> = {
  name: 'create_invoice',
  version: 1,
  // `client` is the PoolClient of Idem's transaction: the invoice and the receipt commit together,
  // and a throw here rolls both back.
  effect: async (client, args, context: EffectContext) => {
    const id = `inv_${context.operationId}`;
    await client.query('INSERT INTO invoices (id, workspace, amount_cents) VALUES ($1, $2, $3)', [
      id,
      context.identity.workspace,
      args.amount_cents,
    ]);
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
await pool.end();
