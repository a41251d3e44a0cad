import { randomUUID } from 'node:crypto';
import { type AttemptResult, replyError } from 'idem/client';
import type { CheckConnection } from '../check-connection.js';
import { readCount, type EffectCount } from './effect-count.js';
import type { FindIdOptions } from './find-id.js';
import { observe, type Observed } from './observed.js';
import { otherValue, type OtherArguments } from './other-arguments.js';
import { SentLog, type SentCall } from './sent-log.js';
import type { ToolPlan } from './tool-plan.js';
import { fillTemplate, newUnique } from './unique-template.js';
import { signed, type Judgement } from './verdict.js';

/** What a run of `idem check` shares across tools. */
export interface CheckRun {
  readonly primary: CheckConnection;
  /** The connection of a second principal, when a second token was given. */
  readonly second: CheckConnection | undefined;
  readonly timeoutMs: number;
  readonly concurrency: number;
  readonly rounds: number;
  readonly signal?: AbortSignal | undefined;
}

/** One intended action: its arguments, the `{{unique}}` fill and the key (none without a key argument). */
export interface Action {
  readonly args: Record<string, unknown>;
  readonly unique: string;
  readonly key: string | undefined;
}

const SETTLE_TRIES = 5;

/**
 * The rows' view of one tool: fresh actions, calls observed in the rows' terms, and the effect
 * count when one was found. Each action has its own key and its own `{{unique}}`, so rows never
 * see each other's actions.
 */
export class RowContext {
  #sent = new SentLog();

  constructor(
    readonly run: CheckRun,
    readonly plan: ToolPlan,
    readonly count: EffectCount | undefined,
  ) {}

  /** A new intended action: a fresh key (when the tool has a key argument) and fresh arguments. */
  action(
    options: { unique?: string; key?: string | undefined; template?: Record<string, unknown> } = {},
  ): Action {
    const unique = options.unique ?? newUnique();
    const key = 'key' in options ? options.key : this.newKey();
    const args = fillTemplate(options.template ?? this.plan.template, unique);
    if (key !== undefined && this.plan.key !== undefined) args[this.plan.key.name] = key;
    return { args, unique, key };
  }

  /**
   * The same key and arguments as `first`, but for one argument outside the scope, which takes
   * another valid value (`other`): "the same key with other arguments".
   */
  otherAction(first: Action, other: Extract<OtherArguments, { field: string }>): Action {
    const unique = newUnique();
    return { args: { ...first.args, [other.field]: otherValue(other, unique) }, unique, key: first.key };
  }

  newKey(): string | undefined {
    return this.plan.key === undefined ? undefined : `idem-check-${randomUUID()}`;
  }

  ids(action: Action): FindIdOptions {
    return { idPath: this.plan.idPath, sent: action.args, unique: action.unique, key: action.key };
  }

  async call(connection: CheckConnection, action: Action, signal?: AbortSignal): Promise<Observed> {
    return observe(await this.attempt(connection, action, signal), this.ids(action));
  }

  /** Like `call`, but resends the same action while the server answers busy or in_progress. */
  async callSettled(connection: CheckConnection, action: Action): Promise<Observed> {
    for (let tries = 1; ; tries += 1) {
      const step = await this.attempt(connection, action);
      const observed = observe(step, this.ids(action));
      const pending =
        observed.kind === 'error' && (observed.code === 'busy' || observed.code === 'in_progress');
      if (!pending || tries >= SETTLE_TRIES) return observed;
      const after = step.kind === 'reply' ? replyError(step.reply.content)?.retryAfterMs : undefined;
      await new Promise((resolve) => setTimeout(resolve, Math.min(after ?? 100, 2000)));
    }
  }

  /** The effect count now, or undefined when nothing counts this tool's effects. */
  async effects(): Promise<number | undefined> {
    if (this.count === undefined) return undefined;
    return readCount(this.count, {
      connection: this.run.primary,
      timeoutMs: this.run.timeoutMs,
      signal: this.run.signal,
    });
  }

  /** Starts a new row's record of what was sent. */
  beginRow(): void {
    this.#sent = new SentLog();
  }

  /** The arguments sent since `beginRow`, the key redacted. */
  sent(): SentCall[] {
    return this.#sent.list();
  }

  attempt(connection: CheckConnection, action: Action, signal?: AbortSignal): Promise<AttemptResult> {
    this.#sent.record(
      action.args,
      this.plan.key?.name,
      connection === this.run.second && connection !== this.run.primary ? 'second' : 'primary',
    );
    return connection.call(this.plan.name, action.args, this.run.timeoutMs, signal ?? this.run.signal);
  }

  /**
   * Judges a counted change against what `actions` intended actions make. More is always a failure
   * (duplicates). Less fails only for a configured count: a count found by itself may be a capped
   * page of a list, so less is then missing evidence, not a verdict.
   */
  judgeEffects(judge: Judgement, n: number | undefined, actions: 1 | 2): void {
    if (n === undefined || this.count === undefined) return;
    const expected = actions * this.count.perAction;
    if (n === expected) {
      judge.prove(`${actions === 1 ? "one action's effect" : "two actions' effects"} (${signed(n)})`);
      return;
    }
    const problem = `effects ${signed(n)} where ${actions === 1 ? 'one action makes' : 'two actions make'} ${signed(expected)}`;
    if (n > expected || this.count.from !== 'found') judge.fail(problem);
    else judge.miss(`${problem}, but the count found may be capped (a page of a list): pass --count-tool`);
  }

  /** Prefix for the rows of a tool without a key argument. */
  get keyless(): string {
    return this.plan.key === undefined ? 'without a key: ' : '';
  }

  /** What is missing when a row found no evidence: ids, and a count when there is none. */
  missingEvidence(echoed: boolean): string {
    const ids = echoed
      ? 'the only id found echoes the arguments (pass --id-path to a server-made id)'
      : 'no id in the results (pass --id-path)';
    return this.count === undefined ? `${ids}; no count tool (pass --count-tool NAME)` : ids;
  }
}
