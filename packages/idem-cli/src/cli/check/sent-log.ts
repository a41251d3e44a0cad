/**
 * The arguments a row sent to the tool under check, as `--json` reports them: each distinct set
 * once with how many calls sent it, in the order first sent; the idempotency key replaced by
 * `<key N>` (the row's Nth key), so that which calls shared a key stays visible and no key is printed.
 */
export interface SentCall {
  readonly arguments: Record<string, unknown>;
  readonly calls: number;
  /** `second` for a call made with --token2's connection. */
  readonly principal: 'primary' | 'second';
}

/** Collects one row's calls. */
export class SentLog {
  readonly #calls = new Map<
    string,
    { arguments: Record<string, unknown>; calls: number; principal: SentCall['principal'] }
  >();
  readonly #keys = new Map<string, string>();

  record(args: Record<string, unknown>, keyName: string | undefined, principal: SentCall['principal']): void {
    const shown = { ...args };
    if (keyName !== undefined && typeof shown[keyName] === 'string') {
      const key = shown[keyName];
      let label = this.#keys.get(key);
      if (label === undefined) {
        label = `<key ${this.#keys.size + 1}>`;
        this.#keys.set(key, label);
      }
      shown[keyName] = label;
    }
    const id = JSON.stringify([principal, shown]);
    const known = this.#calls.get(id);
    if (known === undefined) this.#calls.set(id, { arguments: shown, calls: 1, principal });
    else known.calls += 1;
  }

  list(): SentCall[] {
    return [...this.#calls.values()].map((call) => ({ ...call }));
  }
}
