import { describe, expect, it } from 'vitest';
import { silentLogger, type LogFields, type Logger } from '../../packages/idem/src/index.js';
import { CliError } from '../../packages/idem-cli/src/cli/cli-error.js';
import { startTelemetry } from '../../packages/idem-cli/src/cli/start-telemetry.js';

function recording(): { logger: Logger; events: string[] } {
  const events: string[] = [];
  const note = (event: string, _fields?: LogFields) => void events.push(event);
  return { logger: { ...silentLogger, info: note, warn: note, error: note }, events };
}

describe('startTelemetry: what the OpenTelemetry environment asks for', () => {
  it('starts nothing without an OTLP endpoint, or when disabled', async () => {
    expect(await startTelemetry({}, 'idem', silentLogger)).toBeUndefined();
    expect(await startTelemetry({ OTEL_SERVICE_NAME: 'x' }, 'idem', silentLogger)).toBeUndefined();
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(
      await startTelemetry({ ...endpoint, OTEL_SDK_DISABLED: 'true' }, 'idem', silentLogger),
    ).toBeUndefined();
    expect(
      await startTelemetry(
        { ...endpoint, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' },
        'idem',
        silentLogger,
      ),
    ).toBeUndefined();
  });

  it('refuses grpc before starting anything (exit 2)', async () => {
    const { logger, events } = recording();
    const start = () =>
      startTelemetry(
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
        'idem',
        logger,
      );
    await expect(start()).rejects.toThrow(CliError);
    await expect(start()).rejects.toThrow(/http\/json/);
    expect(events).not.toContain('otel.started');
  });
});
