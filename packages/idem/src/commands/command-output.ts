import { createHash, type Hash } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { IdemError } from '../core/errors.js';

/** Default bound of one command's kept output: 1 MiB (a quarter head, the rest tail). */
export const DEFAULT_OUTPUT_LIMIT_BYTES = 1024 * 1024;
/** The least output limit: a few lines of head and tail. */
export const MIN_OUTPUT_LIMIT_BYTES = 4096;

const MAGIC = Buffer.from('IDEMOUT1');
const HEADER_BYTES = 32;
/** How much of the end of the output is kept in memory for `last_lines`. */
const LAST_BYTES = 8192;
const LAST_LINES = 20;

/** What the output of a finished run amounts to (the completion evidence about output). */
export interface OutputSummary {
  /** Every byte the process wrote (stdout and stderr), kept or not. */
  readonly bytes: number;
  /** SHA-256 (hex) of every byte the process wrote, in the order they arrived. */
  readonly sha256: string;
  /** Bytes kept in the file (the head and the tail). */
  readonly keptBytes: number;
  /** The last lines (at most 20, from the last 8 KiB), UTF-8 decoded. */
  readonly lastLines: string[];
}

/** The output file of one operation (`<dir>/<operation id>.out`) and its side file (`.json`). */
export function outputPaths(dir: string, operationId: string): { out: string; meta: string } {
  if (!/^[A-Za-z0-9_-]+$/.test(operationId)) throw new IdemError('invalid_argument', 'bad operation id');
  return { out: join(dir, `${operationId}.out`), meta: join(dir, `${operationId}.json`) };
}

/**
 * Writes one run's output, bounded: the first quarter of `limitBytes` (the head: what the command
 * started doing) and the last three quarters (the tail: how it ended, usually the part that
 * matters), the middle dropped once the output outgrows the bound. Offsets are positions in the
 * whole stream, so a reader can tell what was dropped. Layout: a 32-byte header (magic, total
 * bytes written, head size, tail size), the head, then the tail as a ring. Every chunk is written
 * before the header's total moves past it, so a process killed at any point leaves a file whose
 * total covers only bytes that are there. The hash and the byte count cover everything written.
 */
export class OutputWriter {
  readonly #fd: number;
  readonly #head: number;
  readonly #tail: number;
  readonly #hash: Hash = createHash('sha256');
  readonly #totalBuffer = Buffer.alloc(8);
  #total = 0;
  #last: Buffer = Buffer.alloc(0);

  constructor(path: string, limitBytes: number) {
    this.#head = Math.floor(limitBytes / 4);
    this.#tail = limitBytes - this.#head;
    // 'w': a run (or a rerun of a rerunnable command) starts its output afresh.
    this.#fd = openSync(path, 'w', 0o600);
    const header = Buffer.alloc(HEADER_BYTES);
    MAGIC.copy(header, 0);
    header.writeDoubleLE(0, 8);
    header.writeDoubleLE(this.#head, 16);
    header.writeDoubleLE(this.#tail, 24);
    writeSync(this.#fd, header, 0, HEADER_BYTES, 0);
  }

  get bytes(): number {
    return this.#total;
  }

  append(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#hash.update(chunk);
    let offset = this.#total;
    let rest = chunk;
    // Only the last `tail` bytes of a chunk larger than the ring can survive: skip the others.
    if (offset + rest.length > this.#head && rest.length > this.#tail) {
      const keepFrom = Math.max(this.#head - offset, rest.length - this.#tail);
      if (keepFrom > 0 && offset < this.#head) {
        this.#write(rest.subarray(0, this.#head - offset), HEADER_BYTES + offset);
      }
      offset += keepFrom;
      rest = rest.subarray(keepFrom);
    }
    while (rest.length > 0) {
      if (offset < this.#head) {
        const n = Math.min(rest.length, this.#head - offset);
        this.#write(rest.subarray(0, n), HEADER_BYTES + offset);
        offset += n;
        rest = rest.subarray(n);
      } else {
        const ring = (offset - this.#head) % this.#tail;
        const n = Math.min(rest.length, this.#tail - ring);
        this.#write(rest.subarray(0, n), HEADER_BYTES + this.#head + ring);
        offset += n;
        rest = rest.subarray(n);
      }
    }
    this.#total += chunk.length;
    this.#totalBuffer.writeDoubleLE(this.#total, 0);
    writeSync(this.#fd, this.#totalBuffer, 0, 8, 8);
    this.#last = Buffer.concat([this.#last, chunk]);
    if (this.#last.length > LAST_BYTES) this.#last = this.#last.subarray(this.#last.length - LAST_BYTES);
  }

  /** Flushes to disk, closes, and summarises. */
  finish(): OutputSummary {
    try {
      fsyncSync(this.#fd);
    } finally {
      closeSync(this.#fd);
    }
    return {
      bytes: this.#total,
      sha256: this.#hash.digest('hex'),
      keptBytes: Math.min(this.#total, this.#head + this.#tail),
      lastLines: lastLines(this.#last, this.#total > this.#last.length),
    };
  }

  #write(data: Buffer, position: number): void {
    let written = 0;
    while (written < data.length) {
      written += writeSync(this.#fd, data, written, data.length - written, position + written);
    }
  }
}

/** What a read of an output file returns. */
export interface OutputRead {
  /** Where the returned bytes start (past `offset` when that part was dropped). */
  readonly offset: number;
  /** Pass this as the next `offset`. */
  readonly nextOffset: number;
  /** UTF-8 text, never ending inside a character (a cut character comes with the next read). */
  readonly text: string;
  /** Bytes the process has written so far. */
  readonly totalBytes: number;
  /** Bytes between the asked offset and `offset` that were dropped (the bound) and are gone. */
  readonly skippedBytes: number;
}

/**
 * Reads up to `limit` bytes of an output file from stream position `offset`. A position in the
 * dropped middle skips to the first kept byte after it (and says how many were skipped); an
 * offset at or past the end returns no text and the end as `nextOffset`. Undefined when there is
 * no such file (the run never started, or its output was removed).
 */
export function readOutput(path: string, offset: number, limit: number): OutputRead | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new IdemError('unavailable', 'the output file cannot be read', {
      retryable: true,
      retryAfterMs: 1000,
      cause: error,
    });
  }
  try {
    const header = Buffer.alloc(HEADER_BYTES);
    if (readSync(fd, header, 0, HEADER_BYTES, 0) < HEADER_BYTES || !header.subarray(0, 8).equals(MAGIC))
      return { offset, nextOffset: offset, text: '', totalBytes: 0, skippedBytes: 0 };
    const head = header.readDoubleLE(16);
    const tail = header.readDoubleLE(24);
    const total = header.readDoubleLE(8);
    if (offset >= total)
      return { offset: total, nextOffset: total, text: '', totalBytes: total, skippedBytes: 0 };
    if (offset < Math.min(total, head)) {
      const n = Math.min(limit, Math.min(total, head) - offset);
      const data = readAt(fd, HEADER_BYTES + offset, n);
      return finishRead(offset, data, total, 0);
    }
    let start = Math.max(offset, total - tail, head);
    const n = Math.min(limit, total - start);
    const data = readRing(fd, head, tail, start, n);
    // The writer may have overwritten part of what was read since the header was read.
    header.fill(0);
    readSync(fd, header, 0, HEADER_BYTES, 0);
    const after = header.readDoubleLE(8);
    const validFrom = Math.max(start, after - tail);
    const kept = data.subarray(Math.min(data.length, validFrom - start));
    start = Math.min(validFrom, start + data.length);
    return finishRead(start, kept, after, start - offset);
  } finally {
    closeSync(fd);
  }
}

/** Writes a small JSON side file atomically (a reader sees the old or the new one, whole). */
export function writeJsonFile(path: string, value: unknown): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}

/** Creates the output directory (owner-only) if it is missing. */
export function ensureOutputDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

function finishRead(start: number, data: Buffer, total: number, skipped: number): OutputRead {
  const whole = utf8Whole(data);
  return {
    offset: start,
    nextOffset: start + whole.length,
    text: whole.toString('utf8'),
    totalBytes: total,
    skippedBytes: skipped,
  };
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  let read = 0;
  while (read < length) {
    const n = readSync(fd, buffer, read, length - read, position + read);
    if (n === 0) break;
    read += n;
  }
  return buffer.subarray(0, read);
}

function readRing(fd: number, head: number, tail: number, start: number, length: number): Buffer {
  const ring = (start - head) % tail;
  const first = Math.min(length, tail - ring);
  const a = readAt(fd, HEADER_BYTES + head + ring, first);
  if (first === length) return a;
  return Buffer.concat([a, readAt(fd, HEADER_BYTES + head, length - first)]);
}

/**
 * `data` without an incomplete UTF-8 sequence at its end (at most 3 bytes), unless that would
 * leave nothing, so that a read never splits a character between two reads.
 */
function utf8Whole(data: Buffer): Buffer {
  for (let back = 1; back <= Math.min(3, data.length); back += 1) {
    const byte = data[data.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    if (need > back && data.length > back) return data.subarray(0, data.length - back);
    return data;
  }
  return data;
}

function lastLines(buffer: Buffer, cut: boolean): string[] {
  const lines = buffer.toString('utf8').split('\n');
  if (lines.at(-1) === '') lines.pop();
  // The window cut the first line (and maybe a character): drop it unless it is all there is.
  if (cut && lines.length > 1) lines.shift();
  return lines.slice(-LAST_LINES);
}
