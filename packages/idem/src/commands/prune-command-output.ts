import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { IdemError } from '../core/errors.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { SignalOption } from '../ports/maybe-async.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';

/** What one pass over an output directory removed. */
export interface PruneResult {
  /** Operations whose files were removed (each had one or more). */
  readonly operations: number;
  /** Files removed: `.out`, `.json`, and a `.json.tmp` a crash left behind. */
  readonly files: number;
  /** Files of gone operations that could not be removed; the next pass tries again. */
  readonly failed: number;
  /** The errno code of the first failure (`EACCES`, …), when `failed` is not 0. */
  readonly failureCode?: string;
}

/**
 * The files a run leaves (see `outputPaths`, and `writeJsonFile`'s temporary file), for ids made by
 * `newOperationId` (`op_` and 32 hex digits). Any other name is not Idem's and is never touched.
 */
const OUTPUT_FILE = /^(op_[0-9a-f]{32})\.(out|json|json\.tmp)$/;

/**
 * Deletes the output files in `dir` of every operation the ledger no longer has: `ledger.get`
 * answers undefined once the sweep turned the final record into a tombstone (on every store), so
 * the output lives exactly as long as the receipt. A record the ledger still holds, in any state
 * (accepted, running, outcome_unknown, final, also past `expiresAt` but not yet swept), keeps its
 * files: `read_command_output` can still find it, so the files are still readable.
 *
 * An unknown id counts as gone. That is safe because a worker creates the files only after it
 * claimed the operation, which was committed first, and an id is never reused: a file never exists
 * before its record does. What can still happen: a worker that lost its lease and was not stopped
 * yet writes the side file again after this pass removed it; the next pass removes it. The
 * directory must hold the output of this ledger's operations only (a directory shared with servers
 * on another database would lose their files).
 *
 * A missing directory is nothing to prune. Aborting `signal` stops between files and rejects with
 * its reason; what was removed until then stays removed.
 */
export async function pruneCommandOutput(
  dir: string,
  ledger: Pick<OperationsLedger, 'get'>,
  options: SignalOption = {},
): Promise<PruneResult> {
  const { signal } = options;
  signal?.throwIfAborted();
  const files = await outputFiles(dir);
  let operations = 0;
  let removed = 0;
  let failed = 0;
  let failureCode: string | undefined;
  for (const [operationId, names] of files) {
    signal?.throwIfAborted();
    let record: OperationRecord | undefined;
    try {
      record = await ledger.get(operationId, options);
    } catch (error) {
      signal?.throwIfAborted();
      throw error;
    }
    if (record !== undefined) continue;
    let any = false;
    for (const name of names) {
      signal?.throwIfAborted();
      try {
        await unlink(join(dir, name));
        removed += 1;
        any = true;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'error';
        // Gone already: another server pruning the same directory, or the worker's rename.
        if (code === 'ENOENT') continue;
        failed += 1;
        failureCode ??= code;
      }
    }
    if (any) operations += 1;
  }
  return { operations, files: removed, failed, ...(failureCode === undefined ? {} : { failureCode }) };
}

/** The output files in `dir` by operation id, oldest id first; `.out` before the side files. */
async function outputFiles(dir: string): Promise<Map<string, string[]>> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw new IdemError('unavailable', 'the command output directory cannot be listed', {
      retryable: true,
      retryAfterMs: 1000,
      cause: error,
    });
  }
  const byId = new Map<string, string[]>();
  for (const entry of entries) {
    // Idem writes regular files only; a link or a directory with such a name is someone else's.
    if (!entry.isFile()) continue;
    const match = OUTPUT_FILE.exec(entry.name);
    if (match === null) continue;
    const id = match[1] as string;
    const names = byId.get(id) ?? [];
    names.push(entry.name);
    byId.set(id, names);
  }
  const order = (name: string) => (name.endsWith('.out') ? 0 : 1);
  const sorted = [...byId.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [, names] of sorted) names.sort((a, b) => order(a) - order(b) || (a < b ? -1 : 1));
  return new Map(sorted);
}
