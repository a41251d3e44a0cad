import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { prototypeKeyHolder } from '../../packages/idem/src/mcp/prototype-key-refusal.js';
import { noteIdsInDb } from '../helpers/client-fixtures.js';
import {
  CLI,
  REPO_ROOT,
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  track,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { MCP_HEADERS, rawRequest, rpc } from '../helpers/raw-http.js';

// Issue 15 §5: every unknown argument key, `__proto__` and `constructor` included, is
// invalid_argument; empty and disallowed JSON-RPC batches get the error the specifications prescribe.

beforeAll(() => ensureBuilt());
afterEach(cleanup);
afterAll(cleanup);

interface Started {
  srv: ServerProcess;
  db: string;
}

async function server(): Promise<Started> {
  const db = join(makeTempDir(), 'db.sqlite');
  return { srv: await startServerProcess({ args: ['--db', db] }), db };
}

/** A create_note call whose arguments JSON is written by hand (JSON.stringify would not keep __proto__). */
function createNoteWith(body: string, extra: string, id: number | string = 1): string {
  const more = extra === '' ? '' : `,${extra}`;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":"create_note","arguments":{"workspace":"default","idempotency_key":"k-${randomUUID()}","body":${JSON.stringify(body)}${more}}}}`;
}

interface ToolCallAnswer {
  id: unknown;
  result?: {
    isError?: boolean;
    structuredContent?: { status?: string; error?: { code: string; message: string } };
  };
  error?: { code: number; message: string };
}

describe('unknown argument keys over HTTP', () => {
  it('answers __proto__ (any value, any depth), constructor and any other unknown key invalid_argument and writes nothing', async () => {
    const { srv, db } = await server();
    const cases: [extra: string, message: string][] = [
      ['"__proto__":1', 'arguments: Unrecognized key: "__proto__"'],
      ['"__proto__":{"workspace":"other"}', 'arguments: Unrecognized key: "__proto__"'],
      ['"__proto__":null', 'arguments: Unrecognized key: "__proto__"'],
      ['"meta":{"list":[{"__proto__":{}}]}', 'meta.list.0: Unrecognized key: "__proto__"'],
      ['"constructor":1', 'Unrecognized key: "constructor"'],
      ['"constructor":{"prototype":{}}', 'Unrecognized key: "constructor"'],
      ['"toString":"x"', 'Unrecognized key: "toString"'],
      ['"hasOwnProperty":1', 'Unrecognized key: "hasOwnProperty"'],
      ['"tenant_id":"t"', 'Unrecognized key: "tenant_id"'],
    ];
    for (const [extra, message] of cases) {
      const body = `note-${randomUUID()}`;
      const answer = await rawRequest({
        port: srv.port,
        headers: MCP_HEADERS,
        body: createNoteWith(body, extra, 7),
      });
      expect(answer.status, extra).toBe(200);
      const json = answer.json() as ToolCallAnswer;
      expect(json.id).toBe(7);
      expect(json.result?.isError, extra).toBe(true);
      expect(json.result?.structuredContent?.status).toBe('rejected');
      expect(json.result?.structuredContent?.error?.code, extra).toBe('invalid_argument');
      expect(json.result?.structuredContent?.error?.message, extra).toContain(message);
      expect(noteIdsInDb(db, body), extra).toEqual([]);
    }
    // A read tool is refused alike.
    const read = await rawRequest({
      port: srv.port,
      headers: MCP_HEADERS,
      body: '{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"list_notes","arguments":{"workspace":"default","__proto__":{}}}}',
    });
    expect((read.json() as ToolCallAnswer).result?.structuredContent?.error?.code).toBe('invalid_argument');
    const refused = await srv.waitForLogs(
      (l) => l.event === 'http.refused' && l.reason === 'prototype_key',
      5,
    );
    expect(refused).toHaveLength(5);
  });

  it('an SDK client sending a __proto__ argument gets the same refusal', async () => {
    const { srv, db } = await server();
    const client = await connectHttp(srv.url);
    try {
      const body = `note-${randomUUID()}`;
      const args = JSON.parse(
        `{"workspace":"default","idempotency_key":"k1","body":${JSON.stringify(body)},"__proto__":1}`,
      ) as Record<string, unknown>;
      const result = await callTool(client, 'create_note', args);
      expect(result.isError).toBe(true);
      expect(result.sc.error).toMatchObject({ code: 'invalid_argument' });
      expect(noteIdsInDb(db, body)).toEqual([]);
    } finally {
      await closeQuietly(client);
    }
  });
});

describe('JSON-RPC batches over HTTP', () => {
  const ping = (id: number) => ({ jsonrpc: '2.0', id, method: 'ping' });
  const invalidRequest = { jsonrpc: '2.0', error: { code: -32600 }, id: null };

  it('an empty batch is an Invalid Request (400, -32600, id null)', async () => {
    const { srv } = await server();
    const answer = await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: '[]' });
    expect(answer.status).toBe(400);
    expect(answer.json()).toMatchObject(invalidRequest);
  });

  it('a batch is refused under 2025-06-18 and later, and allowed under 2025-03-26 (the default without a header)', async () => {
    const { srv } = await server();
    const batch = JSON.stringify([ping(1), ping(2)]);
    for (const version of ['2025-06-18', '2025-11-25']) {
      const answer = await rawRequest({
        port: srv.port,
        headers: { ...MCP_HEADERS, 'MCP-Protocol-Version': version },
        body: batch,
      });
      expect(answer.status, version).toBe(400);
      expect(answer.json()).toMatchObject(invalidRequest);
    }
    const legacy: Record<string, string>[] = [{}, { 'MCP-Protocol-Version': '2025-03-26' }];
    for (const extra of legacy) {
      const answer = await rawRequest({ port: srv.port, headers: { ...MCP_HEADERS, ...extra }, body: batch });
      expect(answer.status).toBe(200);
      expect(answer.json()).toEqual([
        { jsonrpc: '2.0', id: 1, result: {} },
        { jsonrpc: '2.0', id: 2, result: {} },
      ]);
    }
  });

  it('a legacy batch with an initialize request, or with a __proto__ argument, is refused whole', async () => {
    const { srv, db } = await server();
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const withInit = await rawRequest({
      port: srv.port,
      headers: MCP_HEADERS,
      body: JSON.stringify([initialize]),
    });
    expect(withInit.status).toBe(400);
    expect(withInit.json()).toMatchObject(invalidRequest);
    const plain = `note-${randomUUID()}`;
    const proto = `note-${randomUUID()}`;
    const mixed = `[${createNoteWith(plain, '', 1)},${createNoteWith(proto, '"__proto__":1', 2)}]`;
    const answer = await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: mixed });
    expect(answer.status).toBe(400);
    expect((answer.json() as ToolCallAnswer).error?.message).toContain('batch element 1');
    expect(noteIdsInDb(db, plain)).toEqual([]);
    expect(noteIdsInDb(db, proto)).toEqual([]);
  });
});

describe('bodies that are not UTF-8 over HTTP', () => {
  it('answers 400 with -32700 before anything runs, so two different byte strings never replay as one', async () => {
    const { srv, db } = await server();
    const key = `k-${randomUUID()}`;
    const body = `note-${randomUUID()}`;
    // The same call but for one byte of the note's body: 0xFF and 0xFE are not UTF-8; a lenient
    // decoder reads both as U+FFFD, and the second would replay the first one's receipt.
    const call = (bad: number) =>
      Buffer.concat([
        Buffer.from(
          `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_note","arguments":{"workspace":"default","idempotency_key":"${key}","body":"${body}`,
        ),
        Buffer.from([bad]),
        Buffer.from('"}}}'),
      ]);
    // Also a truncated multi-byte sequence and an encoded surrogate (CESU-8), both invalid UTF-8.
    const others = [Buffer.from([0xe2, 0x82]), Buffer.from([0xed, 0xa0, 0x80])].map((bytes) =>
      Buffer.concat([Buffer.from(rpc('ping').slice(0, -1)), Buffer.from(',"x":"'), bytes, Buffer.from('"}')]),
    );
    for (const bytes of [call(0xff), call(0xfe), ...others]) {
      const answer = await rawRequest({ port: srv.port, headers: MCP_HEADERS, body: bytes });
      expect(answer.status).toBe(400);
      expect(answer.json()).toEqual({
        jsonrpc: '2.0',
        error: { code: -32700, message: 'Parse error: the body is not valid UTF-8; nothing was done' },
        id: null,
      });
    }
    expect(noteIdsInDb(db, `${body}\ufffd`)).toEqual([]);
    const refusals = await srv.waitForLogs((l) => l.event === 'http.refused' && l.reason === 'not_utf8', 4);
    expect(refusals).toHaveLength(4);
    // The same call in valid UTF-8 (U+00FF, two bytes) runs once.
    const valid = await rawRequest({
      port: srv.port,
      headers: MCP_HEADERS,
      body: call(0xff).toString('latin1'),
    });
    expect((valid.json() as ToolCallAnswer).result?.structuredContent?.status).toBe('succeeded');
    expect(noteIdsInDb(db, `${body}\u00ff`)).toHaveLength(1);
  });
});

describe('protocol edges over stdio', () => {
  it('answers a line that is not UTF-8 or not JSON, batches and __proto__ itself, and keeps serving', async () => {
    const db = join(makeTempDir(), 'db.sqlite');
    const proc = track(
      spawn(process.execPath, [CLI, 'serve', '--stdio', '--db', db], {
        cwd: REPO_ROOT,
        env: cleanEnv(),
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const answers: Record<string, unknown>[] = [];
    let partial = '';
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines)
        if (line.trim() !== '') answers.push(JSON.parse(line) as Record<string, unknown>);
    });
    const waitFor = async (count: number) => {
      // Bounded by time: the first answer waits for the server process to start, slow under load.
      const deadline = Date.now() + 20_000;
      while (answers.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(answers.length).toBeGreaterThanOrEqual(count);
    };
    const send = (line: string) => proc.stdin?.write(`${line}\n`);
    send(rpc('ping', undefined, 'first'));
    await waitFor(1);
    const body = `note-${randomUUID()}`;
    send('{not json');
    send('[]');
    send(JSON.stringify([{ jsonrpc: '2.0', id: 'b1', method: 'ping' }]));
    send(createNoteWith(body, '"__proto__":{"workspace":"x"}', 'proto'));
    send(createNoteWith(body, '"constructor":1', 'ctor'));
    // Not UTF-8 (0xFF in the body): refused, never read as U+FFFD.
    const [head, tail] = createNoteWith(body, '', 'bad-utf8').split(body) as [string, string];
    proc.stdin?.write(
      Buffer.concat([Buffer.from(`${head}${body}`), Buffer.from([0xff]), Buffer.from(`${tail}\n`)]),
    );
    send(rpc('ping', undefined, 'last'));
    await waitFor(8);
    const byId = (id: unknown) => answers.filter((a) => a.id === id);
    const anonymous = byId(null).map((a) => a.error as { code: number; message: string });
    expect(anonymous.map((e) => e.code)).toEqual([-32700, -32600, -32600, -32700]);
    expect(anonymous[3]?.message).toBe('Parse error: the line is not valid UTF-8');
    expect(byId('bad-utf8')).toEqual([]);
    expect(noteIdsInDb(db, `${body}\ufffd`)).toEqual([]);
    for (const id of ['proto', 'ctor']) {
      const [answer] = byId(id) as unknown as ToolCallAnswer[];
      expect(answer?.result?.structuredContent?.error?.code, id).toBe('invalid_argument');
    }
    expect(byId('b1')).toEqual([]);
    expect(byId('last')).toEqual([{ jsonrpc: '2.0', id: 'last', result: {} }]);
    expect(noteIdsInDb(db, body)).toEqual([]);
    proc.stdin?.end();
  });
});

describe('prototypeKeyHolder', () => {
  it('finds the first own __proto__ key by path and survives deep nesting', () => {
    expect(prototypeKeyHolder(JSON.parse('{"a":1,"__proto__":2}'))).toEqual([]);
    expect(prototypeKeyHolder(JSON.parse('{"a":{"b":[0,{"__proto__":1}]}}'))).toEqual(['a', 'b', '1']);
    expect(prototypeKeyHolder({ a: { constructor: 1 } })).toBeUndefined();
    expect(prototypeKeyHolder('__proto__')).toBeUndefined();
    const deep = JSON.parse(`${'['.repeat(100_000)}{"__proto__":1}${']'.repeat(100_000)}`) as unknown;
    expect(prototypeKeyHolder(deep)).toHaveLength(100_000);
  });
});
