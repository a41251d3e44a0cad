/** A place in a text: 1-based line and column. */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const HEX4 = /[0-9a-fA-F]{4}/y;

/**
 * Where `text` stops being valid JSON, or undefined if it is valid. V8's JSON.parse messages quote
 * the text around some errors, which in a secrets file would print a secret; this finds the place
 * without quoting anything, so that an error message can name only the line and column.
 */
export function jsonErrorPosition(text: string): TextPosition | undefined {
  let i = 0;
  const fail = (): never => {
    throw new SyntaxAt(i);
  };
  const skipWhitespace = () => {
    while (i < text.length && WHITESPACE.has(text[i] as string)) i++;
  };
  const expect = (char: string) => {
    skipWhitespace();
    if (text[i] !== char) fail();
    i++;
  };
  const matchAt = (pattern: RegExp): boolean => {
    pattern.lastIndex = i;
    if (!pattern.test(text)) return false;
    i = pattern.lastIndex;
    return true;
  };
  const string = () => {
    if (text[i] !== '"') fail();
    i++;
    while (i < text.length) {
      const char = text[i] as string;
      if (char === '"') {
        i++;
        return;
      }
      if (char.charCodeAt(0) < 0x20) fail();
      if (char === '\\') {
        i++;
        if (text[i] === 'u') {
          i++;
          if (!matchAt(HEX4)) fail();
          continue;
        }
        if (!ESCAPES.has(text[i] ?? '')) fail();
      }
      i++;
    }
    fail();
  };
  const members = (close: string, member: () => void) => {
    i++;
    skipWhitespace();
    if (text[i] === close) {
      i++;
      return;
    }
    for (;;) {
      member();
      skipWhitespace();
      if (text[i] === close) {
        i++;
        return;
      }
      if (text[i] !== ',') fail();
      i++;
    }
  };
  const value = (): void => {
    skipWhitespace();
    const char = text[i];
    if (char === '{') {
      members('}', () => {
        skipWhitespace();
        string();
        expect(':');
        value();
      });
    } else if (char === '[') {
      members(']', value);
    } else if (char === '"') {
      string();
    } else {
      const literal = ['true', 'false', 'null'].find((word) => text.startsWith(word, i));
      if (literal !== undefined) i += literal.length;
      else if (!matchAt(NUMBER)) fail();
    }
  };
  try {
    value();
    skipWhitespace();
    if (i < text.length) fail();
    return undefined;
  } catch (error) {
    if (!(error instanceof SyntaxAt)) throw error;
    return positionOf(text, error.offset);
  }
}

class SyntaxAt {
  constructor(readonly offset: number) {}
}

function positionOf(text: string, offset: number): TextPosition {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  return { line: before.split('\n').length, column: offset - lineStart + 1 };
}
