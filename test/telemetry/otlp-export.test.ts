import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
} from '../helpers/mcp-fixtures.js';

const KEY = 'otlp-e2e-key-5c1d';
const BODY = 'otlp e2e body text, never exported';

interface Received {
  readonly path: string;
  readonly contentType: string;
  readonly text: string;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean };
}

interface OtlpSpan {
  name: string;
  spanId: string;
  attributes: OtlpAttribute[];
  links?: { spanId: string }[];
}

/** A loopback OTLP/HTTP receiver: keeps every POST /v1/traces and /v1/metrics body. */
function startReceiver(): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && (req.url === '/v1/traces' || req.url === '/v1/metrics')) {
        received.push({
          path: req.url,
          contentType: req.headers['content-type'] ?? '',
          text: Buffer.concat(chunks).toString('utf8'),
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        res.writeHead(404).end();
      }
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, received });
    });
  });
}

function spansOf(received: Received[]): OtlpSpan[] {
  return received
    .filter((r) => r.path === '/v1/traces')
    .flatMap((r) => {
      const body = JSON.parse(r.text) as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      return body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
    });
}

function attribute(span: OtlpSpan, key: string): unknown {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? value?.intValue ?? value?.boolValue;
}

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  ensureBuilt();
  receiver = await startReceiver();
});

afterAll(async () => {
  await cleanup();
  await new Promise((resolve) => receiver.server.close(resolve));
});

describe('idem serve exports OTLP/HTTP JSON when OTEL_EXPORTER_OTLP_ENDPOINT is set', () => {
  it('sends the spans of an executed call and its replay, and metrics; flushes on SIGTERM', async () => {
    const server = await startServerProcess({
      args: ['--db', join(makeTempDir('idem-otlp-'), 'otlp.sqlite')],
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'idem-e2e',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_METRIC_EXPORT_INTERVAL: '500',
      },
    });
    let client: Client | undefined;
    try {
      client = await connectHttp(server.url);
      const args = { workspace: 'default', idempotency_key: KEY, body: BODY };
      const first = await callTool(client, 'create_note', args);
      const second = await callTool(client, 'create_note', args);
      expect(first.sc.replayed).toBe(false);
      expect(second.sc.replayed).toBe(true);
      const created = () => spansOf(receiver.received).filter((s) => s.name === 'tools/call create_note');
      await until(() => created().length >= 2, 'two create_note spans');
      await until(
        () => receiver.received.some((r) => r.path === '/v1/metrics' && r.text.includes('idem.tool.calls')),
        'idem.tool.calls metrics',
      );
      const [executed, replayed] = created();
      expect(attribute(executed as OtlpSpan, 'idem.outcome')).toBe('executed');
      expect(attribute(replayed as OtlpSpan, 'idem.outcome')).toBe('replayed');
      expect(attribute(executed as OtlpSpan, 'gen_ai.tool.name')).toBe('create_note');
      expect(attribute(executed as OtlpSpan, 'mcp.method.name')).toBe('tools/call');
      expect(attribute(executed as OtlpSpan, 'idem.operation.id')).toBe(first.sc.operation_id);
      // A durable call: the in-process worker's attempt is a span linked to the accepting call's.
      const started = await callTool(client, 'start_deployment', {
        workspace: 'default',
        idempotency_key: `${KEY}-deploy`,
        service: 'api',
        version: '1.0.0',
      });
      expect(started.sc.status).toBe('accepted');
      const named = (name: string) => spansOf(receiver.received).filter((s) => s.name === name);
      await until(
        () =>
          named('tools/call start_deployment').length > 0 &&
          named('idem.attempt start_deployment').length > 0,
        'the start_deployment call and attempt spans',
      );
      const [accepting] = named('tools/call start_deployment');
      const [attempt] = named('idem.attempt start_deployment');
      expect(attribute(accepting as OtlpSpan, 'idem.outcome')).toBe('accepted');
      expect(attribute(attempt as OtlpSpan, 'idem.operation.id')).toBe(started.sc.operation_id);
      expect(attempt?.links?.map((link) => link.spanId)).toEqual([accepting?.spanId]);
      const traces = receiver.received.filter((r) => r.path === '/v1/traces');
      expect(traces.every((r) => r.contentType.startsWith('application/json'))).toBe(true);
      expect(traces.some((r) => r.text.includes('idem-e2e'))).toBe(true);
      for (const r of receiver.received) {
        expect(r.text).not.toContain(KEY);
        expect(r.text).not.toContain('never exported');
      }
    } finally {
      await closeQuietly(client);
    }
    const before = receiver.received.filter((r) => r.path === '/v1/metrics').length;
    server.proc.kill('SIGTERM');
    const exit = await server.waitForExit();
    expect(exit.code).toBe(0);
    // Shutdown exported the last metrics before the process ended.
    expect(receiver.received.filter((r) => r.path === '/v1/metrics').length).toBeGreaterThan(before);
  }, 60_000);
});
