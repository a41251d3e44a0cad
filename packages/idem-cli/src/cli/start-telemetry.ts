import type { Logger } from 'idem';
import { CliError } from './cli-error.js';
import type { Env, RunningTelemetry } from './running-telemetry.js';

/**
 * Starts OTLP/HTTP export of Idem's spans and metrics when the standard OpenTelemetry environment
 * asks for it: `OTEL_EXPORTER_OTLP_ENDPOINT` (both), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, unless `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER` /
 * `OTEL_METRICS_EXPORTER` is `none`. The exporters read their endpoint, headers and timeout from the
 * environment; the resource is `service.name` `serviceName` unless `OTEL_SERVICE_NAME` or
 * `OTEL_RESOURCE_ATTRIBUTES` says otherwise. The payload is JSON (`http/json`): `http/protobuf` is
 * answered with JSON too (an OTLP/HTTP receiver takes both, by `Content-Type`), with a warning;
 * `grpc` is refused (CliError, exit 2). Metrics are exported every `OTEL_METRIC_EXPORT_INTERVAL` ms
 * (default 60000). The SDK's own warnings (a failed export) are logged as `otel.diag`. Resolves to
 * undefined, having started nothing, when nothing is asked for. The OpenTelemetry SDK is loaded
 * (otlp-export.ts) only then: every other run of the CLI does without its half-second import.
 */
export async function startTelemetry(
  env: Env,
  serviceName: string,
  logger: Logger,
): Promise<RunningTelemetry | undefined> {
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
  const { startOtlpExport } = await import('./otlp-export.js');
  return startOtlpExport({ env, serviceName, logger, traces: wantTraces, metrics: wantMetrics });
}

function wanted(env: Env, signal: 'TRACES' | 'METRICS'): boolean {
  if (env[`OTEL_${signal}_EXPORTER`]?.trim().toLowerCase() === 'none') return false;
  const endpoint = env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`] ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return endpoint !== undefined && endpoint.trim() !== '';
}
