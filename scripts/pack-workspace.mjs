#!/usr/bin/env node
// Packs a workspace package as `npm publish` would ship it, without touching the tree:
//
//   node scripts/pack-workspace.mjs <idem|idem-cli> <destination dir>   prints the tarball's path
//   node scripts/pack-workspace.mjs --stage <package dir>               copies the shared files in
//                                                                       (the library's prepack)
//
// The library's tarball carries files that live at the repository root because they serve both
// packages and the repository: README.md, CHANGELOG.md, docs/, examples/, bench/results/ and
// api/surface.txt. `stageSharedFiles` copies them next to the package's package.json, in the same
// layout, so every relative link in them works on the repository and in the tarball alike.
// `packWorkspace` copies the package (package.json, README.md, dist/) into a temporary directory,
// stages there, and runs `npm pack --ignore-scripts` on the copy: the build in dist/ is used as it
// is (a second build would rewrite files running tests read), and tests packing at the same time
// never see each other's staging.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import process from 'node:process';

const REPOSITORY = resolve(import.meta.dirname, '..');

/** The repository-root paths the library ships, as its package.json "files" lists them. */
export const SHARED_FILES = [
  'README.md',
  'CHANGELOG.md',
  'docs',
  'examples',
  'bench/results',
  'api/surface.txt',
];

/** What is never copied from examples/: generated clients, builds and installed dependencies. */
const NOT_SHIPPED = new Set(['node_modules', 'generated', 'dist', '.xmcp']);

/** Copies SHARED_FILES from the repository root into `packageDir` (replacing what is there). */
export function stageSharedFiles(packageDir) {
  for (const path of SHARED_FILES) {
    const target = join(packageDir, path);
    rmSync(target, { recursive: true, force: true });
    cpSync(join(REPOSITORY, path), target, {
      recursive: true,
      filter: (source) => !NOT_SHIPPED.has(basename(source)),
    });
  }
}

/** Removes what `stageSharedFiles` copied into `packageDir` (the library's postpack). */
export function unstageSharedFiles(packageDir) {
  for (const path of SHARED_FILES) rmSync(join(packageDir, path), { recursive: true, force: true });
  for (const dir of ['bench', 'api']) rmSync(join(packageDir, dir), { recursive: true, force: true });
}

/** Packs packages/<name> (built already) into `destination`; returns the tarball's path. */
export function packWorkspace(name, destination) {
  const source = join(REPOSITORY, 'packages', name);
  if (!existsSync(join(source, 'dist'))) throw new Error(`packages/${name}/dist is missing: npm run build`);
  const copy = mkdtempSync(join(tmpdir(), `idem-pack-${name}-`));
  try {
    for (const path of ['package.json', 'README.md', 'dist']) {
      if (existsSync(join(source, path))) cpSync(join(source, path), join(copy, path), { recursive: true });
    }
    if (name === 'idem') stageSharedFiles(copy);
    const packed = execFileSync(
      'npm',
      ['pack', '--ignore-scripts', '--json', '--loglevel=warn', '--pack-destination', resolve(destination)],
      { cwd: copy, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    return join(resolve(destination), JSON.parse(packed)[0].filename);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

if (process.argv[1] === import.meta.filename) {
  const [first, second] = process.argv.slice(2);
  if (first === '--stage' && second !== undefined) stageSharedFiles(resolve(second));
  else if (first === '--unstage' && second !== undefined) unstageSharedFiles(resolve(second));
  else if ((first === 'idem' || first === 'idem-cli') && second !== undefined) {
    process.stdout.write(`${packWorkspace(first, second)}\n`);
  } else {
    process.stderr.write(
      'usage: pack-workspace.mjs <idem|idem-cli> <destination> | --stage|--unstage <package dir>\n',
    );
    process.exitCode = 2;
  }
}
