import pg from 'pg';
import { durableScenario, nemesisPause } from '../lib/durable-scenario.js';
import type { ScenarioContext } from '../lib/scenario.js';

const BASE_URL = process.env.IDEM_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** This run's connection string: its application_name marks the backends the nemesis may kill (and no other). */
function runUrl(context: ScenarioContext): string {
  const url = new URL(BASE_URL);
  url.searchParams.set('application_name', appName(context));
  return url.toString();
}

const appName = (context: ScenarioContext) => `idem-faults-${context.tag}`;
const schema = (context: ScenarioContext) => `idem_faults_${context.tag}`;

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: BASE_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * PostgreSQL backends of `idem serve` and `idem worker` terminated (pg_terminate_backend) at random
 * times, picked by this run's application_name; provider mode key.
 */
export const postgresBackendKills = durableScenario({
  name: 'postgres-backend-kills',
  description: 'pg_terminate_backend of serve and worker connections at random times (PostgreSQL); mode key',
  operations: { short: 8, long: 30 },
  spreadMs: { short: 2500, long: 10_000 },
  deadlineMs: 30_000,
  // A process down (or a disk full) for part of the deadline may rightly end an operation failed
  // without an attempt: here only honesty is promised (no duplicate, no false "nothing was done").
  promisesCompletion: false,
  async prepare() {
    try {
      await admin((client) => client.query('SELECT 1'));
      return undefined;
    } catch (error) {
      if (process.env.CI) throw error;
      return `no PostgreSQL at ${BASE_URL}: ${(error as Error).message}`;
    }
  },
  async cleanup(context) {
    await admin((client) => client.query(`DROP SCHEMA IF EXISTS ${schema(context)} CASCADE`)).catch(
      () => undefined,
    );
  },
  rig: (context) => ({
    mode: 'key',
    separateWorker: true,
    postgres: { url: runUrl(context), schema: schema(context) },
  }),
  async nemesis(_rig, context, stopped) {
    const faults = { pg_backends_terminated: 0, pg_kill_rounds: 0, pg_admin_errors: 0 };
    await nemesisPause(context, stopped, 200, 600);
    while (!stopped()) {
      // Two steps, so that nothing but this run's backends can ever be terminated (a one-statement
      // WHERE may evaluate pg_terminate_backend before the filter).
      const killed = await admin(async (client) => {
        const { rows } = await client.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
          [appName(context)],
        );
        let terminated = 0;
        for (const { pid } of rows) {
          const result = await client.query<{ ok: boolean }>(
            'SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE pid = $1 AND application_name = $2',
            [pid, appName(context)],
          );
          if (result.rows[0]?.ok === true) terminated += 1;
        }
        return terminated;
      }).catch(() => {
        // The shared server may end the suite's own admin connection too: count it, go on.
        faults.pg_admin_errors += 1;
        return 0;
      });
      faults.pg_kill_rounds += 1;
      faults.pg_backends_terminated += killed;
      await nemesisPause(context, stopped, 300, 1200);
    }
    return faults;
  },
});
