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

/** The process environment, or a test's. */
export type Env = Readonly<Record<string, string | undefined>>;
