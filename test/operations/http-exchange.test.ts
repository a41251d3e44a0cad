import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../packages/idem/src/operations/index.js';
import { classifyWrite, exchangeHttp } from '../../packages/idem/src/operations/http-exchange.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('exchangeHttp', () => {
  it.each([301, 302, 303, 307, 308])(
    'returns a %i as the answer and never follows it: the POST is not resent elsewhere (ambiguous)',
    async (status) => {
      let elsewhere = 0;
      const target = await listen((_req, res) => {
        elsewhere += 1;
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"pay_2"}');
      });
      const origin = await listen((_req, res) => {
        res.writeHead(status, { location: `${target}/payments` }).end();
      });
      const exchange = await exchangeHttp(
        { method: 'POST', url: `${origin}/payments`, headers: { 'idempotency-key': 'k' }, body: '{}' },
        { timeoutMs: 5_000 },
      );
      expect(exchange).toMatchObject({ kind: 'answered', status });
      expect(classifyWrite(exchange, Date.now()).kind).toBe('ambiguous');
      expect(elsewhere).toBe(0);
    },
  );
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1);
  it('reads delta-seconds and HTTP-dates; the past is 0; junk is undefined', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter(new Date(now + 1_500).toUTCString(), now)).toBe(1_000); // second precision
    expect(parseRetryAfter(new Date(now - 60_000).toUTCString(), now)).toBe(0);
    for (const junk of [null, '', '-1', '1.5', 'soon', '12abc'])
      expect(parseRetryAfter(junk, now), String(junk)).toBeUndefined();
  });
});
