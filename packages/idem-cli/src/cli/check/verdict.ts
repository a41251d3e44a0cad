import type { SentCall } from './sent-log.js';

/**
 * A row's verdict. `pass` needs positive evidence (ids compared, or effects counted); `inconclusive`
 * says what evidence is missing and is not a pass; `skip` is a row that does not apply (no second
 * token, no key argument to test).
 */
export type Verdict = 'pass' | 'fail' | 'inconclusive' | 'skip';

export type RowId =
  | 'key_argument'
  | 'sample_arguments'
  | 'lost_response'
  | 'concurrent_duplicates'
  | 'conflicting_arguments'
  | 'fresh_key'
  | 'cross_principal';

export interface RowResult {
  readonly row: RowId;
  readonly title: string;
  readonly result: Verdict;
  /** One line for the table: the reason for the verdict, then what was seen. */
  readonly summary: string;
  /** Ids, codes and counts behind the verdict, for --json and --junit. */
  readonly evidence: Record<string, unknown>;
  /** The arguments the row sent to the tool under check (keys redacted), to reproduce the verdict. */
  readonly sent: readonly SentCall[];
  readonly durationMs: number;
}

export type RowOutcome = Pick<RowResult, 'result' | 'summary' | 'evidence'>;

/**
 * What a row found, sorted into proofs, failures and missing evidence: any failure makes a fail,
 * else any proof a pass, else the row is inconclusive and says what it missed.
 */
export class Judgement {
  readonly #proofs: string[] = [];
  readonly #failures: string[] = [];
  readonly #missing: string[] = [];

  prove(reason: string): this {
    this.#proofs.push(reason);
    return this;
  }

  fail(reason: string): this {
    this.#failures.push(reason);
    return this;
  }

  miss(reason: string): this {
    if (!this.#missing.includes(reason)) this.#missing.push(reason);
    return this;
  }

  get failed(): boolean {
    return this.#failures.length > 0;
  }

  get result(): Verdict {
    return this.#failures.length > 0 ? 'fail' : this.#proofs.length > 0 ? 'pass' : 'inconclusive';
  }

  /** The reason for the verdict, in a few words. */
  reason(): string {
    if (this.#failures.length > 0) return this.#failures.join('; ');
    if (this.#proofs.length > 0) return this.#proofs.join(', ');
    return `no evidence: ${this.#missing.join('; ') || 'nothing to compare'}`;
  }

  outcome(seen: string, evidence: Record<string, unknown>, prefix = ''): RowOutcome {
    return { result: this.result, summary: `${prefix}${this.reason()}: ${seen}`, evidence };
  }
}

export function skip(summary: string, evidence: Record<string, unknown> = {}): RowOutcome {
  return { result: 'skip', summary, evidence };
}

export function inconclusive(summary: string, evidence: Record<string, unknown> = {}): RowOutcome {
  return { result: 'inconclusive', summary, evidence };
}

export function failed(summary: string, evidence: Record<string, unknown> = {}): RowOutcome {
  return { result: 'fail', summary, evidence };
}

/** `+2`, `-1`, `+0`. */
export function signed(n: number): string {
  return `${n >= 0 ? '+' : ''}${n}`;
}
