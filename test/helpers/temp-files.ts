import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dirs: string[] = [];

/** A path named `name` in a new temporary directory; removeTempFiles() deletes every such directory. */
export function tempFile(name = 'idem.sqlite'): string {
  const dir = mkdtempSync(join(tmpdir(), 'idem-file-'));
  dirs.push(dir);
  return join(dir, name);
}

export function removeTempFiles(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}
