// An ESLint plugin with one rule, `rooms`: what the source of each workspace package may import by
// path. A relative specifier is resolved against the importing file and must stay inside the
// package's own src/: the library (packages/idem) never reaches into the applications, and the
// applications (packages/idem-cli) import the library by its name, `idem` or `idem/<entry>`, as
// any user's code does, so they use only what the library exports. Inside packages/idem-cli, one
// application imports another only where APPLICATION_IMPORTS allows it (the CLI runs the reference
// server and the demo provider; the operator console and `idem ops` share the operator actions; the
// proxy uses the HTTP edge). A folder the table does not name may import no other application.
import { dirname, relative, resolve, sep } from 'node:path';

/** The applications in packages/idem-cli/src, and which other applications each may import. */
export const APPLICATION_IMPORTS = {
  cli: ['server', 'provider', 'ops', 'console', 'proxy'],
  server: [],
  proxy: ['server'],
  provider: [],
  ops: ['server'],
  console: ['server', 'ops'],
};

/** `{ pkg, room }` of a path under packages/<pkg>/src/<room>, or undefined elsewhere. */
function placeOf(path, cwd) {
  const parts = relative(cwd, path).split(sep);
  if (parts[0] !== 'packages' || parts[2] !== 'src' || parts.length < 4) return undefined;
  return { pkg: parts[1], room: parts[3] };
}

const rooms = {
  meta: {
    type: 'problem',
    docs: {
      description: 'Each package imports only its own src/ by path; applications import idem by name.',
    },
    schema: [],
    messages: {
      outside:
        'packages/{{pkg}}/src must not import {{target}} by path: import the library as `idem` or `idem/<entry>`, and never an application from the library.',
      application: 'The application src/{{from}} must not import the application src/{{to}}.',
      applications: 'The library (packages/idem) must not import the applications ({{specifier}}).',
    },
  },
  create(context) {
    const filename = context.filename;
    const cwd = context.cwd;
    const from = placeOf(filename, cwd);
    if (from === undefined) return {};
    const check = (source) => {
      if (source === null || source === undefined || source.type !== 'Literal') return;
      const specifier = source.value;
      if (typeof specifier !== 'string') return;
      if (from.pkg === 'idem' && /^idem-cli(\/|$)/.test(specifier)) {
        context.report({ node: source, messageId: 'applications', data: { specifier } });
        return;
      }
      if (!specifier.startsWith('.')) return;
      const target = resolve(dirname(filename), specifier);
      const to = placeOf(target, cwd);
      if (to === undefined || to.pkg !== from.pkg) {
        context.report({
          node: source,
          messageId: 'outside',
          data: { pkg: from.pkg, target: relative(cwd, target).split(sep).join('/') },
        });
        return;
      }
      if (from.pkg !== 'idem-cli' || to.room === from.room) return;
      // A room the table does not name imports nothing of another room, and is imported by none.
      if (!(APPLICATION_IMPORTS[from.room] ?? []).includes(to.room)) {
        context.report({ node: source, messageId: 'application', data: { from: from.room, to: to.room } });
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
