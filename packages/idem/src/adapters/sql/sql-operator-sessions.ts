import { andThen } from '../../core/steps.js';
import type { SignalOption } from '../../ports/maybe-async.js';
import type { OperatorSession, OperatorSessions } from '../../ports/operator-sessions.js';
import type { SqlDriver, SqlStatement } from './sql-driver.js';

interface SessionRow {
  id: string;
  principal: string;
  csrf: string;
  credential: string;
  created_at: number | string | bigint;
  expires_at: number | string | bigint;
}

/** The console's sessions over any SQL driver, in `idem_sessions`; expired rows go at each `put`. */
export class SqlOperatorSessions implements OperatorSessions {
  readonly #driver: SqlDriver<unknown>;
  readonly #upsert: SqlStatement;
  readonly #deleteExpired: SqlStatement;
  readonly #get: SqlStatement;
  readonly #delete: SqlStatement;

  constructor(driver: SqlDriver<unknown>) {
    this.#driver = driver;
    const p = (sql: string) => driver.dialect.placeholders(sql);
    this.#upsert = {
      name: 'idem_v1_session_put',
      text: p(`INSERT INTO idem_sessions (id, principal, csrf, credential, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET principal = excluded.principal, csrf = excluded.csrf,
         credential = excluded.credential, created_at = excluded.created_at, expires_at = excluded.expires_at`),
    };
    this.#deleteExpired = {
      name: 'idem_v1_session_expired',
      text: p('DELETE FROM idem_sessions WHERE expires_at <= ?'),
    };
    this.#get = {
      name: 'idem_v1_session_get',
      text: p('SELECT * FROM idem_sessions WHERE id = ? AND expires_at > ?'),
    };
    this.#delete = { name: 'idem_v1_session_delete', text: p('DELETE FROM idem_sessions WHERE id = ?') };
  }

  async put(session: OperatorSession, options: SignalOption = {}): Promise<void> {
    const params = [
      session.id,
      session.principal,
      session.csrf,
      session.credential,
      session.createdAt,
      session.expiresAt,
    ];
    await this.#driver.transaction(
      (conn) =>
        andThen(conn.run(this.#deleteExpired, [session.createdAt]), () => conn.run(this.#upsert, params)),
      options,
    );
  }

  get(id: string, now: number, options: SignalOption = {}): Promise<OperatorSession | undefined> {
    return this.#driver.read(
      (conn) =>
        andThen(conn.all<SessionRow>(this.#get, [id, now]), (rows) => {
          const row = rows[0];
          if (row === undefined) return undefined;
          return {
            id: row.id,
            principal: row.principal,
            csrf: row.csrf,
            credential: row.credential,
            createdAt: Number(row.created_at),
            expiresAt: Number(row.expires_at),
          };
        }),
      options,
    );
  }

  async delete(id: string, options: SignalOption = {}): Promise<void> {
    await this.#driver.transaction((conn) => conn.run(this.#delete, [id]), options);
  }
}
