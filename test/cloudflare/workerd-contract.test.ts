import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeContract } from '../../packages/idem/src/testing/index.js';
import { bundleForWorkerd } from '../../scripts/bundle-cloudflare-example.mjs';
import { REPO_ROOT, cleanup, ensureBuilt, makeTempDir } from '../helpers/mcp-fixtures.js';
import { startWorker, type RunningWorker } from './workerd-fixtures.js';

/*
 * The exported store contract inside workerd (miniflare, offline): test/cloudflare/contract-worker.ts,
 * bundled as a user's worker is (`idem` from the built package), runs each case in a fresh Durable
 * Object on DurableObjectStore; this file asks for each case by its index and reports it here.
 */

// The names only (a case opens its store when it runs, never here): the suite's order is the worker's.
const CASES = storeContract({
  name: 'durable-object',
  open: () => Promise.reject(new Error('not opened here')),
}).map((c) => c.name);

let worker: RunningWorker;

beforeAll(async () => {
  ensureBuilt();
  const dir = makeTempDir('idem-workerd-');
  const script = join(dir, 'contract-worker.mjs');
  await bundleForWorkerd(join(REPO_ROOT, 'test', 'cloudflare', 'contract-worker.ts'), script);
  worker = await startWorker(script, join(REPO_ROOT, 'examples', 'cloudflare-worker.json'), {
    CONTRACT: 'ContractObject',
  });
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await cleanup();
});

describe('port contract in workerd: durable-object', () => {
  CASES.forEach((name, index) => {
    it(name, async () => {
      const response = await fetch(`${worker.url}run?case=${index}`);
      const answer = (await response.json()) as { ok: boolean; name?: string; error?: string };
      expect(answer.name).toBe(name);
      expect(answer.error ?? '').toBe('');
      expect(answer.ok).toBe(true);
    });
  });
});
