import { emptyCounts, type WrongCounts } from './checker.js';
import { mcpCall, pause, type CallAnswer } from './mcp-call.js';
import type { UpstreamCall } from './proxy-rig.js';
import type { SeededRandom } from './seeded-random.js';

/** What an answer through the proxy says about its call. */
export type ProxyVerdict = 'applied' | 'not_applied' | 'unknown' | 'retry';

const RETRYABLE = new Set(['in_progress', 'busy', 'unavailable', 'rate_limited', 'timeout']);

/** Reads one answer: applied, "nothing was done", outcome unknown, or try again. */
export function proxyVerdict(answer: CallAnswer): ProxyVerdict {
  if (answer.kind === 'lost' || answer.kind === 'http') return 'retry';
  if (answer.kind === 'rpc_error')
    return /nothing was done|not applied/i.test(answer.message) ? 'not_applied' : 'retry';
  const error = answer.sc.error as { code?: string; message?: string } | undefined;
  if (answer.sc.status === 'outcome_unknown' || error?.code === 'outcome_unknown') return 'unknown';
  if (error?.code !== undefined && RETRYABLE.has(error.code)) return 'retry';
  if (answer.sc.status === 'running' || answer.sc.status === 'accepted') return 'retry';
  if (answer.sc.status === 'failed' || /nothing was done/i.test(`${answer.text} ${error?.message ?? ''}`))
    return 'not_applied';
  return 'applied';
}

export interface KeyedRecord {
  key: string;
  label: string;
  verdict: ProxyVerdict | undefined;
  /** The final answer's error, for findings. */
  detail: string;
}

/** Calls `tool` through the proxy once per key, each retried with the same key until a final verdict or `giveUpAt`. */
export async function runKeyedCalls(options: {
  url: () => string;
  tool: string;
  count: number;
  tag: string;
  rng: SeededRandom;
  spreadMs: number;
  /** Read at each try (it moves once the nemesis has healed everything). */
  giveUpAt: () => number;
  token?: string;
}): Promise<KeyedRecord[]> {
  return Promise.all(
    Array.from({ length: options.count }, async (_, index) => {
      await pause(options.rng.int(0, options.spreadMs));
      const record: KeyedRecord = {
        key: `key-${options.tag}-${index}`,
        label: `${options.tool}-${options.tag}-${index}`,
        verdict: undefined,
        detail: '',
      };
      while (Date.now() < options.giveUpAt()) {
        const answer = await mcpCall(
          options.url(),
          options.tool,
          { idempotency_key: record.key, label: record.label },
          { timeoutMs: 8000, ...(options.token === undefined ? {} : { token: options.token }) },
        );
        const verdict = proxyVerdict(answer);
        record.detail =
          answer.kind === 'answer' ? answer.text.slice(0, 200) : JSON.stringify(answer).slice(0, 200);
        if (verdict !== 'retry') {
          record.verdict = verdict;
          break;
        }
        await pause(answer.kind === 'http' && answer.retryAfterMs !== undefined ? answer.retryAfterMs : 200);
      }
      return record;
    }),
  );
}

/** Counts the wrong columns of keyed calls against the upstream's own record. */
export function checkKeyedCalls(
  records: readonly KeyedRecord[],
  calls: readonly UpstreamCall[],
): { counts: WrongCounts; finals: Record<string, number>; findings: string[] } {
  const counts = emptyCounts();
  const finals: Record<string, number> = {};
  const findings: string[] = [];
  for (const record of records) {
    const n = calls.filter((call) => call.label === record.label).length;
    const verdict = record.verdict ?? 'none';
    finals[verdict] = (finals[verdict] ?? 0) + 1;
    if (n > 1) {
      counts.duplicated += n - 1;
      findings.push(`duplicated: ${record.key} reached the upstream ${n} times`);
    }
    if (record.verdict === undefined) {
      counts.stuck += 1;
      findings.push(`stuck: ${record.key} never got a final answer; the last: ${record.detail}`);
    } else if (record.verdict === 'applied' && n === 0) {
      counts.lost += 1;
      findings.push(`lost: ${record.key} answered as applied; the upstream never received it`);
    } else if (record.verdict === 'not_applied' && n > 0) {
      counts.false_nothing += 1;
      findings.push(
        `false_nothing: ${record.key} answered "${record.detail}"; the upstream applied it ${n} time(s)`,
      );
    }
  }
  return { counts, finals, findings };
}
