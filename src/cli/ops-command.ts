import { parseArgs } from 'node:util';
import type { Receipt } from '../core/receipt.js';
import { operationView } from '../server/reference-tools.js';
import { CliError } from './cli-error.js';
import { durationOption, intOption } from './options.js';
import { DATABASE_OPTIONS, databaseSpec, openStore } from './database-options.js';
import type { Store } from '../store/store.js';
import { systemClock } from '../core/clock.js';
import { isIdemError } from '../core/errors.js';
import { DEFAULT_RETENTION_MS } from '../executor/executor.js';

export const OPS_HELP = `Usage: idem ops list [--status S] [--limit N] [--db PATH] [--json]
       idem ops show <operation_id> [--db PATH]
       idem ops resolve <operation_id> --succeeded --resource-id R [--by NAME] [--db PATH]
       idem ops resolve <operation_id> --failed --reason TEXT [--by NAME] [--db PATH]

Inspects and settles recorded operations (--db: SQLite file, default ./idem.sqlite, or postgres:// URL).
  list     newest first, one line each: id, status, tool, principal, workspace, resource, created
  show     one operation as JSON: identity, state, result or error, next action, and its attempts
  resolve  settle an outcome_unknown operation after checking the provider by hand; records who
           (--by, default $USER) and when. Any other state is refused.
Statuses: accepted, running, succeeded, failed, cancel_requested, cancelled, outcome_unknown.`;

export async function opsCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '-h' || sub === '--help') {
    out(`${OPS_HELP}\n`);
    if (sub === undefined) throw new CliError('idem ops: missing subcommand (list or show)', 2);
    return;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      ...DATABASE_OPTIONS,
      status: { type: 'string' },
      limit: { type: 'string', default: '100' },
      json: { type: 'boolean', default: false },
      succeeded: { type: 'boolean', default: false },
      failed: { type: 'boolean', default: false },
      'resource-id': { type: 'string' },
      reason: { type: 'string' },
      by: { type: 'string' },
      retention: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) return out(`${OPS_HELP}\n`);
  if (sub !== 'list' && sub !== 'show' && sub !== 'resolve') {
    throw new CliError(`idem ops: unknown subcommand ${JSON.stringify(sub)}`, 2);
  }
  const opened = await openStore(databaseSpec(values));
  const { store } = opened;
  if (sub === 'resolve') {
    try {
      return await resolveCommand(store, values, positionals, out);
    } finally {
      await opened.close();
    }
  }
  try {
    if (sub === 'show') {
      const id = positionals[0];
      if (id === undefined || positionals.length > 1)
        throw new CliError('usage: idem ops show <operation_id>', 2);
      const receipt = await store.getOperation(id);
      if (receipt === undefined) throw new CliError(`no operation ${id}`);
      const attempts = await store.listAttempts(id);
      out(`${JSON.stringify({ ...showView(receipt), attempts_detail: attempts }, null, 2)}\n`);
      return;
    }
    if (positionals.length > 0) throw new CliError('usage: idem ops list [--status S] [--limit N]', 2);
    const receipts = await store.listOperations({
      limit: intOption('--limit', values.limit, 1, 100_000),
      ...(values.status === undefined ? {} : { status: values.status }),
    });
    if (values.json) return out(`${JSON.stringify(receipts.map(showView))}\n`);
    const rows = receipts.map((r) => [
      r.operationId,
      r.status,
      `${r.identity.operation}@v${r.identity.version}`,
      r.identity.principal,
      r.identity.workspace,
      r.resourceId ?? '-',
      new Date(r.createdAt).toISOString(),
    ]);
    out(table(['OPERATION', 'STATUS', 'TOOL', 'PRINCIPAL', 'WORKSPACE', 'RESOURCE', 'CREATED'], rows));
  } finally {
    await opened.close();
  }
}

function showView(receipt: Receipt) {
  return {
    ...operationView(receipt),
    principal: receipt.identity.principal,
    idempotency_key: receipt.identity.key,
  };
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n${rows.length === 0 ? '(no operations)\n' : ''}`;
}

async function resolveCommand(
  store: Store<unknown>,
  values: {
    succeeded: boolean;
    failed: boolean;
    'resource-id'?: string;
    reason?: string;
    by?: string;
    retention?: string;
  },
  positionals: string[],
  out: (text: string) => void,
): Promise<void> {
  const id = positionals[0];
  if (id === undefined || positionals.length > 1)
    throw new CliError('usage: idem ops resolve <operation_id> --succeeded|--failed', 2);
  if (values.succeeded === values.failed)
    throw new CliError('give exactly one of --succeeded or --failed', 2);
  if (values.succeeded && !values['resource-id']) throw new CliError('--succeeded needs --resource-id R', 2);
  if (values.failed && !values.reason) throw new CliError('--failed needs --reason TEXT', 2);
  const retentionMs =
    values.retention === undefined ? DEFAULT_RETENTION_MS : durationOption('--retention', values.retention);
  const by = values.by ?? process.env.USER ?? 'operator';
  {
    const now = systemClock.now();
    let record;
    try {
      record = await store.resolve(id, {
        to: values.succeeded ? 'succeeded' : 'failed',
        by,
        now,
        expiresAt: now + retentionMs,
        ...(values['resource-id'] === undefined ? {} : { resourceId: values['resource-id'] }),
        ...(values.reason === undefined ? {} : { reason: values.reason }),
      });
    } catch (error) {
      if (isIdemError(error) && error.code === 'invalid_argument') throw new CliError(error.message);
      throw error;
    }
    if (record === undefined) throw new CliError(`no operation ${id}`);
    out(`${JSON.stringify(showView(record), null, 2)}\n`);
  }
}
