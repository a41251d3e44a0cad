import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the service does with one incoming request instead of (or after) answering it:
 * - `drop_after_apply`: applies the payment, then destroys the socket without answering;
 * - `503`: applies nothing, answers 503 with `Retry-After: 1`;
 * - `stall_after_apply`: applies the payment, then never answers (until `close()`);
 * - `stall_before`: applies nothing and never answers (until `close()`).
 * `none` answers normally (a spacer in a queue).
 */
export type PaymentFault = 'none' | 'drop_after_apply' | '503' | 'stall_after_apply' | 'stall_before';

/** A payment the service applied. */
export interface Payment {
  readonly id: string;
  readonly amount_cents: number;
  readonly currency: string;
  /** The `Idempotency-Key` it was made with. */
  readonly key: string;
}

/** One request as the service received it (the key and parsed body) and the fault it played. */
export interface ReceivedRequest {
  readonly key: string | undefined;
  readonly body: unknown;
  readonly fault: PaymentFault;
}

export interface PaymentsServiceOptions {
  /**
   * Which requests take the next queued fault: `every_request` (the default, in arrival order), or
   * `first_request_per_key` (only a request whose key the service has not seen before, so that
   * with several concurrent callers each payment meets at most one fault, and its resend none).
   */
  readonly faultsOn?: 'every_request' | 'first_request_per_key';
}

export interface PaymentsService {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:4000`. */
  readonly url: string;
  /** Appends faults to the queue; each is played once, by the next request that takes one. */
  fault(...faults: PaymentFault[]): void;
  /** Every payment applied, in order. */
  payments(): Payment[];
  /** The payment made with `key`, if any. */
  paymentFor(key: string): Payment | undefined;
  /** Every `POST /payments` received, in order. */
  requests(): ReceivedRequest[];
  /** Resolves once `count` requests are being held unanswered (stall faults). */
  holding(count?: number): Promise<void>;
  /** Ends every held request and connection, and stops listening. */
  close(): Promise<void>;
}

interface Stored {
  readonly body: string;
  readonly payment: Payment;
}

/**
 * A loopback payments API that honours `Idempotency-Key` as Stripe does: `POST /payments` with
 * `{amount_cents, currency}` answers 201 `{"id":"pay_<n>", amount_cents, currency}`; the same key
 * with the same body replays that first answer (status and body) with `Idempotent-Replayed: true`
 * and applies nothing; the same key with another body is 422 `idempotency_key_reuse`; no key is
 * 400 `idempotency_key_required`; an invalid body is 400 `invalid_request`. A key's payment counts
 * as applied from the moment it is recorded, whether or not its answer got out (a stalled first
 * answer does not block the replay). Faults are scripted per incoming request (see `fault`).
 */
export async function startPaymentsService(options: PaymentsServiceOptions = {}): Promise<PaymentsService> {
  const byKey = new Map<string, Stored>();
  const applied: Payment[] = [];
  const received: ReceivedRequest[] = [];
  const queue: PaymentFault[] = [];
  const seenKeys = new Set<string>();
  const held = new Set<ServerResponse>();
  const holdWaiters: Array<{ count: number; resolve: () => void }> = [];
  const faultsOn = options.faultsOn ?? 'every_request';

  const hold = (res: ServerResponse) => {
    held.add(res);
    for (const waiter of holdWaiters.splice(0)) {
      if (held.size >= waiter.count) waiter.resolve();
      else holdWaiters.push(waiter);
    }
  };
  const answer = (res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}) =>
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    if (req.method !== 'POST' || req.url !== '/payments') {
      answer(res, 404, { error: 'not_found' });
      return;
    }
    const key = req.headers['idempotency-key'] as string | undefined;
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const fresh = key !== undefined && !seenKeys.has(key);
    if (key !== undefined) seenKeys.add(key);
    const fault = faultsOn === 'every_request' || fresh ? (queue.shift() ?? 'none') : 'none';
    received.push({ key, body, fault });
    if (fault === 'stall_before') return hold(res);
    if (fault === '503') return answer(res, 503, { error: 'unavailable' }, { 'retry-after': '1' });
    if (key === undefined) return answer(res, 400, { error: 'idempotency_key_required' });
    const { amount_cents, currency } = (body ?? {}) as { amount_cents?: unknown; currency?: unknown };
    if (
      !Number.isSafeInteger(amount_cents) ||
      (amount_cents as number) <= 0 ||
      typeof currency !== 'string' ||
      !/^[A-Z]{3}$/.test(currency)
    ) {
      return answer(res, 400, { error: 'invalid_request' });
    }
    const canonical = JSON.stringify({ amount_cents, currency });
    const existing = byKey.get(key);
    if (existing !== undefined && existing.body !== canonical) {
      return answer(res, 422, { error: 'idempotency_key_reuse' });
    }
    let stored = existing;
    if (stored === undefined) {
      const payment = {
        id: `pay_${applied.length + 1}`,
        amount_cents: amount_cents as number,
        currency,
        key,
      };
      stored = { body: canonical, payment };
      byKey.set(key, stored);
      applied.push(payment);
    }
    if (fault === 'drop_after_apply') return void res.socket?.destroy();
    if (fault === 'stall_after_apply') return hold(res);
    const { id } = stored.payment;
    answer(
      res,
      201,
      { id, amount_cents: stored.payment.amount_cents, currency: stored.payment.currency },
      existing === undefined ? {} : { 'idempotent-replayed': 'true' },
    );
  };

  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => handle(req, res, raw));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    fault: (...faults) => void queue.push(...faults),
    payments: () => [...applied],
    paymentFor: (key) => byKey.get(key)?.payment,
    requests: () => [...received],
    holding: (count = 1) =>
      held.size >= count ? Promise.resolve() : new Promise((resolve) => holdWaiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.socket?.destroy();
        held.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
