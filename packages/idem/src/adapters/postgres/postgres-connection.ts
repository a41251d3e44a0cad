import type { SqlConnection, SqlStatement, SqlValue } from '../sql/sql-driver.js';
import type { PgClient } from './postgres-pool.js';

/**
 * Idem's statements on one node-postgres client. With `named`, every named statement is sent as a
 * prepared statement (parsed and planned once per connection); without, as an unnamed one (behind
 * a pooler that keeps no prepared statements).
 */
export class PostgresConnection implements SqlConnection {
  readonly #client: PgClient;
  readonly #named: boolean;

  constructor(client: PgClient, named: boolean) {
    this.#client = client;
    this.#named = named;
  }

  async all<Row>(statement: SqlStatement, params: readonly SqlValue[]): Promise<Row[]> {
    const { rows } = await this.#client.query<Row>(this.#config(statement, params));
    return rows;
  }

  async run(statement: SqlStatement, params: readonly SqlValue[]): Promise<number> {
    const result = await this.#client.query(this.#config(statement, params));
    return result.rowCount ?? 0;
  }

  #config(statement: SqlStatement, params: readonly SqlValue[]) {
    return this.#named && statement.name !== undefined
      ? { name: statement.name, text: statement.text, values: params as unknown[] }
      : { text: statement.text, values: params as unknown[] };
  }
}
