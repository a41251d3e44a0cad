import { diag, DiagLogLevel, metrics, trace } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'idem';
import { TELEMETRY_FLUSH_MS, type Env, type RunningTelemetry } from './running-telemetry.js';

/** What `startTelemetry` (start-telemetry.ts) decided from the environment. */
export interface OtlpExportSettings {
  readonly env: Env;
  readonly serviceName: string;
  readonly logger: Logger;
  readonly traces: boolean;
  readonly metrics: boolean;
}

/**
 * Registers the global tracer and meter providers that export over OTLP/HTTP (JSON), as
 * `startTelemetry` decided; the exporters read their endpoint, headers and timeout from the
 * environment. Loaded by `startTelemetry` only when export is asked for.
 */
export function startOtlpExport(settings: OtlpExportSettings): RunningTelemetry {
  const { env, serviceName, logger } = settings;
  const wantTraces = settings.traces;
  const wantMetrics = settings.metrics;
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

function positive(value: string | undefined): number | undefined {
  const parsed = Number(value);
  return value !== undefined && Number.isSafeInteger(parsed) && parsed > 0 ? parsed : undefined;
}
