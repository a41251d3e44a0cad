import { DEFAULT_RETRY_POLICY, type RetryPolicy } from 'idem';
import { type RecoveryMode, DEFAULT_OUTBOX_MAX_ATTEMPTS } from 'idem/operations';
import { CliError } from './cli-error.js';
import { durationOption, intOption } from './options.js';

/** Flags shared by `idem serve` and `idem worker` for durable operations. */
export const WORK_OPTIONS = {
  'provider-url': { type: 'string' },
  'provider-mode': { type: 'string', default: 'key' },
  // The reference provider's own default (DEFAULT_KEY_RETENTION_MS).
  'provider-key-retention': { type: 'string', default: '24h' },
  deadline: { type: 'string', default: '30s' },
  'attempt-timeout': { type: 'string', default: '8s' },
  'max-attempts': { type: 'string', default: '3' },
  'worker-lease': { type: 'string', default: '5s' },
  'worker-poll': { type: 'string', default: '200ms' },
  'outbox-max-attempts': { type: 'string', default: String(DEFAULT_OUTBOX_MAX_ATTEMPTS) },
} as const;

/**
 * The help of WORK_OPTIONS, one entry per flag. `providerUrlNote` ends the entry of --provider-url
 * with what the command does without it (a line break indents to the description column).
 */
export function workHelp(providerUrlNote: string): string {
  const note = providerUrlNote.replaceAll('\n', `\n${' '.repeat(29)}`);
  return `  --provider-url URL         the deployment provider (and webhook receiver); ${note}
  --provider-mode MODE       what it supports: key (Idempotency-Key), reference (lookup by client
                             reference) or none; decides the recovery path (default key)
  --provider-key-retention DUR  mode key: how long the provider keeps an Idempotency-Key; no
                             resend is made once it may have forgotten one (outcome_unknown
                             instead; default 24h, as idem provider --key-retention)
  --deadline DUR             total deadline of a deployment (default 30s)
  --attempt-timeout DUR      cap of one provider attempt (default 8s)
  --max-attempts N           attempts per deployment that may reach the provider (default 3); a
                             refused connection sends nothing and is retried until the deadline
  --worker-lease DUR         lease on an operation, renewed while working (default 5s)
  --worker-poll DUR          wait between polls when idle (default 200ms)
  --outbox-max-attempts N    sends of a webhook without a 2xx before it becomes a dead letter
                             (default ${DEFAULT_OUTBOX_MAX_ATTEMPTS}; see idem ops dead-letters)`;
}

export interface WorkSettings {
  providerUrl: string | undefined;
  providerMode: RecoveryMode;
  /** Mode key: how long the provider keeps an idempotency key, ms. */
  providerKeyRetentionMs: number;
  policy: RetryPolicy;
  leaseMs: number;
  pollIntervalMs: number;
  outboxMaxAttempts: number;
}

export function workSettings(values: {
  'provider-url'?: string | undefined;
  'provider-mode': string;
  'provider-key-retention': string;
  deadline: string;
  'attempt-timeout': string;
  'max-attempts': string;
  'worker-lease': string;
  'worker-poll': string;
  'outbox-max-attempts': string;
}): WorkSettings {
  const mode = values['provider-mode'];
  if (mode !== 'key' && mode !== 'reference' && mode !== 'none') {
    throw new CliError('--provider-mode must be key, reference or none', 2);
  }
  const url = values['provider-url'];
  if (url !== undefined && !/^https?:\/\/[^/]+/.test(url))
    throw new CliError('--provider-url must be an http(s) URL', 2);
  return {
    providerUrl: url,
    providerMode: mode,
    providerKeyRetentionMs: durationOption('--provider-key-retention', values['provider-key-retention']),
    policy: {
      ...DEFAULT_RETRY_POLICY,
      totalMs: durationOption('--deadline', values.deadline, 24 * 3_600_000),
      attemptTimeoutMs: durationOption('--attempt-timeout', values['attempt-timeout'], 3_600_000),
      maxAttempts: intOption('--max-attempts', values['max-attempts'], 1, 100),
    },
    leaseMs: durationOption('--worker-lease', values['worker-lease'], 3_600_000),
    pollIntervalMs: durationOption('--worker-poll', values['worker-poll'], 60_000),
    outboxMaxAttempts: intOption('--outbox-max-attempts', values['outbox-max-attempts'], 1, 1_000_000),
  };
}
