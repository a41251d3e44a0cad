import { systemClock, type IdemStore } from 'idem';
import { CliError } from './cli-error.js';
import { iso, messageView } from '../ops/operation-views.js';
import { requeueDeadLetter } from '../ops/operator-actions.js';
import { OperatorActionError } from '../ops/operator-error.js';
import { intOption } from './options.js';
import { textTable } from './text-table.js';

/**
 * `idem ops dead-letters` lists the outbox messages the dispatcher gave up on (oldest first);
 * `idem ops requeue <id>` makes one due again with a fresh count of attempts. Payloads are never
 * printed: they are bodies.
 */
export async function opsOutboxCommand(
  sub: 'dead-letters' | 'requeue',
  store: IdemStore,
  values: { limit: string; json: boolean },
  positionals: string[],
  out: (text: string) => void,
): Promise<void> {
  if (sub === 'requeue') {
    const raw = positionals[0];
    if (raw === undefined || positionals.length > 1) throw new CliError('usage: idem ops requeue <id>', 2);
    const id = intOption('<id>', raw, 1, Number.MAX_SAFE_INTEGER);
    let requeued;
    try {
      requeued = await requeueDeadLetter(store, id, systemClock.now());
    } catch (error) {
      if (error instanceof OperatorActionError) throw new CliError(error.message);
      throw error;
    }
    out(`${JSON.stringify(messageView(requeued), null, 2)}\n`);
    return;
  }
  if (positionals.length > 0) throw new CliError('usage: idem ops dead-letters [--limit N] [--json]', 2);
  const dead = await store.outbox.deadLetters({ limit: intOption('--limit', values.limit, 1, 100_000) });
  if (values.json) return out(`${JSON.stringify(dead.map(messageView))}\n`);
  const rows = dead.map((m) => [
    String(m.id),
    m.dedupKey,
    m.destination,
    String(m.attempts),
    m.lastError ?? '-',
    iso(m.deadAt) ?? '-',
  ]);
  out(
    textTable(
      ['ID', 'DEDUP KEY', 'DESTINATION', 'ATTEMPTS', 'LAST ERROR', 'DEAD SINCE'],
      rows,
      '(no dead letters)',
    ),
  );
}
