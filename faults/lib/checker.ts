/**
 * The checker's columns. Every count comes from ground truth (the provider's deployments, the
 * upstream's record of calls) set against what Idem answered; a correct run has zero in each.
 *
 * - `duplicated`: effects beyond the first for one operation (or one key through the proxy);
 * - `lost`: operations Idem acknowledged (succeeded, or accepted while the scenario leaves the
 *   provider reachable before the deadline) that end with no effect;
 * - `stuck`: keys with no final answer (no final state, or the key never answered) past the deadline
 *   and the scenario's grace;
 * - `wrong_state`: a final state ground truth contradicts (succeeded naming another resource, an
 *   effect counted where the scenario allows none);
 * - `false_nothing`: an answer saying nothing was done (failed, refused) while ground truth shows
 *   the effect;
 * - `unauthorized`: effects or reads ground truth shows for calls whose credential lacks the workspace.
 */
export const WRONG_COLUMNS = [
  'duplicated',
  'lost',
  'stuck',
  'wrong_state',
  'false_nothing',
  'unauthorized',
] as const;
export type WrongColumn = (typeof WRONG_COLUMNS)[number];
export type WrongCounts = Record<WrongColumn, number>;

export function emptyCounts(): WrongCounts {
  return { duplicated: 0, lost: 0, stuck: 0, wrong_state: 0, false_nothing: 0, unauthorized: 0 };
}

/** What the workload saw of one durable operation. */
export interface DurableRecord {
  key: string;
  /** The service name, unique to this operation: how its deployments are found in ground truth. */
  service: string;
  operationId: string | undefined;
  /** The last get_operation (or start_deployment) answer in a final state; undefined: none seen. */
  final: Record<string, unknown> | undefined;
  /** The last answer seen, shortened (what a stuck operation was answering). */
  last: string;
}

export interface DeploymentTruth {
  deployment_id: string;
  service: string;
}

export interface DurableExpectation {
  /** The scenario leaves the provider reachable long enough: an accepted operation must not end without its effect. */
  promisesCompletion: boolean;
}

export interface DurableTally {
  counts: WrongCounts;
  finals: Record<string, number>;
  /** One line per operation counted in a wrong column, for the report. */
  findings: string[];
}

/** Counts each wrong column for durable deployments against the provider's own records. */
export function checkDeployments(
  records: readonly DurableRecord[],
  truth: readonly DeploymentTruth[],
  expectation: DurableExpectation,
): DurableTally {
  const counts = emptyCounts();
  const finals: Record<string, number> = {};
  const findings: string[] = [];
  const note = (column: WrongColumn, record: DurableRecord, why: string) => {
    counts[column] += 1;
    findings.push(`${column}: ${record.operationId ?? record.key} ${why}`);
  };
  for (const record of records) {
    const effects = truth.filter((d) => d.service === record.service);
    if (effects.length > 1) {
      counts.duplicated += effects.length - 1;
      findings.push(`duplicated: ${record.operationId ?? record.key} has ${effects.length} deployments`);
    }
    const status = typeof record.final?.status === 'string' ? record.final.status : 'none';
    const error = record.final?.error as { code?: string; message?: string } | undefined;
    const bucket = finalBucket(status, error?.message);
    finals[bucket] = (finals[bucket] ?? 0) + 1;
    if (record.final === undefined) {
      const what =
        record.operationId === undefined ? 'never answered its key' : 'never reached a final state';
      note('stuck', record, `${what}; the last answer: ${record.last}`);
      continue;
    }
    if (status === 'succeeded') {
      if (effects.length === 0) note('lost', record, 'succeeded, but the provider holds no deployment');
      else if (!effects.some((d) => d.deployment_id === record.final?.resource_id))
        note(
          'wrong_state',
          record,
          `succeeded naming ${String(record.final.resource_id)}, not the provider's`,
        );
    } else if (status === 'failed' || status === 'cancelled') {
      if (effects.length > 0)
        note('false_nothing', record, `${status} (${error?.message ?? ''}) while the provider deployed it`);
      else if (expectation.promisesCompletion && status === 'failed')
        note(
          'lost',
          record,
          `failed (${error?.message ?? ''}) although the provider was back before the deadline`,
        );
    }
  }
  return { counts, finals, findings };
}

/** A final state with the gist of its reason, digits folded (`failed: deadline exhausted after N attempts`). */
function finalBucket(status: string, message: string | undefined): string {
  if (message === undefined || status === 'succeeded') return status;
  const gist = message
    .replace(/^the outcome of the external call is unknown: /, '')
    .split(/[:(;]/)[0]
    ?.replace(/\d+/g, 'N')
    .trim();
  return gist ? `${status} (${gist})` : status;
}

/** Adds `more` into `into`, column by column. */
export function addCounts(into: WrongCounts, more: WrongCounts): void {
  for (const column of WRONG_COLUMNS) into[column] += more[column];
}
