// An ESLint plugin with one rule, `rooms`: which folders of src/ may import which. The library (every
// folder of src/ but the applications, and src/index.ts) never imports an application; an
// application imports another only where APPLICATION_IMPORTS allows it (the CLI runs the reference
// server and the demo provider). Relative specifiers are resolved against the importing file, so
// the rule sees `../server/x.js` and `../../cli/y.js` alike and nothing else.
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';

/** The applications under src/, and which other applications each may import. */
export const APPLICATION_IMPORTS = {
  cli: ['server', 'provider'],
  server: [],
  provider: [],
};

/** The folder of src/ a path belongs to ('index.ts' for src/index.ts), or undefined outside src/. */
function roomOf(path, cwd) {
  const parts = relative(cwd, path).split(sep);
  if (parts[0] !== 'src' || parts.length < 2) return undefined;
  return parts[1];
}

function isApplication(room) {
  return Object.hasOwn(APPLICATION_IMPORTS, room);
}

const rooms = {
  meta: {
    type: 'problem',
    docs: { description: 'The library never imports the applications (src/server, src/provider, src/cli).' },
    schema: [],
    messages: {
      library:
        'src/{{from}} is library code and must not import the application src/{{to}}: move what both need into the library.',
      application: 'The application src/{{from}} must not import the application src/{{to}}.',
    },
  },
  create(context) {
    const filename = context.filename;
    const cwd = context.cwd;
    const from = roomOf(filename, cwd);
    if (from === undefined) return {};
    const check = (source) => {
      if (source === null || source === undefined || source.type !== 'Literal') return;
      const specifier = source.value;
      if (typeof specifier !== 'string' || !specifier.startsWith('.')) return;
      const target = resolve(dirname(filename), specifier);
      if (!isAbsolute(target)) return;
      const to = roomOf(target, cwd);
      if (to === undefined || to === from || !isApplication(to)) return;
      if (!isApplication(from)) {
        context.report({ node: source, messageId: 'library', data: { from, to } });
      } else if (!APPLICATION_IMPORTS[from].includes(to)) {
        context.report({ node: source, messageId: 'application', data: { from, to } });
      }
    };
    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
    };
  },
};

export default { meta: { name: 'idem-rooms' }, rules: { rooms } };
