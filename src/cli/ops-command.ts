import { parseArgs } from 'node:util';
import { openSqlite } from '../adapters/sqlite/open-sqlite.js';
import { SqliteStore } from '../adapters/sqlite/sqlite-store.js';
import type { Receipt } from '../core/receipt.js';
import { operationView } from '../server/reference-tools.js';
import { CliError } from './cli-error.js';
import { existingDb, intOption } from './options.js';

export const OPS_HELP = `Usage: idem ops list [--status S] [--limit N] [--db PATH] [--json]
       idem ops show <operation_id> [--db PATH]

Inspects recorded operations (receipts) in a SQLite database (default ./idem.sqlite).
  list   newest first, one line each: id, status, operation, principal, workspace, resource, created
  show   one operation as JSON, including its stored result
Statuses: succeeded (this version records only completed operations).`;

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
      db: { type: 'string', default: './idem.sqlite' },
      status: { type: 'string' },
      limit: { type: 'string', default: '100' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) return out(`${OPS_HELP}\n`);
  if (sub !== 'list' && sub !== 'show')
    throw new CliError(`idem ops: unknown subcommand ${JSON.stringify(sub)}`, 2);
  const store = new SqliteStore(openSqlite(existingDb(values.db)));
  try {
    if (sub === 'show') {
      const id = positionals[0];
      if (id === undefined || positionals.length > 1)
        throw new CliError('usage: idem ops show <operation_id>', 2);
      const receipt = await store.getOperation(id);
      if (receipt === undefined) throw new CliError(`no operation ${id}`);
      out(`${JSON.stringify(showView(receipt), null, 2)}\n`);
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
      r.resourceId,
      new Date(r.createdAt).toISOString(),
    ]);
    out(table(['OPERATION', 'STATUS', 'TOOL', 'PRINCIPAL', 'WORKSPACE', 'RESOURCE', 'CREATED'], rows));
  } finally {
    await store.close();
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
