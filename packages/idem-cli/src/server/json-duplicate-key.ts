import type { TextPosition } from './json-error-position.js';

/** A key given twice in one JSON object. */
export interface DuplicateKey {
  /** Where the second one starts. */
  readonly position: TextPosition;
  /**
   * Member numbers (0-based, in text order) of the objects and arrays that lead to the object
   * holding the key: `[]` for the top level, `[2]` for the object that is the third top-level member.
   */
  readonly path: readonly number[];
  /** The member numbers of the first and the second occurrence in that object. */
  readonly first: number;
  readonly second: number;
  /** The key itself; do not show it when it may be a secret (a token). */
  readonly key: string;
}

const WHITESPACE = /[ \t\n\r]*/y;
const STRING = /"(?:[^"\\]|\\.)*"/y;
const SCALAR = /[^,\]}\s]+/y;

/**
 * The first key, in text order, that a JSON object of `text` gives twice, or undefined. JSON.parse
 * keeps the last of them silently; a file where one entry overrides another (one token granted twice)
 * must be refused instead. `text` must be valid JSON (check with JSON.parse first).
 */
export function jsonDuplicateKey(text: string): DuplicateKey | undefined {
  let i = 0;
  const skip = (pattern: RegExp): string => {
    pattern.lastIndex = i;
    const match = pattern.exec(text);
    if (match === null) throw new SyntaxError(`not valid JSON at offset ${i}`);
    i = pattern.lastIndex;
    return match[0];
  };
  const value = (path: number[]): DuplicateKey | undefined => {
    skip(WHITESPACE);
    const char = text[i];
    if (char === '"') {
      skip(STRING);
      return undefined;
    }
    if (char !== '{' && char !== '[') {
      skip(SCALAR);
      return undefined;
    }
    const close = char === '{' ? '}' : ']';
    const seen = new Map<string, number>();
    i++;
    for (let member = 0; ; member++) {
      skip(WHITESPACE);
      if (text[i] === close) {
        i++;
        return undefined;
      }
      if (member > 0) {
        i++; // the comma
        skip(WHITESPACE);
      }
      if (close === '}') {
        const start = i;
        const key = JSON.parse(skip(STRING)) as string;
        const first = seen.get(key);
        if (first !== undefined) {
          return { position: positionOf(text, start), path, first, second: member, key };
        }
        seen.set(key, member);
        skip(WHITESPACE);
        i++; // the colon
      }
      const found = value([...path, member]);
      if (found !== undefined) return found;
    }
  };
  return value([]);
}

function positionOf(text: string, offset: number): TextPosition {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: offset - lineStart + 1 };
}
