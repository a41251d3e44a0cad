import { diag, DiagLogLevel, metrics, trace } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'idem';
import { CliError } from './cli-error.js';

/** How long shutdown waits for the last spans and metrics to be exported: 5 s. */
export const TELEMETRY_FLUSH_MS = 5000;

/** The exporters `startTelemetry` started. */
export interface RunningTelemetry {
  /** Whether spans and metrics are exported. */
  readonly traces: boolean;
  readonly metrics: boolean;
  /** Exports what is left and stops, waiting at most `boundMs` (default `TELEMETRY_FLUSH_MS`). */
  shutdown(boundMs?: number): Promise<void>;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Starts OTLP/HTTP export of Idem's spans and metrics when the standard OpenTelemetry environment
 * asks for it: `OTEL_EXPORTER_OTLP_ENDPOINT` (both), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER` /
 * `OTEL_METRICS_EXPORTER` is `none`. The exporters read their endpoint, headers and timeout from the
 * environment; the resource is `service.name` `serviceName` unless `OTEL_SERVICE_NAME` or
 * `OTEL_RESOURCE_ATTRIBUTES` says otherwise. The payload is JSON (`http/json`): `http/protobuf` is
 * answered with JSON too (an OTLP/HTTP receiver takes both, by `Content-Type`), with a warning;
 * `grpc` is refused (CliError, exit 2). Metrics are exported every `OTEL_METRIC_EXPORT_INTERVAL` ms
 * (default 60000). The SDK's own warnings (a failed export) are logged as `otel.diag`. Returns
 * undefined, having started nothing, when nothing is asked for.
 */
export function startTelemetry(env: Env, serviceName: string, logger: Logger): RunningTelemetry | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const wantTraces = wanted(env, 'TRACES');
  const wantMetrics = wanted(env, 'METRICS');
  if (!wantTraces && !wantMetrics) return undefined;
  for (const signal of ['TRACES', 'METRICS'] as const) {
    if (signal === 'TRACES' ? !wantTraces : !wantMetrics) continue;
    const protocol = (
      env[`OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`] ?? env.OTEL_EXPORTER_OTLP_PROTOCOL
    )?.trim();
    if (protocol === undefined || protocol === '' || protocol === 'http/json') continue;
    if (protocol === 'http/protobuf') {
      logger.warn('otel.protocol_json', { signal: signal.toLowerCase(), protocol, sent_as: 'http/json' });
      continue;
    }
    throw new CliError(
      `OTEL_EXPORTER_OTLP_PROTOCOL ${JSON.stringify(protocol)} is not supported: use http/json (or http/protobuf, sent as JSON)`,
      2,
    );
  }
  const resource = resourceFromAttributes({ 'service.name': serviceName }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const tracerProvider = wantTraces
    ? new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] })
    : undefined;
  const interval = positive(env.OTEL_METRIC_EXPORT_INTERVAL) ?? 60_000;
  const meterProvider = wantMetrics
    ? new MeterProvider({
        resource,
        readers: [
          new PeriodicExportingMetricReader({
            exporter: new OTLPMetricExporter(),
            exportIntervalMillis: interval,
            exportTimeoutMillis: Math.min(positive(env.OTEL_METRIC_EXPORT_TIMEOUT) ?? 30_000, interval),
          }),
        ],
      })
    : undefined;
  // The SDK's own warnings (an export that failed: receiver down, wrong URL) as log lines.
  const note = (level: 'warn' | 'error') => (message: string) =>
    logger[level]('otel.diag', { message: message.slice(0, 500) });
  diag.setLogger(
    { error: note('error'), warn: note('warn'), info: () => {}, debug: () => {}, verbose: () => {} },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  if (tracerProvider !== undefined) trace.setGlobalTracerProvider(tracerProvider);
  if (meterProvider !== undefined) metrics.setGlobalMeterProvider(meterProvider);
  logger.info('otel.started', { traces: wantTraces, metrics: wantMetrics, service: serviceName });
  return {
    traces: wantTraces,
    metrics: wantMetrics,
    async shutdown(boundMs = TELEMETRY_FLUSH_MS) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), boundMs);
      });
      const done = Promise.allSettled([tracerProvider?.shutdown(), meterProvider?.shutdown()]).then(
        () => 'done' as const,
      );
      const ended = await Promise.race([done, timedOut]);
      clearTimeout(timer);
      if (ended === 'timeout') logger.warn('otel.flush_timeout', { bound_ms: boundMs });
    },
  };
}

function wanted(env: Env, signal: 'TRACES' | 'METRICS'): boolean {
  if (env[`OTEL_${signal}_EXPORTER`]?.trim().toLowerCase() === 'none') return false;
  const endpoint = env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`] ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return endpoint !== undefined && endpoint.trim() !== '';
}

function positive(value: string | undefined): number | undefined {
  const parsed = Number(value);
  return value !== undefined && Number.isSafeInteger(parsed) && parsed > 0 ? parsed : undefined;
}
