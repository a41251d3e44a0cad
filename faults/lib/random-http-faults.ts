import type { FaultAction, FaultedRequest } from './fault-proxy.js';
import type { SeededRandom } from './seeded-random.js';

export interface HttpFaultMix {
  /** Which requests may be faulted (the others pass). */
  applies: (request: FaultedRequest) => boolean;
  /** Probability that an applicable request is faulted at all. */
  rate: number;
  /** Longest delay of a delayed reply. */
  maxDelayMs: number;
  /** Whether a request may be sent twice (not where the receiver cannot tell a duplicate: mode none). */
  duplicates: boolean;
}

/** Draws each request's fault from the seeded source: drops, delays, duplicates, 429/503 with Retry-After, redirects. */
export function randomHttpFaults(
  rng: SeededRandom,
  mix: HttpFaultMix,
): (request: FaultedRequest) => FaultAction {
  const kinds = ['drop_request', 'drop_reply', 'delay_reply', 'status_429', 'status_503', 'redirect'];
  if (mix.duplicates) kinds.push('duplicate');
  return (request) => {
    if (!mix.applies(request) || !rng.chance(mix.rate)) return { kind: 'pass' };
    const kind = rng.pick(kinds);
    switch (kind) {
      case 'delay_reply':
        return { kind, delayMs: rng.int(100, mix.maxDelayMs) };
      case 'status_429':
        return { kind: 'status', status: 429, retryAfterSeconds: rng.int(0, 1) };
      case 'status_503':
        return { kind: 'status', status: 503, retryAfterSeconds: rng.int(0, 1) };
      default:
        return { kind } as FaultAction;
    }
  };
}
