import type { DurableRecord } from './checker.js';
import { mcpCall, pause, type CallAnswer } from './mcp-call.js';
import type { SeededRandom } from './seeded-random.js';

const FINAL = new Set(['succeeded', 'failed', 'outcome_unknown', 'cancelled']);

export interface DeploymentWorkloadOptions {
  /** The MCP endpoint, read at each call (a restarted server keeps its port; a proxy may sit in front). */
  url: () => string;
  count: number;
  rng: SeededRandom;
  /** A tag unique to this run, in every key and service name. */
  tag: string;
  /** Spread the submissions over this many milliseconds. */
  spreadMs: number;
  /**
   * Stop trying to get a key answered, or an operation final, at this epoch ms (read at each try:
   * it moves once the nemesis has healed everything). An operation accepted later has until its
   * acceptance plus `perOperationMs`.
   */
  giveUpAt: () => number;
  perOperationMs: number;
}

/**
 * The durable workload: `count` start_deployment calls, each with its own key and service name, each
 * retried with the same key and arguments until it names an operation, then followed with
 * get_operation until it is final. Bounded by `giveUpAt`: what is not final by then is `stuck`.
 */
export async function runDeployments(options: DeploymentWorkloadOptions): Promise<DurableRecord[]> {
  const delays = Array.from({ length: options.count }, () => options.rng.int(0, options.spreadMs));
  return Promise.all(
    delays.map(async (delay, index) => {
      await pause(delay);
      return followOne(options, index);
    }),
  );
}

async function followOne(options: DeploymentWorkloadOptions, index: number): Promise<DurableRecord> {
  const service = `svc-${options.tag}-${index}`;
  const key = `key-${options.tag}-${index}`;
  const record: DurableRecord = { key, service, operationId: undefined, final: undefined, last: '' };
  const args = { idempotency_key: key, workspace: 'default', service, version: '1.0.0' };
  let acceptedAt: number | undefined;
  const until = () =>
    Math.max(options.giveUpAt(), acceptedAt === undefined ? 0 : acceptedAt + options.perOperationMs);
  while (Date.now() < until() && record.final === undefined) {
    const answer =
      record.operationId === undefined
        ? await mcpCall(options.url(), 'start_deployment', args, { timeoutMs: 5000 })
        : await mcpCall(
            options.url(),
            'get_operation',
            { operation_id: record.operationId },
            { timeoutMs: 5000 },
          );
    const sc = answer.kind === 'answer' ? answer.sc : undefined;
    record.last = describe(answer);
    if (sc !== undefined && typeof sc.operation_id === 'string') {
      record.operationId = sc.operation_id;
      acceptedAt ??= Date.now();
    }
    if (sc !== undefined && typeof sc.status === 'string' && FINAL.has(sc.status)) {
      record.final = sc;
      break;
    }
    await pause(waitAfter(answer));
  }
  return record;
}

/** Milliseconds before the next try: a Retry-After when one came, else a short poll. */
function waitAfter(answer: CallAnswer): number {
  if (answer.kind === 'http' && answer.retryAfterMs !== undefined) return Math.min(answer.retryAfterMs, 3000);
  if (answer.kind === 'answer') {
    const retryAfter = (answer.sc.error as { retry_after_ms?: unknown } | undefined)?.retry_after_ms;
    if (typeof retryAfter === 'number') return Math.min(retryAfter, 3000);
    return 150;
  }
  return 250;
}

function describe(answer: CallAnswer): string {
  if (answer.kind === 'answer') {
    const error = answer.sc.error as { code?: string } | undefined;
    const parts = [answer.sc.status, error?.code, answer.sc.attempts, answer.sc.updated_at];
    const known = parts.filter((part) => part !== undefined).map(String);
    return known.length > 0 ? known.join(' ') : answer.text.slice(0, 80);
  }
  if (answer.kind === 'http') return `HTTP ${answer.status}`;
  if (answer.kind === 'rpc_error') return `JSON-RPC ${answer.code}`;
  return `no reply (${answer.reason})`;
}
