import { acceptedCalls } from './accepted-calls.js';
import type { StartedCallSpan } from './call-span.js';
import { idemInstruments } from './idem-instruments.js';
import { otelApi } from './otel-api.js';
import { remoteParent } from './remote-parent.js';

/** What `recordCall` reads of a finished call (the `idem.call` log line's `CallLine` fits it). */
export interface FinishedCall {
  /** `create_note@v1` for a mutating tool, the bare name for a read tool. */
  readonly tool: string;
  readonly attemptId: string;
  readonly operationId?: string | undefined;
  /** The intent digest, or a function that computes it (called only when a span records it). */
  readonly intent?: string | (() => string | undefined) | undefined;
  /** `executed`, `replayed`, `accepted`, `ok`, or the error code. */
  readonly outcome: string;
  readonly errorCode?: string | undefined;
  readonly durationMs: number;
  /** The request's `_meta`: its `traceparent` and `tracestate` are the span's parent. */
  readonly traceContext?: Readonly<Record<string, unknown>> | undefined;
  /** The call's span when `startCallSpan` started it as the call began: ended here, not made anew. */
  readonly span?: StartedCallSpan | undefined;
}

/**
 * Records one finished tool call: a span `tools/call {tool}` (GenAI MCP conventions, kind SERVER,
 * a child of the caller's `traceparent` in `_meta` when it sent one) ending now and lasting
 * `durationMs` (or `line.span`, started by `startCallSpan` as the call began, ended now), and the
 * `idem.tool.calls` and `mcp.server.operation.duration` metrics. Carries the
 * tool, outcome, operation id and version, the attempt id and the intent digest: never the key, an
 * argument, the principal or the workspace. Does nothing without `@opentelemetry/api`, and next to
 * nothing without a registered provider. Never throws.
 */
export function recordCall(line: FinishedCall): void {
  const api = otelApi();
  if (api === undefined) return;
  try {
    const { tracer, meters } = idemInstruments(api);
    if (tracer === undefined && meters === undefined) {
      line.span?.span.end();
      return;
    }
    const { name, version } = splitLabel(line.tool);
    const metricAttributes = {
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': name,
      'idem.outcome': line.outcome,
      ...(line.errorCode === undefined ? {} : { 'error.type': line.errorCode }),
    };
    meters?.calls.add(1, metricAttributes);
    meters?.callDuration.record(line.durationMs / 1000, metricAttributes);
    const started = line.span?.span;
    if (tracer === undefined) {
      started?.end();
      return;
    }

    const end = performance.timeOrigin + performance.now();
    const span =
      started ??
      tracer.startSpan(
        `tools/call ${name}`,
        { kind: api.SpanKind.SERVER, startTime: end - line.durationMs },
        remoteParent(api, line.traceContext) ?? api.ROOT_CONTEXT,
      );
    if (!span.isRecording()) {
      started?.end();
      return;
    }
    span.setAttributes({
      ...metricAttributes,
      'gen_ai.operation.name': 'execute_tool',
      'idem.attempt.id': line.attemptId,
      ...(version === undefined ? {} : { 'idem.operation.version': version }),
      ...(line.operationId === undefined ? {} : { 'idem.operation.id': line.operationId }),
      ...intentAttribute(line.intent),
    });
    if (line.errorCode !== undefined) {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: line.errorCode });
    }
    if (line.outcome === 'accepted' && line.operationId !== undefined) {
      acceptedCalls.note(line.operationId, span.spanContext());
    }
    span.end(started === undefined ? end : undefined);
  } catch {
    // Telemetry never changes what a call answers.
  }
}

/** `create_note@v1` as its name and version; a read tool's bare name has no version. */
function splitLabel(label: string): { name: string; version: number | undefined } {
  const at = label.lastIndexOf('@v');
  if (at < 0) return { name: label, version: undefined };
  const version = Number(label.slice(at + 2));
  return Number.isSafeInteger(version)
    ? { name: label.slice(0, at), version }
    : { name: label, version: undefined };
}

/** The `idem.intent` attribute, computing a lazy digest now. */
function intentAttribute(intent: FinishedCall['intent']): { 'idem.intent'?: string } {
  const digest = typeof intent === 'function' ? intent() : intent;
  return digest === undefined ? {} : { 'idem.intent': digest };
}
