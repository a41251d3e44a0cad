/**
 * The names of the tools registered on each server through Idem's `registerIdemTool` (either
 * SDK), so that a durable tool can tell whether the status tool its results name exists.
 * Weakly held: a server that is dropped takes its names with it.
 */
const namesByServer = new WeakMap<object, Set<string>>();

/** Notes that `name` was registered on `server`. */
export function noteRegisteredTool(server: object, name: string): void {
  let names = namesByServer.get(server);
  if (names === undefined) {
    names = new Set();
    namesByServer.set(server, names);
  }
  names.add(name);
}

/** True once a tool named `name` was registered on `server` through `registerIdemTool`. */
export function hasRegisteredTool(server: object, name: string): boolean {
  return namesByServer.get(server)?.has(name) ?? false;
}
