import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const PACKAGES = fileURLToPath(new URL('../../packages', import.meta.url));

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** What each file imports among `files`: relative specifiers only, type-only imports included. */
function importGraph(files: string[], read: (path: string) => string): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const imported = ts.preProcessFile(read(file), true, true).importedFiles.map((i) => i.fileName);
    const targets = imported
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => resolve(dirname(file), spec))
      .map((path) => (path.endsWith('.js') ? `${path.slice(0, -3)}.ts` : join(path, 'index.ts')))
      .filter((path) => known.has(path));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('import cycles', () => {
  it('finds a cycle through a type-only import, and none in a chain', () => {
    const files: Record<string, string> = {
      '/p/a.ts': "import type { B } from './b.js';\nexport type A = B;",
      '/p/b.ts': "import { c } from './c/index.js';\nexport type B = string;",
      '/p/c/index.ts': "export { a } from '../a.js';\nexport const c = 1;",
      '/p/d.ts': "import { c } from './c/index.js';",
    };
    const graph = importGraph(Object.keys(files), (path) => files[path]!);
    expect(cycles(graph)).toEqual([['/p/a.ts', '/p/b.ts', '/p/c/index.ts']]);
    delete files['/p/c/index.ts'];
    expect(cycles(importGraph(Object.keys(files), (path) => files[path]!))).toEqual([]);
  });

  it.each([
    ['idem', 100, 300],
    ['idem-cli', 40, 100],
  ])(
    'packages/%s/src has none (type-only imports count: they are a design cycle all the same)',
    (pkg, minFiles, minEdges) => {
      const src = join(PACKAGES, pkg, 'src');
      const files = tsFiles(src);
      expect(files.length).toBeGreaterThan(minFiles);
      expect(files.every((file) => existsSync(file))).toBe(true);
      const graph = importGraph(files, (path) => readFileSync(path, 'utf8'));
      expect([...graph.values()].flat().length).toBeGreaterThan(minEdges);
      const found = cycles(graph).map((component) => component.map((file) => relative(src, file)));
      expect(found).toEqual([]);
    },
  );
});
