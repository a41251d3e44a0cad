import type { Context } from '@opentelemetry/api';
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
  const traceparent = meta?.traceparent;
  if (typeof traceparent !== 'string') return undefined;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (match === null) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  const spanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
    ...(typeof meta?.tracestate === 'string' && meta.tracestate.length > 0
      ? { traceState: api.createTraceState(meta.tracestate) }
      : {}),
  };
  if (!api.trace.isSpanContextValid(spanContext)) return undefined;
  return api.trace.setSpanContext(api.ROOT_CONTEXT, spanContext);
}
