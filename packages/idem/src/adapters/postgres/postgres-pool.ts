/**
 * The subset of node-postgres (`pg`) that Idem uses: a pool that lends clients. Declared here so
 * that the port and the executor never depend on the driver; any object with these methods will do.
 */
export interface PgQueryResult<Row = Record<string, unknown>> {
  rows: Row[];
  rowCount: number | null;
}

/**
 * A query with a `name`: the server parses and plans it once per connection, and later calls send
 * only the values (node-postgres's prepared statements).
 */
export interface PgQueryConfig {
  name?: string;
  text: string;
  values?: unknown[];
}

export interface PgClient {
  query<Row = Record<string, unknown>>(
    text: string | PgQueryConfig,
    values?: unknown[],
  ): Promise<PgQueryResult<Row>>;
  /** With an error, the client is destroyed instead of returned to the pool. */
  release(error?: Error | boolean): void;
}

export interface PgPool {
  /**
   * Where the pool connects (node-postgres keeps its options here), so that errors can name the
   * server and database. Optional: a pool without it is named "the server".
   */
  readonly options?: {
    readonly connectionString?: string;
    readonly host?: string;
    readonly port?: number;
    readonly database?: string;
  };
  connect(): Promise<PgClient>;
  query<Row = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PgQueryResult<Row>>;
  end(): Promise<void>;
}
