import type { Counter, Histogram, Meter, MeterProvider, Tracer, TracerProvider } from '@opentelemetry/api';
import type { OtelApi } from './otel-api.js';

/** The instrumentation scope of everything Idem records. */
export const SCOPE = 'idem';

/** Idem's metric instruments, made once per registered meter provider. */
export interface IdemMeters {
  readonly meter: Meter;
  /** `idem.tool.calls`: tool calls by tool and outcome. */
  readonly calls: Counter;
  /** `mcp.server.operation.duration`: tool call duration, seconds. */
  readonly callDuration: Histogram;
  /** `idem.operation.attempts`: worker attempts by operation and outcome. */
  readonly attempts: Counter;
  /** `idem.operation.attempt.duration`: worker attempt duration, seconds. */
  readonly attemptDuration: Histogram;
}

/** Idem's tracer and instruments; each undefined while no provider of its kind is registered. */
export interface IdemInstruments {
  readonly tracer: Tracer | undefined;
  readonly meters: IdemMeters | undefined;
}

/** Seconds: the boundaries the MCP semantic conventions advise for operation durations. */
const SECONDS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

let noop: { readonly tracerProvider: TracerProvider; readonly meter: Meter } | undefined;
let tracerFor: { provider: TracerProvider; tracer: Tracer | undefined } | undefined;
let metersFor: { provider: MeterProvider; meters: IdemMeters | undefined } | undefined;

/**
 * The tracer and instruments of the providers registered now, looked up on every use (the metrics
 * API has no proxy, and a test may register another provider) and made again only when one
 * changed. Without a registered provider the answer is two undefineds, found in a few property
 * reads: a call records nothing and allocates nothing for it.
 */
export function idemInstruments(api: OtelApi): IdemInstruments {
  // The API's own no-op singletons, to recognise "nothing registered".
  noop ??= {
    tracerProvider: new api.ProxyTracerProvider().getDelegate(),
    meter: api.createNoopMeter(),
  };
  const proxy = api.trace.getTracerProvider();
  const tracerProvider = proxy instanceof api.ProxyTracerProvider ? proxy.getDelegate() : proxy;
  if (tracerFor?.provider !== tracerProvider) {
    tracerFor = {
      provider: tracerProvider,
      tracer: tracerProvider === noop.tracerProvider ? undefined : tracerProvider.getTracer(SCOPE),
    };
  }
  const meterProvider = api.metrics.getMeterProvider();
  if (metersFor?.provider !== meterProvider) {
    const meter = meterProvider.getMeter(SCOPE);
    metersFor = { provider: meterProvider, meters: meter === noop.meter ? undefined : metersOf(meter) };
  }
  return { tracer: tracerFor.tracer, meters: metersFor.meters };
}

function metersOf(meter: Meter): IdemMeters {
  return {
    meter,
    calls: meter.createCounter('idem.tool.calls', {
      description: 'Tool calls, by tool and outcome',
      unit: '{call}',
    }),
    callDuration: meter.createHistogram('mcp.server.operation.duration', {
      description: 'Duration of a tool call as the server handled it',
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS },
    }),
    attempts: meter.createCounter('idem.operation.attempts', {
      description: "A durable operation's worker attempts, by operation and outcome",
      unit: '{attempt}',
    }),
    attemptDuration: meter.createHistogram('idem.operation.attempt.duration', {
      description: "Duration of a durable operation's worker attempt",
      unit: 's',
      advice: { explicitBucketBoundaries: SECONDS },
    }),
  };
}
