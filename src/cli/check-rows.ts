import { randomUUID } from 'node:crypto';
import type { AttemptResult } from '../client/call-with-timeout.js';
import { readToolReply, replyError, stringField } from '../client/tool-reply.js';
import type { FaultEvent } from '../testing/transport-faults.js';
import type { CheckConfig } from './check-config.js';
import { fillTemplate } from './check-config.js';
import type { CheckConnection } from './check-connection.js';
import { readJsonPath } from './check-json-path.js';

export type RowId =
  'lost_response' | 'concurrent_duplicates' | 'conflicting_arguments' | 'fresh_key' | 'cross_principal';

export interface RowResult {
  readonly row: RowId;
  readonly title: string;
  readonly result: 'pass' | 'fail' | 'skip';
  /** One line for the table. */
  readonly summary: string;
  /** Ids, codes and counts behind the verdict, for --json. */
  readonly evidence: Record<string, unknown>;
}

export interface CheckRun {
  readonly config: CheckConfig;
  readonly primary: CheckConnection;
  /** The connection of a second principal, when a second token was given. */
  readonly second: CheckConnection | undefined;
  readonly timeoutMs: number;
  readonly concurrency: number;
  readonly signal?: AbortSignal;
}

/** What one call came to, in the terms the rows compare. */
type Observed =
  | { readonly kind: 'succeeded'; readonly id: string | undefined; readonly replayed: boolean }
  | { readonly kind: 'error'; readonly code: string }
  | { readonly kind: 'no_reply'; readonly code: string };

interface Row {
  readonly id: RowId;
  title(run: CheckRun): string;
  check(run: CheckRun, ctx: Context): Promise<Omit<RowResult, 'row' | 'title'>>;
}

/**
 * The contract rows, run in order against one server. Each row uses its own keys and its own
 * `{{unique}}` values, so rows never see each other's actions; effects are counted as the change of
 * the configured count around the row (another writer in the same scope would disturb it).
 */
export async function checkRows(run: CheckRun): Promise<RowResult[]> {
  const ctx = new Context(run);
  const results: RowResult[] = [];
  for (const row of ROWS) {
    const title = row.title(run);
    try {
      results.push({ row: row.id, title, ...(await row.check(run, ctx)) });
    } catch (error) {
      run.signal?.throwIfAborted();
      const message = (error as Error)?.message ?? String(error);
      results.push({
        row: row.id,
        title,
        result: 'fail',
        summary: `error: ${message}`,
        evidence: { error: message },
      });
    }
  }
  return results;
}

class Context {
  constructor(private readonly run: CheckRun) {}

  key(): string {
    return `idem-check-${randomUUID()}`;
  }

  unique(): string {
    return randomUUID().slice(0, 13);
  }

  args(unique: string, key: string, template = this.run.config.arguments): Record<string, unknown> {
    return { ...fillTemplate(template, unique), [this.run.config.keyField]: key };
  }

  async call(
    connection: CheckConnection,
    args: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<Observed> {
    const { config, timeoutMs } = this.run;
    return this.observe(await connection.call(config.tool, args, timeoutMs, signal ?? this.run.signal));
  }

  /** Like `call`, but resends (same key, same arguments) while the server says busy or in_progress. */
  async callSettled(connection: CheckConnection, args: Record<string, unknown>): Promise<Observed> {
    for (let tries = 1; ; tries += 1) {
      const step = await connection.call(this.run.config.tool, args, this.run.timeoutMs, this.run.signal);
      const observed = this.observe(step);
      const pending =
        observed.kind === 'error' && (observed.code === 'busy' || observed.code === 'in_progress');
      if (!pending || tries >= 5) return observed;
      const after = step.kind === 'reply' ? replyError(step.reply.content)?.retryAfterMs : undefined;
      await new Promise((resolve) => setTimeout(resolve, Math.min(after ?? 100, 2000)));
    }
  }

  observe(step: AttemptResult): Observed {
    if (step.kind === 'failure') return { kind: 'no_reply', code: step.failure.error.code };
    const { content, isError } = step.reply;
    if (isError) return { kind: 'error', code: replyError(content)?.code ?? 'tool_error' };
    return { kind: 'succeeded', id: this.idOf(content), replayed: content.replayed === true };
  }

  idOf(content: Record<string, unknown>): string | undefined {
    const { idPath } = this.run.config;
    if (idPath !== undefined) {
      const value = readJsonPath(content, idPath);
      return typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
    }
    const named = Object.keys(content).find(
      (k) => /(^id$|_id$)/.test(k) && !/^(operation|attempt)_id$/.test(k),
    );
    return (
      stringField(content, 'resource_id') ??
      (named && stringField(content, named)) ??
      stringField(content, 'operation_id')
    );
  }

  /** The configured effect count, or undefined when the config has none. */
  async count(): Promise<number | undefined> {
    const spec = this.run.config.count;
    if (spec === undefined) return undefined;
    const step = await this.run.primary.call(spec.tool, spec.arguments, this.run.timeoutMs, this.run.signal);
    if (step.kind === 'failure') throw new Error(`count tool ${spec.tool}: ${step.failure.error.code}`);
    if (step.reply.isError) {
      throw new Error(`count tool ${spec.tool}: ${replyError(step.reply.content)?.code ?? 'tool_error'}`);
    }
    const value = readJsonPath(step.reply.content, spec.path);
    if (Array.isArray(value)) return value.length;
    if (typeof value === 'number') return value;
    throw new Error(`count path of ${spec.tool} is neither an array nor a number`);
  }
}

const delta = (before: number | undefined, after: number | undefined) =>
  before === undefined || after === undefined ? undefined : after - before;
const effects = (n: number | undefined) =>
  n === undefined ? 'effects not counted' : `effects ${n >= 0 ? '+' : ''}${n}`;
const show = (o: Observed) =>
  o.kind === 'succeeded'
    ? `${o.id ?? '(no id)'}${o.replayed ? ' (replayed)' : ''}`
    : o.kind === 'error'
      ? o.code
      : `no reply (${o.code})`;
const verdict = (pass: boolean) => (pass ? 'pass' : 'fail') as 'pass' | 'fail';

const ROWS: readonly Row[] = [
  {
    id: 'lost_response',
    title: () => 'lost response, then retry',
    async check(run, ctx) {
      const before = await ctx.count();
      const args = ctx.args(ctx.unique(), ctx.key());
      const controller = new AbortController();
      let dropped: FaultEvent | undefined;
      const stop = run.primary.watchFaults((event) => {
        dropped = event;
        controller.abort(new Error('response dropped'));
      });
      run.primary.faults.inject({ fault: 'drop_response', tool: run.config.tool });
      let unanswered: Observed | undefined;
      try {
        unanswered = await ctx.call(
          run.primary,
          args,
          AbortSignal.any([controller.signal, ...(run.signal ? [run.signal] : [])]),
        );
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      } finally {
        stop();
        run.primary.faults.clear();
      }
      if (dropped === undefined) {
        const seen = unanswered === undefined ? 'nothing' : show(unanswered);
        return {
          result: 'fail',
          summary: `the first call never got a response to drop (${seen})`,
          evidence: { first: seen },
        };
      }
      const message = dropped.response as { result?: unknown } | undefined;
      const first =
        message?.result === undefined
          ? ({ kind: 'error', code: 'jsonrpc_error' } as const)
          : ctx.observe({ kind: 'reply', reply: readToolReply(message.result) });
      const retry = await ctx.call(run.primary, args);
      const n = delta(before, await ctx.count());
      const same =
        first.kind === 'succeeded' &&
        retry.kind === 'succeeded' &&
        first.id !== undefined &&
        first.id === retry.id;
      const pass = same && (n === undefined || n === 1);
      const summary = `dropped ${show(first)}; retry ${show(retry)}${!same && retry.kind === 'succeeded' && first.kind === 'succeeded' ? ': a second resource' : ''}; ${effects(n)}`;
      return { result: verdict(pass), summary, evidence: { dropped: first, retry, effects: n } };
    },
  },
  {
    id: 'concurrent_duplicates',
    title: (run) => `${run.concurrency} concurrent duplicates`,
    async check(run, ctx) {
      const before = await ctx.count();
      const args = ctx.args(ctx.unique(), ctx.key());
      const calls = await Promise.all(
        Array.from({ length: run.concurrency }, () => ctx.callSettled(run.primary, args)),
      );
      const n = delta(before, await ctx.count());
      const ids = [...new Set(calls.flatMap((c) => (c.kind === 'succeeded' ? [c.id ?? '(no id)'] : [])))];
      const failures = calls.flatMap((c) => (c.kind === 'succeeded' ? [] : [c.code]));
      const succeeded = calls.length - failures.length;
      const pass = failures.length === 0 && ids.length === 1 && (n === undefined || n === 1);
      const shown = ids.length <= 2 ? `: ${ids.join(', ')}` : '';
      const summary =
        `${succeeded}/${calls.length} succeeded, ${ids.length} distinct id${ids.length === 1 ? '' : 's'}${shown}` +
        `${failures.length > 0 ? `; errors ${failures.join(', ')}` : ''}; ${effects(n)}`;
      return {
        result: verdict(pass),
        summary,
        evidence: { calls: calls.length, succeeded, ids, errors: failures, effects: n },
      };
    },
  },
  {
    id: 'conflicting_arguments',
    title: () => 'same key, other arguments',
    async check(run, ctx) {
      const key = ctx.key();
      const first = await ctx.call(run.primary, ctx.args(ctx.unique(), key));
      if (first.kind !== 'succeeded') {
        return {
          result: 'fail',
          summary: `the first call did not succeed: ${show(first)}`,
          evidence: { first },
        };
      }
      const before = await ctx.count();
      const second = await ctx.call(run.primary, ctx.args(ctx.unique(), key));
      const n = delta(before, await ctx.count());
      const pass = second.kind === 'error' && (n === undefined || n === 0);
      const summary =
        second.kind === 'succeeded'
          ? `accepted: ${show(second)}${second.id === first.id ? ', the first result for other arguments' : ''}; ${effects(n)}`
          : `${show(second)}; ${effects(n)}`;
      return { result: verdict(pass), summary, evidence: { first, second, effects: n } };
    },
  },
  {
    id: 'fresh_key',
    title: () => 'fresh key, same arguments',
    async check(run, ctx) {
      const before = await ctx.count();
      const unique = ctx.unique();
      const first = await ctx.call(run.primary, ctx.args(unique, ctx.key()));
      const second = await ctx.call(run.primary, ctx.args(unique, ctx.key()));
      const n = delta(before, await ctx.count());
      const two = first.kind === 'succeeded' && second.kind === 'succeeded' && first.id !== second.id;
      const pass = two && (n === undefined || n === 2);
      const summary = `${show(first)}, then ${show(second)}${two ? ' (two resources)' : ''}; ${effects(n)}`;
      return { result: verdict(pass), summary, evidence: { first, second, effects: n } };
    },
  },
  {
    id: 'cross_principal',
    title: () => 'another principal, same key',
    async check(run, ctx) {
      if (run.second === undefined)
        return { result: 'skip', summary: 'no second token (--token2)', evidence: {} };
      const key = ctx.key();
      const unique = ctx.unique();
      const first = await ctx.call(run.primary, ctx.args(unique, key));
      if (first.kind !== 'succeeded') {
        return {
          result: 'fail',
          summary: `the first principal's call did not succeed: ${show(first)}`,
          evidence: { first },
        };
      }
      const template = { ...run.config.arguments, ...run.config.secondArguments };
      const other = await ctx.call(run.second, ctx.args(unique, key, template));
      const leaked = other.kind === 'succeeded' && (other.id === first.id || other.replayed);
      const pass = other.kind === 'error' || (other.kind === 'succeeded' && !leaked);
      const summary = `first ${show(first)}; other principal ${other.kind === 'succeeded' && !leaked ? 'got its own ' : 'got '}${show(other)}${leaked ? ": the first principal's result" : ''}`;
      return { result: verdict(pass), summary, evidence: { first, other } };
    },
  },
];
