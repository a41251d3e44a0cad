// Runs a bundled worker in workerd through miniflare (it needs Node 22 or later; tests start this
// file with a registry Node, scripts/node-line.mjs), its Durable Object classes on SQLite storage,
// on 127.0.0.1 at a free port. Prints one JSON line `{"url": ...}` once it serves, and stops when
// its stdin closes or on SIGTERM.
//
//   node serve-workerd.mjs WORKER.mjs CONFIG.json '{"IDEM":"IdemObject"}'
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import process from 'node:process';
import { Miniflare } from 'miniflare';

const [scriptPath, configPath, bindingsJson] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configPath, 'utf8'));
const bindings = JSON.parse(bindingsJson);
const mf = new Miniflare({
  modules: true,
  scriptPath: resolve(scriptPath),
  modulesRoot: dirname(resolve(scriptPath)),
  compatibilityDate: config.compatibilityDate,
  compatibilityFlags: config.compatibilityFlags,
  durableObjects: Object.fromEntries(
    Object.entries(bindings).map(([binding, className]) => [binding, { className, useSQLite: true }]),
  ),
  host: '127.0.0.1',
  port: 0,
});
const url = await mf.ready;
process.stdout.write(`${JSON.stringify({ url: url.href })}\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await mf.dispose();
  process.exit(0);
};
process.stdin.on('end', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
