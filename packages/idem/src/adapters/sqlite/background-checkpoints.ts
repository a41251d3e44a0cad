import { sqliteEngineOf } from './node-sqlite-database.js';
import type { SqliteDatabase } from './sqlite-database.js';
import { WalCheckpointer } from './wal-checkpointer.js';

/**
 * WAL frames the background checkpointer lets wait before it copies them (16 MiB of 4 KiB pages):
 * few fsyncs of the database file, and a page that many commits rewrote is copied once.
 */
export const BACKGROUND_CHECKPOINT_FRAMES = 4000;

/** The connection's own automatic checkpoint while the background checkpointer runs. */
export const BACKSTOP_AUTOCHECKPOINT = 16_000;

export interface BackgroundCheckpoints {
  /**
   * `true`: the worker does the checkpoints (the connection's own threshold raised above the
   * worker's); `false`: the connection's own automatic checkpoint does them again, at its own
   * threshold, before the WAL is long enough for the worker. No effect once the worker is gone.
   */
  engage(on: boolean): void;
  /** Stops the worker after a last checkpoint and gives the connection its own threshold back. */
  stop(): Promise<void>;
}

/**
 * A worker that checkpoints once `BACKGROUND_CHECKPOINT_FRAMES` frames wait; while `engaged`, the
 * connection's automatic checkpoint is raised above that (unless it was off) until the worker
 * stops, on request or not. None for a database that has no file, is read-only or is not in WAL
 * mode, or when no thread can be started: SQLite's automatic checkpoint then does the work.
 */
export function startBackgroundCheckpoints(
  db: SqliteDatabase,
  engaged: boolean,
): BackgroundCheckpoints | undefined {
  const path = db.name;
  if (path === undefined || path === '' || path === ':memory:' || db.readonly === true) return undefined;
  if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return undefined;
  let worker: WalCheckpointer;
  try {
    worker = WalCheckpointer.start(path, {
      minFrames: BACKGROUND_CHECKPOINT_FRAMES,
      driver: sqliteEngineOf(db),
    });
  } catch {
    return undefined;
  }
  const own = Number(db.pragma('wal_autocheckpoint', { simple: true }));
  let alive = true;
  let raised = false;
  const engage = (on: boolean): void => {
    if (own <= 0 || !db.open || on === raised || (on && !alive)) return;
    db.pragma(`wal_autocheckpoint = ${on ? Math.max(own, BACKSTOP_AUTOCHECKPOINT) : own}`);
    raised = on;
  };
  engage(engaged);
  // A worker that dies must not leave the connection with a WAL 16 times longer than usual.
  worker.onExit(() => {
    engage(false);
    alive = false;
  });
  return {
    engage,
    stop: async () => {
      await worker.stop();
      engage(false);
      alive = false;
    },
  };
}
