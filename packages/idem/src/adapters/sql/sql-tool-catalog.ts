import type { JsonObject } from '../../core/json.js';
import { andThen } from '../../core/steps.js';
import type { SignalOption } from '../../ports/maybe-async.js';
import type { ToolCatalog, ToolDeclaration } from '../../ports/tool-catalog.js';
import type { SqlDriver, SqlStatement } from './sql-driver.js';

interface ToolRow {
  operation: string;
  version: number | string | bigint;
  result_schema_json: string | null;
  declared_at: number | string | bigint;
}

/** The tool catalog over any SQL driver: one row per (operation, version) in `idem_tools`. */
export class SqlToolCatalog implements ToolCatalog {
  readonly #driver: SqlDriver<unknown>;
  readonly #upsert: SqlStatement;
  readonly #get: SqlStatement;

  constructor(driver: SqlDriver<unknown>) {
    this.#driver = driver;
    const p = (sql: string) => driver.dialect.placeholders(sql);
    this.#upsert = {
      name: 'idem_v1_tool_declare',
      text: p(`INSERT INTO idem_tools (operation, version, result_schema_json, declared_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (operation, version) DO UPDATE SET result_schema_json = excluded.result_schema_json,
         declared_at = excluded.declared_at`),
    };
    this.#get = {
      name: 'idem_v1_tool_get',
      text: p('SELECT * FROM idem_tools WHERE operation = ? AND version = ?'),
    };
  }

  async declare(declaration: ToolDeclaration, options: SignalOption = {}): Promise<void> {
    const params = [
      declaration.operation,
      declaration.version,
      declaration.resultSchema === null ? null : JSON.stringify(declaration.resultSchema),
      declaration.declaredAt,
    ];
    await this.#driver.transaction((conn) => conn.run(this.#upsert, params), options);
  }

  get(operation: string, version: number, options: SignalOption = {}): Promise<ToolDeclaration | undefined> {
    return this.#driver.read(
      (conn) =>
        andThen(conn.all<ToolRow>(this.#get, [operation, version]), (rows) => {
          const row = rows[0];
          if (row === undefined) return undefined;
          return {
            operation: row.operation,
            version: Number(row.version),
            resultSchema:
              row.result_schema_json === null ? null : (JSON.parse(row.result_schema_json) as JsonObject),
            declaredAt: Number(row.declared_at),
          };
        }),
      options,
    );
  }
}
