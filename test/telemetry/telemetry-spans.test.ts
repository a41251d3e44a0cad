import { join } from 'node:path';
import { metrics, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type DataPoint,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { intentDigest } from '../../packages/idem/src/core/intent-digest.js';
import { observeWaitingOperations } from '../../packages/idem/src/telemetry/observe-waiting-operations.js';
import { recordAttempt } from '../../packages/idem/src/telemetry/record-attempt.js';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { cleanup, closeQuietly, connectInMemory, makeTempDir } from '../helpers/mcp-fixtures.js';

/** A reader the test collects from when it wants. */
class TestReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN = '00f067aa0ba902b7';
const KEY = 'otel-key-7f3a-secret-ish';
const BODY = 'a note body that must never leave the server';

let spans: InMemorySpanExporter;
let reader: TestReader;
let tracerProvider: BasicTracerProvider;
let meterProvider: MeterProvider;
let app: ReferenceApp | undefined;
let client: Client | undefined;

async function metricsNamed(name: string): Promise<MetricData | undefined> {
  const { resourceMetrics } = await reader.collect();
  for (const scope of resourceMetrics.scopeMetrics) {
    const found = scope.metrics.find((metric) => metric.descriptor.name === name);
    if (found !== undefined) return found;
  }
  return undefined;
}

function point(
  metric: MetricData | undefined,
  attributes: Record<string, unknown>,
): DataPoint<unknown> | undefined {
  return (metric?.dataPoints as DataPoint<unknown>[] | undefined)?.find((p) =>
    Object.entries(attributes).every(([name, value]) => p.attributes[name] === value),
  );
}

async function createNote(body: string, meta?: Record<string, unknown>) {
  const raw = await (client as Client).callTool({
    name: 'create_note',
    arguments: { workspace: 'default', idempotency_key: KEY, body },
    ...(meta === undefined ? {} : { _meta: meta }),
  });
  return raw.structuredContent as Record<string, unknown>;
}

beforeEach(async () => {
  spans = new InMemorySpanExporter();
  tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  reader = new TestReader({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  meterProvider = new MeterProvider({ readers: [reader] });
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  app = new ReferenceApp({
    dbPath: join(makeTempDir('idem-otel-'), 'otel.sqlite'),
    registry: TokenRegistry.fixed({ principal: 'dev', workspaces: ['default'] }),
  });
  client = await connectInMemory(app, 'dev');
});

afterEach(async () => {
  await closeQuietly(client);
  await app?.close();
  trace.disable();
  metrics.disable();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
  await cleanup();
});

describe('tool call spans (SDK v2 McpServer)', () => {
  it('names and attributes the span per the GenAI MCP conventions, continuing the trace in _meta', async () => {
    const first = await createNote(BODY, {
      traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01`,
      tracestate: 'vendor=abc',
    });
    const [span] = spans.getFinishedSpans().filter((s) => s.name === 'tools/call create_note');
    expect(span).toBeDefined();
    expect(span?.kind).toBe(SpanKind.SERVER);
    expect(span?.spanContext().traceId).toBe(TRACE_ID);
    expect(span?.parentSpanContext?.spanId).toBe(PARENT_SPAN);
    expect(span?.parentSpanContext?.traceState?.get('vendor')).toBe('abc');
    expect(span?.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'create_note',
      'gen_ai.operation.name': 'execute_tool',
      'idem.outcome': 'executed',
      'idem.operation.id': first.operation_id,
      'idem.operation.version': 1,
      'idem.intent': intentDigest({
        principal: 'dev',
        workspace: 'default',
        operation: 'create_note',
        key: KEY,
      }),
    });
    expect(span?.attributes['error.type']).toBeUndefined();
    expect(span?.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it('says replayed, then payload_conflict with error.type; never the key, the body or the workspace', async () => {
    await createNote(BODY);
    await createNote(BODY);
    await createNote(`${BODY} changed`);
    const calls = spans.getFinishedSpans().filter((s) => s.name === 'tools/call create_note');
    expect(calls.map((s) => s.attributes['idem.outcome'])).toEqual([
      'executed',
      'replayed',
      'payload_conflict',
    ]);
    // Without a traceparent each call is a root span of its own trace.
    expect(calls.every((s) => s.parentSpanContext === undefined)).toBe(true);
    const conflict = calls[2];
    expect(conflict?.attributes['error.type']).toBe('payload_conflict');
    expect(conflict?.status.code).toBe(SpanStatusCode.ERROR);
    const everything = JSON.stringify(calls.map((s) => ({ name: s.name, attributes: s.attributes })));
    expect(everything).not.toContain(KEY);
    expect(everything).not.toContain('note body');
    expect(everything).not.toContain('default');
    expect(everything).not.toContain('"dev"');
  });

  it('counts calls by tool and outcome and records their duration in seconds', async () => {
    await createNote(BODY);
    await createNote(BODY);
    const calls = await metricsNamed('idem.tool.calls');
    expect(point(calls, { 'gen_ai.tool.name': 'create_note', 'idem.outcome': 'executed' })?.value).toBe(1);
    expect(point(calls, { 'gen_ai.tool.name': 'create_note', 'idem.outcome': 'replayed' })?.value).toBe(1);
    const duration = await metricsNamed('mcp.server.operation.duration');
    expect(duration?.descriptor.unit).toBe('s');
    const executed = point(duration, { 'idem.outcome': 'executed' })?.value as { count: number; sum: number };
    expect(executed.count).toBe(1);
    expect(executed.sum).toBeGreaterThan(0);
    expect(executed.sum).toBeLessThan(60);
  });

  it('ends a refused call (invalid argument) with its code, and a read tool with ok', async () => {
    await (client as Client).callTool({
      name: 'create_note',
      arguments: { workspace: 'default', body: BODY },
    });
    await (client as Client).callTool({ name: 'list_notes', arguments: { workspace: 'default' } });
    const names = spans.getFinishedSpans().map((s) => [s.name, s.attributes['idem.outcome']]);
    expect(names).toContainEqual(['tools/call create_note', 'invalid_argument']);
    expect(names).toContainEqual(['tools/call list_notes', 'ok']);
  });

  it("links a worker attempt's span to the call that accepted its operation", async () => {
    const raw = await (client as Client).callTool({
      name: 'start_deployment',
      arguments: { workspace: 'default', idempotency_key: 'deploy-otel-1', service: 'api', version: '1.2.3' },
    });
    const accepted = raw.structuredContent as { status: string; operation_id: string };
    expect(accepted.status).toBe('accepted');
    const call = spans.getFinishedSpans().find((s) => s.name === 'tools/call start_deployment');
    expect(call?.attributes['idem.outcome']).toBe('accepted');
    recordAttempt({
      operation: 'start_deployment',
      version: 1,
      operationId: accepted.operation_id,
      attemptId: 'att_test',
      attempt: 1,
      outcome: 'created',
      durationMs: 12,
    });
    const attempt = spans.getFinishedSpans().find((s) => s.name === 'idem.attempt start_deployment');
    expect(attempt?.links.map((link) => link.context.spanId)).toEqual([call?.spanContext().spanId]);
    expect(attempt?.attributes).toMatchObject({
      'idem.operation.id': accepted.operation_id,
      'idem.attempt.outcome': 'created',
      'idem.attempt.number': 1,
    });
    const attempts = await metricsNamed('idem.operation.attempts');
    expect(
      point(attempts, { 'idem.operation.name': 'start_deployment', 'idem.attempt.outcome': 'created' })
        ?.value,
    ).toBe(1);
  });

  it('reports the operations waiting for a person and the dead letters as gauges, read at collection', async () => {
    const stop = observeWaitingOperations((app as ReferenceApp).store);
    try {
      expect(point(await metricsNamed('idem.operations.outcome_unknown'), {})?.value).toBe(0);
      expect(point(await metricsNamed('idem.outbox.dead_letters'), {})?.value).toBe(0);
      expect(point(await metricsNamed('idem.operations.outcome_unknown.oldest_age'), {})?.value).toBe(0);
    } finally {
      stop();
    }
  });
});

describe('without a registered provider', () => {
  it('answers calls as before and records nothing', async () => {
    trace.disable();
    metrics.disable();
    const first = await createNote(BODY);
    const second = await createNote(BODY);
    expect(first.status).toBe('succeeded');
    expect(second.replayed).toBe(true);
    expect(spans.getFinishedSpans()).toEqual([]);
    expect(await metricsNamed('idem.tool.calls')).toBeUndefined();
  });
});
