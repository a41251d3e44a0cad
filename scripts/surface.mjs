#!/usr/bin/env node
// The public surface of the package: for every entry in package.json "exports", the names it
// exports, each with its kind. Reads the TypeScript source each entry's declarations are built from
// (./dist/x/index.d.ts <- src/x/index.ts) with the compiler API, so it needs no build, a type-only
// export is recorded as a type, and a re-export under another name as the name a user imports.
//
//   npm run surface                    writes api/surface.txt
//   node scripts/surface.mjs --check   exits 1, printing the difference, when api/surface.txt is not
//                                      what the source exports; and when an exported function,
//                                      class or constant (outside the store adapters and ORM
//                                      integrations: any name) has no doc comment
//   --root <dir>, --record <file>      another package directory, another record (for tests)
//
// The record is one line per name, grouped by entry: `<kind> <name>`, kind one of function, class,
// const, enum, namespace (values) or interface, type (types).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import ts from 'typescript';

/** `--name value` from the command line, or undefined. */
function option(name) {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

// The library is the workspace package packages/idem; its record is api/surface.txt at the
// repository root (the pack script copies it into the tarball). --root and --record let a test
// point the script at a fixture package or another record.
const repository = join(import.meta.dirname, '..');
const root = resolve(option('--root') ?? join(repository, 'packages', 'idem'));
const RECORD = resolve(
  option('--record') ?? join(option('--root') === undefined ? repository : root, 'api', 'surface.txt'),
);

/** Every entry's exported names with kind and whether its declaration has a doc comment. */
export function readSurface() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const entries = Object.entries(pkg.exports).map(([subpath, target]) => ({
    subpath,
    file: sourceOf(typeof target === 'string' ? target : target.types),
  }));
  const program = ts.createProgram(
    entries.map((entry) => entry.file),
    {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
    },
  );
  const checker = program.getTypeChecker();
  return entries.map(({ subpath, file }) => {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`${subpath}: ${file} not found`);
    const moduleSymbol = checker.getSymbolAtLocation(source);
    const names = (moduleSymbol === undefined ? [] : checker.getExportsOfModule(moduleSymbol)).map(
      (symbol) => {
        const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        const kind = isTypeOnly(checker, symbol) ? typeKindOf(target) : kindOf(target);
        const documented = (target.getDeclarations() ?? []).some(hasDocComment);
        return { name: symbol.getName(), kind, documented };
      },
    );
    names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { subpath, names };
  });
}

/** The source file an entry's declarations are built from: ./dist/a/b.d.ts is src/a/b.ts. */
function sourceOf(declarations) {
  const match = /^\.\/dist\/(.+)\.d\.ts$/.exec(declarations);
  if (match === null) throw new Error(`exports: ${declarations} is not a ./dist/**/*.d.ts file`);
  return join(root, 'src', `${match[1]}.ts`);
}

/** Whether a re-export chain passes through `export type` / `import type`: no value at run time. */
function isTypeOnly(checker, symbol) {
  for (let at = symbol; at !== undefined && at.flags & ts.SymbolFlags.Alias;) {
    for (const declaration of at.getDeclarations() ?? []) {
      if (ts.isTypeOnlyImportOrExportDeclaration?.(declaration)) return true;
      if (
        ts.isExportSpecifier(declaration) &&
        (declaration.isTypeOnly || declaration.parent.parent.isTypeOnly)
      ) {
        return true;
      }
    }
    at = checker.getImmediateAliasedSymbol(at);
  }
  return false;
}

/** The kind of a symbol exported as a type only: a class or an interface is an interface. */
function typeKindOf(symbol) {
  return symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface) ? 'interface' : 'type';
}

/** The kind of an exported symbol as the record names it; a value kind wins over a type kind. */
function kindOf(symbol) {
  const flags = symbol.flags;
  if (flags & ts.SymbolFlags.Class) return 'class';
  if (flags & ts.SymbolFlags.Function) return 'function';
  if (flags & ts.SymbolFlags.Enum) return 'enum';
  if (flags & ts.SymbolFlags.Variable) return 'const';
  if (flags & ts.SymbolFlags.ValueModule) return 'namespace';
  if (flags & ts.SymbolFlags.Interface) return 'interface';
  if (flags & ts.SymbolFlags.TypeAlias) return 'type';
  return 'type';
}

/** Whether a declaration (or, for a constant, its statement) carries a `/** ... *\/` comment. */
function hasDocComment(declaration) {
  let node = declaration;
  if (ts.isVariableDeclaration(node)) node = node.parent?.parent ?? node; // VariableStatement
  const jsDoc = node.jsDoc ?? ts.getJSDocCommentsAndTags(node);
  return jsDoc.some((doc) => ts.isJSDoc(doc) && (doc.comment !== undefined || (doc.tags?.length ?? 0) > 0));
}

const VALUE_KINDS = new Set(['function', 'class', 'const', 'enum', 'namespace']);

/** The record's text: a header, then per entry its counts and one line per name. */
export function formatSurface(surface) {
  const lines = [
    '# The public surface of idem: every package.json "exports" entry and the names it exports.',
    '# Generated by `npm run surface` (scripts/surface.mjs) from dist/**/*.d.ts; do not edit by hand.',
    '# A change here is a change to what users can import: review it like an API change.',
  ];
  for (const { subpath, names } of surface) {
    const values = names.filter((n) => VALUE_KINDS.has(n.kind)).length;
    lines.push(
      '',
      `## ${subpath === '.' ? 'idem' : `idem/${subpath.slice(2)}`} (${names.length} names, ${values} values)`,
    );
    for (const { name, kind } of names) lines.push(`${kind} ${name}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The record's name lines by section (`## idem/x ...` up to its first space). */
function sectionLines(text) {
  const lines = new Set();
  let section = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('## ')) section = line.slice(3).split(' ')[0];
    else if (line !== '' && !line.startsWith('#')) lines.add(`${section}: ${line}`);
  }
  return lines;
}

/**
 * What changed between two records, one line per name: `- idem: function x` where the recorded
 * surface had it and the source no longer does, `+ ...` for a name the source added.
 */
export function diffSurface(recorded, current) {
  const before = sectionLines(recorded);
  const after = sectionLines(current);
  return [
    ...[...before].filter((line) => !after.has(line)).map((line) => `- ${line}`),
    ...[...after].filter((line) => !before.has(line)).map((line) => `+ ${line}`),
  ];
}

/**
 * Entries where the rule covers the values (functions, classes, constants) only, until their option
 * types are documented too; in every other entry each name, types too, carries a doc comment.
 */
const VALUES_ONLY = new Set(['./sqlite', './postgres', './kysely', './drizzle', './prisma']);

/** Exported names without a doc comment that the rule requires one for. */
export function undocumented(surface) {
  return surface.flatMap(({ subpath, names }) =>
    names
      .filter((n) => (!VALUES_ONLY.has(subpath) || VALUE_KINDS.has(n.kind)) && !n.documented)
      .map((n) => `${subpath === '.' ? 'idem' : `idem/${subpath.slice(2)}`}: ${n.kind} ${n.name}`),
  );
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const surface = readSurface();
  const text = formatSurface(surface);
  const missing = undocumented(surface);
  if (process.argv.includes('--check')) {
    let failed = false;
    let recorded = '';
    try {
      recorded = readFileSync(RECORD, 'utf8');
    } catch {
      // no record yet: every line is new
    }
    if (recorded !== text) {
      process.stderr.write(
        `The public surface changed: run npm run surface and commit api/surface.txt.\n${
          diffSurface(recorded, text).join('\n') || '(only the counts or the header differ)'
        }\n`,
      );
      failed = true;
    }
    if (missing.length > 0) {
      process.stderr.write(`Exported without a doc comment:\n${missing.map((m) => `  ${m}`).join('\n')}\n`);
      failed = true;
    }
    process.exitCode = failed ? 1 : 0;
  } else {
    mkdirSync(dirname(RECORD), { recursive: true });
    writeFileSync(RECORD, text);
    process.stdout.write(`wrote ${RECORD}\n`);
    if (missing.length > 0) {
      process.stderr.write(`Exported without a doc comment:\n${missing.map((m) => `  ${m}`).join('\n')}\n`);
      process.exitCode = 1;
    }
  }
}
