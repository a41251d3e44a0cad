import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { packWorkspace } from '../../scripts/pack-workspace.mjs';
import { REPO_ROOT, ensureBuilt } from '../helpers/mcp-fixtures.js';
import { deadLinks, headingAnchors, markdownLinks, type LinkWorld } from '../helpers/markdown-links.js';

/**
 * The README and the guides in docs/ are read on the repository and, after `npm install idem`, in
 * node_modules/idem: every relative link must resolve in both, so it must point at a file that
 * exists here and that the library's tarball ships (packages/idem/package.json "files", with the
 * repository files scripts/pack-workspace.mjs stages into it), and a #fragment at a heading.
 */
const DOCS = [
  'README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The files of the library's tarball as scripts/pack-workspace.mjs packs it (paths without `package/`). */
function packedFiles(): Set<string> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-links-'));
  try {
    const tarball = packWorkspace('idem', dir);
    const listed = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
    return new Set(
      listed
        .split('\n')
        .filter((line) => line.startsWith('package/'))
        .map((line) => line.slice('package/'.length)),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let world: LinkWorld;
beforeAll(() => {
  ensureBuilt(); // the pack copies packages/idem/dist
  world = {
    exists: (path) => existsSync(join(REPO_ROOT, path)),
    packed: packedFiles(),
    read: (path) => readFileSync(join(REPO_ROOT, path), 'utf8'),
  };
}, 60_000);

describe('relative links in README.md and docs/', () => {
  it.each(DOCS)('%s: every relative link resolves on the repository and in the tarball', (file) => {
    expect(deadLinks(file, world.read(file), world)).toEqual([]);
  });

  it('the README links every guide in docs/', () => {
    const targets = new Set(markdownLinks(world.read('README.md')).map((l) => l.target.split('#')[0]));
    for (const guide of DOCS.filter((f) => f !== 'README.md')) expect(targets).toContain(guide);
  });

  it('ships README.md and every guide', () => {
    for (const file of DOCS) expect(world.packed).toContain(file);
  });
});

describe('the link check itself', () => {
  const fake: LinkWorld = {
    exists: (path) => ['README.md', 'docs/a.md', 'src/x.ts', 'examples', 'examples/e.ts'].includes(path),
    packed: new Set(['README.md', 'docs/a.md', 'examples/e.ts']),
    read: (path) => (path === 'docs/a.md' ? '# A\n\n## Some `code` here\n' : '# R\n'),
  };

  it('accepts links that resolve, with their anchors, and ignores URLs and code', () => {
    const text = [
      '[a](docs/a.md#some-code-here) [dir](examples) ![e](examples/e.ts) [web](https://example.com/x)',
      '`[not](a-link.md)`',
      '```md',
      '[not a link either](gone.md)',
      '```',
    ].join('\n');
    expect(deadLinks('README.md', text, fake)).toEqual([]);
    expect(deadLinks('docs/a.md', '[up](../README.md) [self](#a)', fake)).toEqual([]);
  });

  it('names a missing file, an unshipped one, a missing heading and a path outside', () => {
    const text = '[gone](docs/gone.md)\n[src](src/x.ts) [h](docs/a.md#nope) [out](../x.md)';
    expect(deadLinks('README.md', text, fake)).toEqual([
      'README.md:1 → docs/gone.md: docs/gone.md does not exist',
      'README.md:2 → src/x.ts: src/x.ts is not in the packed tarball (package.json "files")',
      'README.md:2 → docs/a.md#nope: docs/a.md has no heading #nope',
      'README.md:2 → ../x.md: points outside the package',
    ]);
  });

  it('numbers repeated headings as GitHub does', () => {
    expect([...headingAnchors('# Logs\n## Logs\n## What the install’s warnings mean\n')]).toEqual([
      'logs',
      'logs-1',
      'what-the-installs-warnings-mean',
    ]);
  });
});
