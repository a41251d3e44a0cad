// Bundles examples/cloudflare-worker.ts into the single ES module dist-examples/cloudflare-worker.mjs
// that workerd runs (with examples/cloudflare-worker.json's compatibility date and flags): `idem`
// from the built package in node_modules, as a user's bundler (wrangler's esbuild) takes it; the
// `cloudflare:` and `node:` built-ins left to the runtime (nodejs_compat).
//
//   node scripts/bundle-cloudflare-example.mjs [entry.ts] [out.mjs]
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Bundles `entry` for workerd into `outfile` (one ES module). */
export async function bundleForWorkerd(entry, outfile) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    // Package exports as wrangler resolves them for workerd.
    conditions: ['workerd', 'worker', 'browser', 'import', 'default'],
    mainFields: ['module', 'main'],
    external: ['cloudflare:*', 'node:*'],
    logLevel: 'warning',
    absWorkingDir: ROOT,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const entry = process.argv[2] ?? join(ROOT, 'examples', 'cloudflare-worker.ts');
  const out = process.argv[3] ?? join(ROOT, 'dist-examples', 'cloudflare-worker.mjs');
  await bundleForWorkerd(entry, out);
  process.stdout.write(`bundled ${out}\n`);
}
