/** The repository-root paths the library ships (README.md, CHANGELOG.md, docs, examples, ...). */
export declare const SHARED_FILES: readonly string[];
/** Copies SHARED_FILES from the repository root into `packageDir` (replacing what is there). */
export declare function stageSharedFiles(packageDir: string): void;
/** Removes what `stageSharedFiles` copied into `packageDir`. */
export declare function unstageSharedFiles(packageDir: string): void;
/** Packs packages/<name> (built already) into `destination`; returns the tarball's path. */
export declare function packWorkspace(name: 'idem' | 'idem-cli', destination: string): string;
