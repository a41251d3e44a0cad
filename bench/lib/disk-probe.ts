import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The disk as the synchronous=FULL rows find it: the median time to overwrite one 4 KiB page of a
 * small file in `dir` and fdatasync it, in µs. A FULL COMMIT pays about one such flush, and this
 * machine's flush time moves by several times from one day to the next, so each report records it
 * before and after the suites: it says which ratios a run's disk favoured.
 */
export function probeFsyncUs(dir: string, samples = 200): number {
  const path = join(dir, 'fsync-probe.bin');
  const fd = openSync(path, 'w+');
  try {
    const page = Buffer.alloc(4096, 1);
    const pages = 16;
    for (let i = 0; i < pages; i += 1) writeSync(fd, page, 0, page.length, i * page.length);
    fdatasyncSync(fd);
    const times: number[] = [];
    for (let i = 0; i < samples; i += 1) {
      const start = performance.now();
      writeSync(fd, page, 0, page.length, (i % pages) * page.length);
      fdatasyncSync(fd);
      times.push((performance.now() - start) * 1000);
    }
    times.sort((a, b) => a - b);
    return Math.round(times[Math.floor(times.length / 2)] ?? 0);
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
}
