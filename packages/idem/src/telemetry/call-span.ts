import type { Span } from '@opentelemetry/api';
import { idemInstruments } from './idem-instruments.js';
import { otelApi } from './otel-api.js';
import { remoteParent } from './remote-parent.js';

/** A tool call's span, started when the call began; `recordCall` ends it. */
export interface StartedCallSpan {
  readonly span: Span;
  /**
   * The span's W3C `traceparent` (`00-{trace id}-{span id}-{flags}`), stored with a durable
   * operation the call accepts; undefined when the span is not recorded (sampled out).
   */
  readonly traceparent: string | undefined;
}

/**
 * Starts the span `tools/call {name}` (kind SERVER, a child of the caller's `traceparent` in
 * `traceContext` when it sent one) of a call that begins now, so that its context is known while
 * the call writes its record. Undefined without `@opentelemetry/api`, without a registered tracer
 * provider (in a few property reads, allocating nothing), or when starting it fails. Never throws.
 */
export function startCallSpan(
  name: string,
  traceContext: Readonly<Record<string, unknown>> | undefined,
): StartedCallSpan | undefined {
  const api = otelApi();
  if (api === undefined) return undefined;
  try {
    const { tracer } = idemInstruments(api);
    if (tracer === undefined) return undefined;
    const parent = remoteParent(api, traceContext) ?? api.ROOT_CONTEXT;
    const span = tracer.startSpan(`tools/call ${name}`, { kind: api.SpanKind.SERVER }, parent);
    if (!span.isRecording()) return { span, traceparent: undefined };
    const { traceId, spanId, traceFlags } = span.spanContext();
    const flags = (traceFlags & 0xff).toString(16).padStart(2, '0');
    return { span, traceparent: `00-${traceId}-${spanId}-${flags}` };
  } catch {
    return undefined;
  }
}
