import type { Context, SpanContext } from '@opentelemetry/api';
import type { OtelApi } from './otel-api.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The caller's trace as a parent context, from a request's `_meta` (`traceparent` and optional
 * `tracestate`, W3C Trace Context, version 00), or undefined when it carries none or an invalid
 * one. Parsed here rather than by the global propagator, which an application may not have set.
 */
export function remoteParent(
  api: OtelApi,
  meta: Readonly<Record<string, unknown>> | undefined,
): Context | undefined {
  const spanContext = remoteSpanContext(api, meta?.traceparent, meta?.tracestate);
  return spanContext === undefined ? undefined : api.trace.setSpanContext(api.ROOT_CONTEXT, spanContext);
}

/**
 * A W3C `traceparent` (version 00) and optional `tracestate` as a remote span context, or undefined
 * when `traceparent` is not a string or not a valid one (malformed, or an all-zero id).
 */
export function remoteSpanContext(
  api: OtelApi,
  traceparent: unknown,
  tracestate?: unknown,
): SpanContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (match === null) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  const spanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
    ...(typeof tracestate === 'string' && tracestate.length > 0
      ? { traceState: api.createTraceState(tracestate) }
      : {}),
  };
  return api.trace.isSpanContextValid(spanContext) ? spanContext : undefined;
}
