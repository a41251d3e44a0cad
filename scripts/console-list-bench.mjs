#!/usr/bin/env node
// Measures the operator console's queries on a SQLite file of N operations (default 1,000,000):
// the first page of the list, the next page (keyset cursor), filtered pages, the needs-a-person
// query (outcome_unknown, oldest first), counts by state, and prints each one's query plan.
// Not a test: `node scripts/console-list-bench.mjs [--rows N] [--db PATH]` after `npm run build`.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { openSqlite, SqliteStore } from 'idem/sqlite';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    db: { type: 'string' },
    runs: { type: 'string', default: '20' },
  },
});
const log = (line) => process.stdout.write(`${line}\n`);
const rows = Number(values.rows);
const runs = Number(values.runs);
const path = values.db ?? join(mkdtempSync(join(tmpdir(), 'idem-console-bench-')), 'ops.sqlite');
const fresh = !existsSync(path);
const db = openSqlite(path);
const store = new SqliteStore(db);

// 99% succeeded receipts; the rest spread over the other states.
function stateOf(i) {
  const r = i % 1000;
  if (r < 990) return 'succeeded';
  if (r < 994) return 'failed';
  if (r < 996) return 'accepted';
  if (r < 997) return 'running';
  if (r < 998) return 'outcome_unknown';
  if (r < 999) return 'cancelled';
  return 'cancel_requested';
}

if (fresh) {
  const started = performance.now();
  const insert =
    db.prepare(`INSERT INTO idem_operations (operation_id, principal, workspace, operation, version,
      idem_key, fingerprint, kind, status, result_json, created_at, updated_at, attempt_count, dispatched)
    VALUES (?, ?, ?, ?, 1, ?, 'f', ?, ?, ?, ?, ?, 0, 0)`);
  const t0 = Date.now() - rows * 10;
  const fill = db.transaction((from, to) => {
    for (let i = from; i < to; i += 1) {
      const state = stateOf(i);
      const id = `op_${String(i).padStart(12, '0')}`;
      insert.run(
        id,
        `p${i % 50}`,
        `ws-${i % 20}`,
        i % 3 === 0 ? 'start_deployment' : 'create_note',
        `k${i}`,
        state === 'succeeded' ? 'local' : 'durable',
        state,
        state === 'succeeded' ? '{"status":"succeeded"}' : null,
        t0 + i * 10,
        t0 + i * 10,
      );
    }
  });
  for (let i = 0; i < rows; i += 50_000) fill(i, Math.min(rows, i + 50_000));
  log(`filled ${rows} rows in ${Math.round(performance.now() - started)} ms: ${path}`);
}

async function time(name, fn) {
  await fn();
  const samples = [];
  for (let i = 0; i < runs; i += 1) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  const median = samples[Math.floor(samples.length / 2)];
  log(`${name.padEnd(58)} median ${median.toFixed(2)} ms  max ${samples.at(-1).toFixed(2)} ms`);
}

function plan(sql, params = [100]) {
  const steps = db
    .prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .all(...params)
    .map((r) => r.detail);
  log(`  plan: ${steps.join(' | ')}`);
}

const first = await store.ledger.list({ limit: 51 });
const last = first[49];
await time('list: first page, newest first (51 rows)', () => store.ledger.list({ limit: 51 }));
plan('SELECT * FROM idem_operations ORDER BY created_at DESC, operation_id DESC LIMIT ?');
await time('list: next page after a cursor', () => store.ledger.list({ limit: 51, after: last.operationId }));
await time('list: outcome_unknown, oldest first (needs a person, 100)', () =>
  store.ledger.list({ status: 'outcome_unknown', order: 'oldest', limit: 100 }),
);
plan(
  `SELECT * FROM idem_operations WHERE status = 'outcome_unknown' ORDER BY created_at ASC, operation_id ASC LIMIT ?`,
);
await time('list: running, oldest first (50)', () =>
  store.ledger.list({ status: 'running', order: 'oldest', limit: 50 }),
);
await time('list: state accepted + workspace ws-3 (51)', () =>
  store.ledger.list({ status: 'accepted', workspace: 'ws-3', limit: 51 }),
);
await time('list: state succeeded, first page (51)', () =>
  store.ledger.list({ status: 'succeeded', limit: 51 }),
);
await time('list: workspace ws-3, newest first (51)', () =>
  store.ledger.list({ workspace: 'ws-3', limit: 51 }),
);
await time('list: principal p7 + last hour window (51)', () =>
  store.ledger.list({ principal: 'p7', createdFrom: Date.now() - 3_600_000, limit: 51 }),
);
await time('countByState({ open: true }) (the overview)', () => store.ledger.countByState({ open: true }));
plan(
  "SELECT status, COUNT(*) AS n FROM idem_operations WHERE status IN ('accepted', 'running', 'cancel_requested', 'outcome_unknown') GROUP BY status",
  [],
);
await time('countByState() (every state: a scan)', () => store.ledger.countByState());
plan('SELECT status, COUNT(*) AS n FROM idem_operations GROUP BY status', []);
await store.close();
