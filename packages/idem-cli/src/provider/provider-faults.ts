import { z } from 'zod';

/** The provider's write routes that faults can target: `POST /deployments` and `POST /webhooks`. */
export type FaultRoute = 'create' | 'webhook';

export type FaultKind = 'drop_response' | 'delay' | 'status' | 'exit';

/**
 * One fault to inject, as given to `ProviderFaults.arm` or as the JSON body of `POST /_faults`.
 *
 * - `drop_response`: the request is applied and committed, then the socket is destroyed unanswered.
 * - `delay`: the request is applied and committed, then the reply waits `delayMs`.
 * - `status`: the request is NOT applied; the reply is `status` (e.g. 500, 503, 429) with body
 *   `{ error: 'injected_fault', status }`. A 429 always carries `Retry-After` (default 1 second);
 *   other statuses carry it only when `retryAfterSeconds` is given.
 * - `exit`: the request is applied and committed, then the process exits with code 137 before replying.
 */
export interface FaultSpec {
  kind: FaultKind;
  /** Which write route triggers it; omitted: the next write on either route. */
  route?: FaultRoute;
  /** How many matching requests it affects before it is spent (default 1). */
  times?: number;
  /** For `delay`: milliseconds to wait after committing, before replying. */
  delayMs?: number;
  /** For `status`: the HTTP status to reply with. */
  status?: number;
  /** For `status`: the `Retry-After` header value in seconds. */
  retryAfterSeconds?: number;
}

/** A fault as the provider holds it: validated, with its remaining count. */
export interface ArmedFault {
  readonly id: number;
  readonly kind: FaultKind;
  readonly route: FaultRoute | undefined;
  remaining: number;
  readonly delayMs: number | undefined;
  readonly status: number | undefined;
  readonly retryAfterSeconds: number | undefined;
}

export const faultSpecSchema = z
  .object({
    kind: z.enum(['drop_response', 'delay', 'status', 'exit']),
    route: z.enum(['create', 'webhook']).optional(),
    times: z.number().int().min(1).max(10_000).optional(),
    delayMs: z.number().int().min(0).max(600_000).optional(),
    status: z.number().int().min(400).max(599).optional(),
    retryAfterSeconds: z.number().int().min(0).max(86_400).optional(),
  })
  .strict()
  .superRefine((spec, ctx) => {
    if (spec.kind === 'delay' && spec.delayMs === undefined)
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['delayMs'], message: 'required for a delay fault' });
    if (spec.kind === 'status' && spec.status === undefined)
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['status'], message: 'required for a status fault' });
  });

/** The one-line reason a value is not a valid FaultSpec, or undefined when it is one. */
export function faultSpecProblem(value: unknown): string | undefined {
  const parsed = faultSpecSchema.safeParse(value);
  return parsed.success ? undefined : describeZodError(parsed.error);
}

export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}

/**
 * The provider's fault switches: a FIFO queue of n-shot faults. Each write request takes the first
 * armed fault whose route matches it (or that has no route), which spends one of its `times`.
 */
export class ProviderFaults {
  #queue: ArmedFault[] = [];
  #nextId = 1;

  /** Queues a fault; throws a TypeError naming the problem when the spec is invalid. */
  arm(spec: FaultSpec): ArmedFault {
    const parsed = faultSpecSchema.safeParse(spec);
    if (!parsed.success) throw new TypeError(`invalid fault: ${describeZodError(parsed.error)}`);
    const valid = parsed.data;
    const fault: ArmedFault = {
      id: this.#nextId++,
      kind: valid.kind,
      route: valid.route,
      remaining: valid.times ?? 1,
      delayMs: valid.delayMs,
      status: valid.status,
      retryAfterSeconds: valid.retryAfterSeconds ?? (valid.status === 429 ? 1 : undefined),
    };
    this.#queue.push(fault);
    return fault;
  }

  /** Removes every armed fault; returns how many there were. */
  clear(): number {
    const count = this.#queue.length;
    this.#queue = [];
    return count;
  }

  /** The faults still armed, oldest first (copies). */
  pending(): ArmedFault[] {
    return this.#queue.map((fault) => ({ ...fault }));
  }

  /** Spends one shot of the first fault matching `route`; undefined when none is armed for it. */
  take(route: FaultRoute): ArmedFault | undefined {
    const index = this.#queue.findIndex((fault) => fault.route === undefined || fault.route === route);
    if (index === -1) return undefined;
    const fault = this.#queue[index] as ArmedFault;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.#queue.splice(index, 1);
    return { ...fault };
  }
}
