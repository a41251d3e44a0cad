import { randomUUID } from 'node:crypto';
import { openSqlite, type SqliteDatabase } from 'idem/sqlite';

/** A deployment as the provider returns it. `client_reference` appears only when one was stored. */
export interface Deployment {
  deployment_id: string;
  service: string;
  version: string;
  client_reference?: string;
  status: 'deployed';
  created_at: string;
}

export interface NewDeployment {
  service: string;
  version: string;
  clientReference: string | undefined;
  idempotencyKey: string | undefined;
  requestHash: string;
  createdAt: Date;
}

export interface KeyRecord {
  key: string;
  requestHash: string;
  responseJson: string;
  /** Epoch milliseconds of the key's first use. */
  createdAt: number;
}

export interface WebhookDelivery {
  dedup_key: string;
  times_received: number;
  first_received_at: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS deployments (
  deployment_id    TEXT PRIMARY KEY,
  service          TEXT NOT NULL,
  version          TEXT NOT NULL,
  client_reference TEXT NULL,
  idempotency_key  TEXT NULL,
  request_hash     TEXT NOT NULL,
  status           TEXT NOT NULL,
  created_at       TEXT NOT NULL -- ISO 8601
);
CREATE INDEX IF NOT EXISTS deployments_by_reference ON deployments (client_reference)
  WHERE client_reference IS NOT NULL;
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key           TEXT PRIMARY KEY,
  request_hash  TEXT NOT NULL,
  response_json TEXT NOT NULL,
  created_at    INTEGER NOT NULL -- epoch milliseconds of first use
);
CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys (created_at);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  dedup_key         TEXT PRIMARY KEY,
  payload_json      TEXT NOT NULL,
  first_received_at TEXT NOT NULL, -- ISO 8601
  times_received    INTEGER NOT NULL
);
`;

interface DeploymentRow {
  deployment_id: string;
  service: string;
  version: string;
  client_reference: string | null;
  status: 'deployed';
  created_at: string;
}

interface KeyRow {
  key: string;
  request_hash: string;
  response_json: string;
  created_at: number;
}

function toDeployment(row: DeploymentRow): Deployment {
  return {
    deployment_id: row.deployment_id,
    service: row.service,
    version: row.version,
    ...(row.client_reference === null ? {} : { client_reference: row.client_reference }),
    status: row.status,
    created_at: row.created_at,
  };
}

/** A new deployment id: `dep_` and 32 hex digits. */
export function newDeploymentId(): string {
  return `dep_${randomUUID().replaceAll('-', '')}`;
}

/**
 * The provider's durable state in one SQLite file (or `:memory:`). Every write the provider makes
 * for a request happens inside one `transaction`, committed before the reply is written.
 */
export class ProviderState {
  readonly db: SqliteDatabase;

  constructor(dbPath: string) {
    this.db = openSqlite(dbPath);
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
  }

  /** Runs `fn` in `BEGIN IMMEDIATE … COMMIT`, rolling back if it throws. */
  transaction<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw error;
    }
  }

  insertDeployment(input: NewDeployment): Deployment {
    const row: DeploymentRow = {
      deployment_id: newDeploymentId(),
      service: input.service,
      version: input.version,
      client_reference: input.clientReference ?? null,
      status: 'deployed',
      created_at: input.createdAt.toISOString(),
    };
    this.db
      .prepare(
        `INSERT INTO deployments (deployment_id, service, version, client_reference, idempotency_key,
           request_hash, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        row.deployment_id,
        row.service,
        row.version,
        row.client_reference,
        input.idempotencyKey ?? null,
        input.requestHash,
        row.status,
        row.created_at,
      );
    return toDeployment(row);
  }

  getDeployment(deploymentId: string): Deployment | undefined {
    const row = this.db.prepare('SELECT * FROM deployments WHERE deployment_id = ?').get(deploymentId) as
      DeploymentRow | undefined;
    return row === undefined ? undefined : toDeployment(row);
  }

  /** Every deployment in creation order, or only those with `clientReference` when given. */
  listDeployments(clientReference?: string): Deployment[] {
    const rows = (
      clientReference === undefined
        ? this.db.prepare('SELECT * FROM deployments ORDER BY rowid').all()
        : this.db
            .prepare('SELECT * FROM deployments WHERE client_reference = ? ORDER BY rowid')
            .all(clientReference)
    ) as DeploymentRow[];
    return rows.map(toDeployment);
  }

  /** The live record of `key`; a record first used at or before `expiredAtOrBefore` is deleted instead. */
  findKey(key: string, expiredAtOrBefore: number): KeyRecord | undefined {
    const row = this.db.prepare('SELECT * FROM idempotency_keys WHERE key = ?').get(key) as
      KeyRow | undefined;
    if (row === undefined) return undefined;
    if (row.created_at <= expiredAtOrBefore) {
      this.db.prepare('DELETE FROM idempotency_keys WHERE key = ?').run(key);
      return undefined;
    }
    return {
      key: row.key,
      requestHash: row.request_hash,
      responseJson: row.response_json,
      createdAt: row.created_at,
    };
  }

  /** Records a key's first use, sweeping every key first used at or before `expiredAtOrBefore`. */
  insertKey(record: KeyRecord, expiredAtOrBefore: number): void {
    this.db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?').run(expiredAtOrBefore);
    this.db
      .prepare(
        'INSERT OR REPLACE INTO idempotency_keys (key, request_hash, response_json, created_at) VALUES (?, ?, ?, ?)',
      )
      .run(record.key, record.requestHash, record.responseJson, record.createdAt);
  }

  /** Counts one delivery of `dedupKey`; the payload of the first delivery is the one kept. */
  recordDelivery(
    dedupKey: string,
    payloadJson: string,
    receivedAt: Date,
  ): WebhookDelivery & { first: boolean } {
    const updated = this.db
      .prepare('UPDATE webhook_deliveries SET times_received = times_received + 1 WHERE dedup_key = ?')
      .run(dedupKey);
    if (updated.changes === 0) {
      this.db
        .prepare(
          `INSERT INTO webhook_deliveries (dedup_key, payload_json, first_received_at, times_received)
           VALUES (?, ?, ?, 1)`,
        )
        .run(dedupKey, payloadJson, receivedAt.toISOString());
    }
    const row = this.db
      .prepare(
        'SELECT dedup_key, times_received, first_received_at FROM webhook_deliveries WHERE dedup_key = ?',
      )
      .get(dedupKey) as WebhookDelivery;
    return { ...row, first: updated.changes === 0 };
  }

  listDeliveries(): WebhookDelivery[] {
    return this.db
      .prepare('SELECT dedup_key, times_received, first_received_at FROM webhook_deliveries ORDER BY rowid')
      .all() as WebhookDelivery[];
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
