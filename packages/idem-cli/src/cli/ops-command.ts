import { parseArgs } from 'node:util';
import { type JsonObject, type IdemStore, systemClock, DEFAULT_RETENTION_MS } from 'idem';
import { OPERATION_STATES, attemptView } from 'idem/operations';
import { CliError } from './cli-error.js';
import { durationOption, intOption } from './options.js';
import { DATABASE_HELP, DATABASE_OPTIONS, databaseSpec, openStore } from './database-options.js';
import { opsOutboxCommand } from './ops-outbox-command.js';
import { showView } from '../ops/operation-views.js';
import { requestCancelAsOperator, resolveOperationAsOperator } from '../ops/operator-actions.js';
import { OperatorActionError } from '../ops/operator-error.js';
import { textTable } from './text-table.js';

export const OPS_HELP = `Usage: idem ops list [--status S] [--limit N] [--json] [options]
       idem ops show <operation_id> [options]
       idem ops resolve <operation_id> --succeeded --resource-id R [--result-json JSON] [--reason TEXT]
                        [--by NAME] [options]
       idem ops resolve <operation_id> --failed --reason TEXT [--by NAME] [options]
       idem ops resolve <operation_id> --correct --succeeded --resource-id R [--result-json JSON]
                        --reason TEXT [--by NAME] [options]
       idem ops cancel <operation_id> --reason TEXT [--by NAME] [options]
       idem ops dead-letters [--limit N] [--json] [options]
       idem ops requeue <id> [options]

Inspects and settles recorded operations, and the outbox messages given up on.

Subcommands:
  list          newest first, one line each: id, status, tool, principal, workspace, resource, created
  show          one operation as JSON: identity, state, result or error, next action, its attempts,
                and its audit (every operator change: who, when, the state before, why)
  resolve       settle an outcome_unknown operation after checking the provider by hand; records who,
                when and why. Any other state is refused, except with --correct
  cancel        ask for an accepted or running operation to be cancelled, as the cancel tool does
                (it becomes cancelled once the worker establishes that nothing was or will be
                done); records who, when and why in its audit
  dead-letters  outbox messages (webhooks) given up on after --outbox-max-attempts sends (see idem
                serve --help), oldest first
  requeue       make a dead letter due again, with its attempts counted from 0

Options:
${DATABASE_HELP}
  --status S                 list: only operations in state S: accepted, running, succeeded,
                             failed, cancel_requested, cancelled or outcome_unknown
  --limit N                  list, dead-letters: most rows shown (default 100)
  --json                     list, dead-letters: one JSON array instead of a table
  --succeeded                resolve: the effect exists at the provider; needs --resource-id
  --failed                   resolve: the provider has no such effect; needs --reason
  --correct                  resolve: change a failed or cancelled operation whose effect was found
                             to exist to succeeded (never the other way); needs --succeeded and
                             --reason. Replays then return the corrected result
  --resource-id R            resolve --succeeded: the provider's id of the effect
  --result-json JSON         resolve --succeeded: the business fields of the success as a JSON
                             object, e.g. '{"payment_id":"pay_1"}', beside status, operation_id and
                             resource_id, so that it has the shape of an automatic one;
                             start_deployment derives its own from R (values given must then match
                             its field names and JSON types). A name the result sets itself
                             (status, ...) is refused
  --reason TEXT              resolve, cancel: why, kept in the audit
  --by NAME                  resolve, cancel: who, kept in the audit (default $USER)
  --retention DUR            resolve: how long the settled operation replays (default 24h)
  -h, --help                 show this help`;

const SUBCOMMANDS: readonly string[] = ['list', 'show', 'resolve', 'cancel', 'dead-letters', 'requeue'];

const CORRECT_FLAGS = '--succeeded --resource-id R --reason TEXT';

/** "a, b or c" */
function either(words: readonly string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/**
 * `idem ops <subcommand>`: prints to `out` what the subcommand shows (or OPS_HELP on `--help`);
 * throws CliError with exit code 2 on a usage error, 1 when the operation or dead letter is missing.
 */
export async function opsCommand(argv: string[], out: (text: string) => void): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub === '-h' || sub === '--help') return out(`${OPS_HELP}\n`);
  if (sub === undefined) throw new CliError(`ops needs a subcommand: ${either(SUBCOMMANDS)}`, 2);
  if (!SUBCOMMANDS.includes(sub)) {
    throw new CliError(`unknown ops subcommand ${JSON.stringify(sub)}: use ${either(SUBCOMMANDS)}`, 2);
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
      correct: { type: 'boolean', default: false },
      'resource-id': { type: 'string' },
      'result-json': { type: 'string' },
      reason: { type: 'string' },
      by: { type: 'string' },
      retention: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: true,
  });
  if (values.help) return out(`${OPS_HELP}\n`);
  if (values.status !== undefined && !(OPERATION_STATES as readonly string[]).includes(values.status)) {
    throw new CliError(
      `--status must be ${either(OPERATION_STATES)}, got ${JSON.stringify(values.status)}`,
      2,
    );
  }
  const [operands, usage] = OPERANDS[sub] ?? [0, ''];
  if (positionals.length !== operands) throw new CliError(`usage: ${usage}`, 2);
  const opened = await openStore(databaseSpec(values));
  const { store } = opened;
  if (sub === 'resolve' || sub === 'cancel' || sub === 'dead-letters' || sub === 'requeue') {
    try {
      if (sub === 'resolve') return await resolveCommand(store, values, positionals, out);
      if (sub === 'cancel') return await cancelCommand(store, values, positionals, out);
      return await opsOutboxCommand(sub, store, values, positionals, out);
    } finally {
      await opened.close();
    }
  }
  try {
    if (sub === 'show') {
      const id = positionals[0];
      if (id === undefined || positionals.length > 1)
        throw new CliError('usage: idem ops show <operation_id>', 2);
      const receipt = await store.ledger.get(id);
      if (receipt === undefined) throw new CliError(`no operation ${id}`);
      const attemptsDetail = (await store.ledger.attempts(id)).map(attemptView);
      out(`${JSON.stringify({ ...showView(receipt), attempts_detail: attemptsDetail }, null, 2)}\n`);
      return;
    }
    if (positionals.length > 0) throw new CliError('usage: idem ops list [--status S] [--limit N]', 2);
    const receipts = await store.ledger.list({
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
    out(
      textTable(
        ['OPERATION', 'STATUS', 'TOOL', 'PRINCIPAL', 'WORKSPACE', 'RESOURCE', 'CREATED'],
        rows,
        '(no operations)',
      ),
    );
  } finally {
    await opened.close();
  }
}

async function resolveCommand(
  store: IdemStore,
  values: {
    succeeded: boolean;
    failed: boolean;
    correct: boolean;
    'resource-id'?: string;
    'result-json'?: string;
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
  if (values.correct && !values.succeeded)
    throw new CliError('--correct corrects to --succeeded only: a success is never corrected to failed', 2);
  if (values.correct && !values.reason) throw new CliError('--correct needs --reason TEXT', 2);
  const fields = values['result-json'] === undefined ? undefined : resultJson(values['result-json']);
  if (fields !== undefined && !values.succeeded)
    throw new CliError('--result-json goes with --succeeded only', 2);
  const retentionMs =
    values.retention === undefined ? DEFAULT_RETENTION_MS : durationOption('--retention', values.retention);
  const by = values.by ?? process.env.USER ?? 'operator';
  let record;
  try {
    record = await resolveOperationAsOperator(store, {
      operationId: id,
      to: values.succeeded ? 'succeeded' : 'failed',
      by,
      now: systemClock.now(),
      retentionMs,
      ...(values['resource-id'] === undefined ? {} : { resourceId: values['resource-id'] }),
      ...(values.reason === undefined ? {} : { reason: values.reason }),
      ...(values.correct ? { correct: true } : {}),
      ...(fields === undefined ? {} : { fields }),
    });
  } catch (error) {
    if (!(error instanceof OperatorActionError)) throw error;
    if (error.field === 'fields') throw new CliError(`--result-json: ${error.message}`, 2);
    if (error.kind === 'usage') throw new CliError(error.message, 2);
    throw new CliError(
      error.correctable
        ? `${error.message}: idem ops resolve ${id} --correct ${CORRECT_FLAGS}`
        : error.message,
    );
  }
  out(`${JSON.stringify(showView(record), null, 2)}\n`);
}

/** `idem ops cancel <operation_id> --reason TEXT [--by NAME]`. */
async function cancelCommand(
  store: IdemStore,
  values: { reason?: string; by?: string },
  positionals: string[],
  out: (text: string) => void,
): Promise<void> {
  const id = positionals[0] as string;
  if (values.reason === undefined || values.reason.trim() === '')
    throw new CliError('cancel needs --reason TEXT', 2);
  try {
    const { record, cancel } = await requestCancelAsOperator(store, {
      operationId: id,
      reason: values.reason,
      by: values.by ?? process.env.USER ?? 'operator',
      now: systemClock.now(),
    });
    out(`${JSON.stringify({ ...showView(record), cancel }, null, 2)}\n`);
  } catch (error) {
    if (!(error instanceof OperatorActionError)) throw error;
    throw new CliError(error.message, error.kind === 'usage' ? 2 : 1);
  }
}

/** `--result-json`: a JSON object, or a usage error. */
function resultJson(text: string): JsonObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError('--result-json must be a JSON object, e.g. \'{"payment_id":"pay_1"}\'', 2);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new CliError('--result-json must be a JSON object, e.g. \'{"payment_id":"pay_1"}\'', 2);
  return parsed as JsonObject;
}

/**
 * How many operands each subcommand takes, and the usage a wrong count gets: checked, like every
 * flag, before the database is opened.
 */
const OPERANDS: Readonly<Record<string, readonly [number, string]>> = {
  list: [0, 'idem ops list [--status S] [--limit N]'],
  show: [1, 'idem ops show <operation_id>'],
  resolve: [1, 'idem ops resolve <operation_id> --succeeded|--failed'],
  cancel: [1, 'idem ops cancel <operation_id> --reason TEXT'],
  'dead-letters': [0, 'idem ops dead-letters [--limit N] [--json]'],
  requeue: [1, 'idem ops requeue <id>'],
};
