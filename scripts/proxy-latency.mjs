// The latency `idem proxy` adds per call, measured in one run: N calls of server-memory's
// create_entities (each a new entity, so each one is forwarded) straight to the server over stdio,
// then N through `idem proxy --stdio` in front of the same server (each with a new
// idempotency_key), then N retries of those keys (answered from the proxy's store). Prints p50 and
// p99 of each and the differences. Not a test: numbers depend on the machine and its load.
//
// Usage: npm run build && node scripts/proxy-latency.mjs [--n 500] [--db PATH|URL]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import process from 'node:process';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const root = resolve(import.meta.dirname, '..');
const memory = join(root, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const cli = join(root, 'packages/idem-cli/dist/cli/main.js');
const { values } = parseArgs({ options: { n: { type: 'string', default: '500' }, db: { type: 'string' } } });
const n = Number(values.n);
const dir = mkdtempSync(join(tmpdir(), 'idem-proxy-latency-'));

function env(extra) {
  const out = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) out[name] = value;
  return { ...out, ...extra };
}

async function connect(command, args, extra) {
  const client = new Client({ name: 'proxy-latency', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command, args, env: env(extra), stderr: 'ignore' }));
  await client.listTools();
  return client;
}

async function measure(client, label, argsFor) {
  for (let i = 0; i < 20; i += 1)
    await client.callTool({ name: 'create_entities', arguments: argsFor(`warm-${i}`) });
  const times = [];
  for (let i = 0; i < n; i += 1) {
    const t0 = performance.now();
    const result = await client.callTool({ name: 'create_entities', arguments: argsFor(`${label}-${i}`) });
    times.push(performance.now() - t0);
    if (result.isError) throw new Error(`${label}: ${JSON.stringify(result.content)}`);
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { p50: at(0.5), p99: at(0.99) };
}

const out = (line) => process.stdout.write(`${line}\n`);
const entity = (name) => ({ entities: [{ name, entityType: 'bench', observations: [] }] });
const keyed = (name) => ({ idempotency_key: `key-${name}`, ...entity(name) });

try {
  const direct = await connect('node', [memory], { MEMORY_FILE_PATH: join(dir, 'direct.jsonl') });
  const bare = await measure(direct, 'direct', entity);
  await direct.close();

  const db = values.db ?? join(dir, 'proxy.sqlite');
  const proxied = await connect('node', [cli, 'proxy', '--stdio', '--db', db, '--', 'node', memory], {
    MEMORY_FILE_PATH: join(dir, 'proxied.jsonl'),
  });
  const forwarded = await measure(proxied, 'proxied', keyed);
  const replayed = await measure(proxied, 'proxied', keyed);
  await proxied.close();

  const ms = (value) => `${value.toFixed(2)} ms`;
  out(
    `idem proxy latency, ${n} calls of create_entities each (server-memory over stdio; db ${values.db === undefined ? 'SQLite' : 'as given'})`,
  );
  out(`direct                     p50 ${ms(bare.p50)}  p99 ${ms(bare.p99)}`);
  out(`through the proxy (new key) p50 ${ms(forwarded.p50)}  p99 ${ms(forwarded.p99)}`);
  out(`added per call             p50 ${ms(forwarded.p50 - bare.p50)}  p99 ${ms(forwarded.p99 - bare.p99)}`);
  out(`a retry (replayed)          p50 ${ms(replayed.p50)}  p99 ${ms(replayed.p99)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
