import { acceptedCalls } from './accepted-calls.js';
import { idemInstruments } from './idem-instruments.js';
import { otelApi } from './otel-api.js';
import { remoteSpanContext } from './remote-parent.js';

/** One finished worker attempt, as `recordAttempt` records it. */
export interface AttemptLine {
  readonly operation: string;
  readonly version: number;
  readonly operationId: string;
  readonly attemptId: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** How the dispatch ended: `created`, `rejected`, `throttled`, `ambiguous`, `failed`, `cancelled`. */
  readonly outcome: string;
  readonly durationMs: number;
  /** The stored `traceparent` of the call that accepted the operation (`OperationRecord.acceptedTrace`). */
  readonly acceptedTrace?: string | undefined;
}

/**
 * Records one worker attempt: a span `idem.attempt {operation}` (kind INTERNAL, a new trace linked
 * to the call that accepted the operation: its stored `traceparent`, whichever process accepted
 * it, else the span this process noted when it accepted it), and the
 * `idem.operation.attempts` and `idem.operation.attempt.duration` metrics. Ids, names and the
 * outcome only. Does nothing without `@opentelemetry/api`; never throws.
 */
export function recordAttempt(line: AttemptLine): void {
  const api = otelApi();
  if (api === undefined) return;
  try {
    const { tracer, meters } = idemInstruments(api);
    if (tracer === undefined && meters === undefined) return;
    const metricAttributes = { 'idem.operation.name': line.operation, 'idem.attempt.outcome': line.outcome };
    meters?.attempts.add(1, metricAttributes);
    meters?.attemptDuration.record(line.durationMs / 1000, metricAttributes);
    if (tracer === undefined) return;
    const end = performance.timeOrigin + performance.now();
    const accepted = remoteSpanContext(api, line.acceptedTrace) ?? acceptedCalls.find(line.operationId);
    const span = tracer.startSpan(
      `idem.attempt ${line.operation}`,
      {
        kind: api.SpanKind.INTERNAL,
        startTime: end - line.durationMs,
        root: true,
        ...(accepted === undefined ? {} : { links: [{ context: accepted }] }),
      },
      api.ROOT_CONTEXT,
    );
    if (!span.isRecording()) return;
    span.setAttributes({
      ...metricAttributes,
      'idem.operation.id': line.operationId,
      'idem.operation.version': line.version,
      'idem.attempt.id': line.attemptId,
      'idem.attempt.number': line.attempt,
    });
    if (line.outcome === 'rejected' || line.outcome === 'failed' || line.outcome === 'ambiguous') {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: line.outcome });
    }
    span.end(end);
  } catch {
    // Telemetry never changes what a worker does.
  }
}
