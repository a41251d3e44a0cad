import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOtelApi } from '../../packages/idem/src/telemetry/otel-api.js';
import { cleanup, ensureBuilt, makeTempDir, REPO_ROOT } from '../helpers/mcp-fixtures.js';

afterAll(cleanup);

// Makes `@opentelemetry/api` impossible to resolve, as when the optional peer is not installed.
const HIDE_API = `
const Module = require('node:module');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === '@opentelemetry/api' || request.startsWith('@opentelemetry/api/')) {
    const error = new Error("Cannot find module '" + request + "'");
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, ...rest);
};
`;

function script(dist: string): string {
  return `
import { createRequire } from 'node:module';
const idem = await import(${JSON.stringify(pathToFileURL(join(dist, 'index.js')).href)});
const testing = await import(${JSON.stringify(pathToFileURL(join(dist, 'testing', 'index.js')).href)});
let hidden = false;
try { createRequire(import.meta.url).resolve('@opentelemetry/api'); } catch { hidden = true; }
const executor = new idem.Executor({ store: testing.memoryStore(), authorize: () => true, logger: idem.silentLogger });
const operation = { name: 'create_thing', version: 1, effect: () => ({ resource_id: 'r1' }) };
const request = { principal: 'p', workspace: 'w', key: 'k1', args: { a: 1 } };
const first = await executor.run(operation, request);
const second = await executor.run(operation, request);
const stop = idem.observeWaitingOperations(testing.memoryStore());
stop();
console.log(JSON.stringify({ hidden, first: first.ok && first.replayed, second: second.ok && second.replayed }));
`;
}

describe('without @opentelemetry/api installed', () => {
  it('loadOtelApi falls back to nothing when the package cannot load', () => {
    expect(
      loadOtelApi(() => {
        throw new Error("Cannot find module '@opentelemetry/api'");
      }),
    ).toBeUndefined();
    expect(loadOtelApi(() => ({}))).toBeUndefined();
  });

  it('the built library loads and answers calls (executed, then replayed)', () => {
    ensureBuilt();
    const dir = makeTempDir('idem-no-otel-');
    writeFileSync(join(dir, 'hide-api.cjs'), HIDE_API);
    writeFileSync(join(dir, 'run.mjs'), script(join(REPO_ROOT, 'packages', 'idem', 'dist')));
    const out = execFileSync(
      process.execPath,
      ['--require', join(dir, 'hide-api.cjs'), join(dir, 'run.mjs')],
      {
        cwd: dir,
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(JSON.parse(out.trim())).toEqual({ hidden: true, first: false, second: true });
  });
});
