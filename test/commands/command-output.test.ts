import { createHash, randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OutputWriter, readOutput } from '../../packages/idem/src/commands/command-output.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

afterAll(cleanup);

const dir = makeTempDir('idem-cmdout-');
let n = 0;
const file = () => join(dir, `out-${(n += 1)}.out`);

/** Reads the whole file from offset 0 with `limit`, following next_offset. */
function readAll(path: string, limit: number): { text: string; skipped: number; reads: number } {
  let offset = 0;
  let text = '';
  let skipped = 0;
  let reads = 0;
  for (;;) {
    const got = readOutput(path, offset, limit);
    if (got === undefined) throw new Error('no file');
    reads += 1;
    skipped += got.skippedBytes;
    text += got.text;
    if (got.nextOffset === offset && got.skippedBytes === 0) return { text, skipped, reads };
    offset = got.nextOffset;
  }
}

describe('OutputWriter / readOutput', () => {
  it('small output: everything kept; sha256 and byte count over all of it; offsets continue', () => {
    const path = file();
    const writer = new OutputWriter(path, 4096);
    writer.append(Buffer.from('line 1\nline 2\n'));
    writer.append(Buffer.from('line 3'));
    const summary = writer.finish();
    const all = 'line 1\nline 2\nline 3';
    expect(summary).toEqual({
      bytes: all.length,
      sha256: createHash('sha256').update(all).digest('hex'),
      keptBytes: all.length,
      lastLines: ['line 1', 'line 2', 'line 3'],
    });
    expect(readOutput(path, 0, 5)).toEqual({
      offset: 0,
      nextOffset: 5,
      text: 'line ',
      totalBytes: 20,
      skippedBytes: 0,
    });
    expect(readOutput(path, 5, 100)).toMatchObject({ offset: 5, nextOffset: 20, text: '1\nline 2\nline 3' });
    expect(readOutput(path, 20, 100)).toMatchObject({ offset: 20, nextOffset: 20, text: '' });
    expect(readOutput(path, 999, 100)).toMatchObject({ offset: 20, nextOffset: 20, text: '' });
    expect(readOutput(join(dir, 'missing.out'), 0, 10)).toBeUndefined();
  });

  it('large output: the file stays bounded; the head and the tail are kept, the middle skipped', () => {
    const path = file();
    const limit = 4096; // head 1024, tail 3072
    const writer = new OutputWriter(path, limit);
    const lines: string[] = [];
    for (let i = 0; i < 2000; i += 1) lines.push(`line ${String(i).padStart(5, '0')}`);
    const all = `${lines.join('\n')}\n`;
    const bytes = Buffer.from(all);
    // Chunks of assorted sizes, one larger than the whole ring.
    const sizes = [7, 1000, 50, 5000, 13, 333];
    let at = 0;
    for (let i = 0; at < bytes.length; i += 1) {
      const size = sizes[i % sizes.length] as number;
      writer.append(bytes.subarray(at, at + size));
      at += size;
    }
    const summary = writer.finish();
    expect(summary.bytes).toBe(bytes.length);
    expect(summary.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(summary.keptBytes).toBe(limit);
    expect(summary.lastLines).toEqual(lines.slice(-20));
    expect(statSync(path).size).toBeLessThanOrEqual(limit + 32);

    const read = readAll(path, 700);
    expect(read.skipped).toBe(bytes.length - limit);
    expect(read.text).toBe(all.slice(0, 1024) + all.slice(bytes.length - 3072));
    // An offset in the dropped middle starts at the first kept byte after it.
    const mid = readOutput(path, 2000, 100);
    expect(mid).toMatchObject({ offset: bytes.length - 3072, skippedBytes: bytes.length - 3072 - 2000 });
    expect(mid?.text).toBe(all.slice(bytes.length - 3072, bytes.length - 2972));
  });

  it('a read never ends inside a UTF-8 character', () => {
    const path = file();
    const writer = new OutputWriter(path, 4096);
    writer.append(Buffer.from('aé€😀b'));
    writer.finish();
    // 'a' (1) 'é' (2) '€' (3) '😀' (4) 'b' (1)
    expect(readOutput(path, 0, 2)).toMatchObject({ text: 'a', nextOffset: 1 });
    expect(readOutput(path, 1, 4)).toMatchObject({ text: 'é', nextOffset: 3 });
    expect(readOutput(path, 3, 6)).toMatchObject({ text: '€', nextOffset: 6 });
    expect(readOutput(path, 6, 5)).toMatchObject({ text: '😀b', nextOffset: 11 });
  });

  it('binary output: hashed and counted exactly', () => {
    const path = file();
    const writer = new OutputWriter(path, 8192);
    const data = randomBytes(20_000);
    for (let i = 0; i < data.length; i += 997) writer.append(data.subarray(i, i + 997));
    const summary = writer.finish();
    expect(summary.bytes).toBe(20_000);
    expect(summary.sha256).toBe(createHash('sha256').update(data).digest('hex'));
  });
});
