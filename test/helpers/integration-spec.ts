import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type { EffectContext, EffectResult } from '../../packages/idem/src/executor/effect.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/executor/executor.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';

/**
 * What an integration under test supplies: a store on the application's own database layer, how
 * its effect writes an application row with the handle it is given, and how to count rows.
 */
export interface IntegrationHarness<Tx> {
  readonly store: IdemStore<Tx>;
  /** Writes one `invoices` row through the transaction handle the effect received. */
  insertInvoice(tx: Tx, id: string, workspace: string, cents: number): void | Promise<void>;
  countInvoices(): Promise<number>;
  countReceipts(): Promise<number>;
  close(): Promise<void>;
}

type Args = { amount_cents: number; fail?: boolean };

function createInvoice<Tx>(h: IntegrationHarness<Tx>, synchronous: boolean): IdempotentOperation<Tx, Args> {
  const write = (tx: Tx, args: Args, context: EffectContext): EffectResult | Promise<EffectResult> => {
    const id = `inv_${context.operationId}`;
    const done = (): EffectResult => {
      if (args.fail === true) throw new Error('the effect failed after its write');
      return { resource_id: id, invoice_id: id };
    };
    const written = h.insertInvoice(tx, id, context.identity.workspace, args.amount_cents);
    return written instanceof Promise ? written.then(done) : done();
  };
  return {
    name: 'create_invoice',
    version: 1,
    effect: synchronous ? write : async (tx, args, context) => write(tx, args, context),
  };
}

/**
 * The e2e behaviour every integration must show on its real database: the application's row and
 * Idem's receipt commit together, a throw rolls both back, concurrent calls with one key make one
 * row, a retry replays, and other arguments under the key are a conflict that changes nothing.
 */
export function integrationSpec<Tx>(open: () => Promise<IntegrationHarness<Tx>>): void {
  const run = async (body: (h: IntegrationHarness<Tx>, executor: Executor<Tx>) => Promise<void>) => {
    const h = await open();
    try {
      await body(
        h,
        new Executor<Tx>({
          store: h.store,
          authorize: () => true,
          inFlightWaitMs: 5000,
          logger: silentLogger,
        }),
      );
    } finally {
      await h.close();
    }
  };
  const request = (key: string, args: Args) => ({ principal: 'alice', workspace: 'acme', key, args });
  const operation = (h: IntegrationHarness<Tx>) => createInvoice(h, h.store.capabilities.synchronous);

  it('the effect and the receipt commit together', () =>
    run(async (h, executor) => {
      const outcome = await executor.run(operation(h), request(randomUUID(), { amount_cents: 4200 }));
      expect(outcome).toMatchObject({ ok: true, replayed: false, result: { status: 'succeeded' } });
      expect(await h.countInvoices()).toBe(1);
      expect(await h.countReceipts()).toBe(1);
    }));

  it('a throw in the effect rolls back its row and the receipt; the retry then executes', () =>
    run(async (h, executor) => {
      const key = randomUUID();
      const failed = await executor.run(operation(h), request(key, { amount_cents: 1, fail: true }));
      expect(failed).toMatchObject({ ok: false, error: { code: 'internal' } });
      expect(await h.countInvoices()).toBe(0);
      expect(await h.countReceipts()).toBe(0);
      const retried = await executor.run(operation(h), request(key, { amount_cents: 1, fail: true }));
      expect(retried).toMatchObject({ ok: false, error: { code: 'internal' } }); // ran again: nothing was kept
      const other = await executor.run(operation(h), request(key, { amount_cents: 1 }));
      expect(other).toMatchObject({ ok: true, replayed: false });
      expect(await h.countInvoices()).toBe(1);
    }));

  it('eight concurrent calls with one key make one row and one receipt', () =>
    run(async (h, executor) => {
      const key = randomUUID();
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, () => executor.run(operation(h), request(key, { amount_cents: 7 }))),
      );
      expect(outcomes.every((o) => o.ok)).toBe(true);
      expect(outcomes.filter((o) => o.ok && !o.replayed)).toHaveLength(1);
      const ids = new Set(outcomes.map((o) => (o.ok ? o.result.resource_id : undefined)));
      expect(ids.size).toBe(1);
      expect(await h.countInvoices()).toBe(1);
      expect(await h.countReceipts()).toBe(1);
    }));

  it('a retry replays the retained result, marked as a replay', () =>
    run(async (h, executor) => {
      const key = randomUUID();
      const first = await executor.run(operation(h), request(key, { amount_cents: 9 }));
      const retry = await executor.run(operation(h), request(key, { amount_cents: 9 }));
      expect(first.ok && retry.ok).toBe(true);
      if (!first.ok || !retry.ok) return;
      expect(retry.replayed).toBe(true);
      expect(retry.result).toEqual(first.result);
      expect(await h.countInvoices()).toBe(1);
    }));

  it('other arguments under the key are a conflict, and nothing changes', () =>
    run(async (h, executor) => {
      const key = randomUUID();
      await executor.run(operation(h), request(key, { amount_cents: 9 }));
      const conflict = await executor.run(operation(h), request(key, { amount_cents: 10 }));
      expect(conflict).toMatchObject({ ok: false, error: { code: 'payload_conflict' } });
      expect(await h.countInvoices()).toBe(1);
      expect(await h.countReceipts()).toBe(1);
    }));
}
