import { DurableObject } from 'cloudflare:workers';
import { DurableObjectStore, type DurableObjectSql } from 'idem/cloudflare';
import { storeContract, type StoreContractFactory } from 'idem/testing';

/*
 * The exported store contract (idem/testing) inside workerd: each case runs in a Durable Object of
 * its own (a fresh SQLite database), on DurableObjectStore, the application's rows written by the
 * effect through `ctx.storage.sql` in Idem's transaction. `GET /run?case=N` runs case N and answers
 * `{ ok, name, error? }`. Bundled and started by test/cloudflare/workerd-contract.test.ts.
 */

interface Env {
  CONTRACT: DurableObjectNamespace<ContractObject>;
}

function factoryOn(ctx: DurableObjectState): StoreContractFactory<DurableObjectSql> {
  return {
    name: 'durable-object',
    async open({ clock }) {
      ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS rows (id TEXT PRIMARY KEY)');
      const store = new DurableObjectStore(ctx.storage, { clock });
      return {
        store,
        writeRow: (sql, id) => {
          sql.exec('INSERT INTO rows (id) VALUES (?)', id);
        },
        countRows: async () => Number(ctx.storage.sql.exec('SELECT count(*) AS n FROM rows').toArray()[0]?.n),
        close: () => store.close(),
      };
    },
  };
}

export class ContractObject extends DurableObject<Env> {
  override async fetch(request: Request): Promise<Response> {
    const index = Number(new URL(request.url).searchParams.get('case'));
    const cases = storeContract(factoryOn(this.ctx));
    const chosen = cases[index];
    if (chosen === undefined) return Response.json({ ok: false, error: `no case ${index}` }, { status: 404 });
    try {
      await chosen.run();
      return Response.json({ ok: true, name: chosen.name });
    } catch (error) {
      const described = error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error);
      return Response.json({ ok: false, name: chosen.name, error: described });
    }
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    // A new object per case: a fresh database.
    return env.CONTRACT.get(env.CONTRACT.newUniqueId()).fetch(request);
  },
};
