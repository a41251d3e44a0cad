import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A small tmpfs mounted on a temporary directory, for storage faults that need a real file system. */
export interface Tmpfs {
  readonly dir: string;
  /** Writes a filler file until the file system answers ENOSPC; returns its path. */
  fill(name?: string): string;
  /** Deletes a filler file: the space is free again. */
  free(filler: string): void;
  /** Remounts read-only (every file on it must be closed for writing) or read-write. */
  remount(mode: 'ro' | 'rw'): void;
  /** Unmounts and removes the directory. Every file on it must be closed. */
  unmount(): void;
}

/**
 * Mounts a tmpfs of `sizeKiB` on a new temporary directory. Where mounting is not permitted (not
 * root, no CAP_SYS_ADMIN) it returns the reason instead; in CI (process.env.CI set) it throws,
 * because there these tests must run.
 */
export function mountTmpfs(sizeKiB: number): Tmpfs | { readonly reason: string } {
  const dir = mkdtempSync(join(tmpdir(), 'idem-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKiB}k`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    const reason = `mount -t tmpfs failed: ${stderr || (error as Error).message}`;
    if (process.env.CI) throw new Error(`CI: a tmpfs is needed for the storage fault tests; ${reason}`);
    return { reason };
  }
  return {
    dir,
    fill(name = 'filler') {
      const path = join(dir, name);
      const fd = openSync(path, 'w');
      const chunk = Buffer.alloc(4096, 0x5a);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as { code?: string }).code !== 'ENOSPC') throw error;
      } finally {
        closeSync(fd);
      }
      return path;
    },
    free(filler) {
      unlinkSync(filler);
    },
    remount(mode) {
      execFileSync('mount', ['-o', `remount,${mode}`, dir], { stdio: 'pipe' });
    },
    unmount() {
      execFileSync('umount', [dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Prints why a suite that needs a tmpfs is left out on this machine. */
export function reportNoTmpfs(suite: string, reason: string): void {
  process.stderr.write(`\n[idem tests] ${suite} is SKIPPED on this machine: ${reason}\n`);
}
