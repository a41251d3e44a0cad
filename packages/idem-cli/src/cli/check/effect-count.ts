import { errorLabel, replyError } from 'idem/client';
import { CliError } from '../cli-error.js';
import type { CheckConnection } from '../check-connection.js';
import { formatJsonPath, readJsonPath, type JsonPath } from './json-path.js';
import type { CountSpec } from './count-spec.js';
import { isObject } from './unique-template.js';

/** A count that one call of the tool was seen to move by `perAction`. */
export interface EffectCount {
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  readonly path: JsonPath;
  /** What is counted at the path: array items, a number, or the non-empty lines of a text listing. */
  readonly unit: Unit;
  readonly perAction: number;
  readonly from: CountSpec['from'];
}

export interface CountReader {
  readonly connection: CheckConnection;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
}

const MAX_NODES = 2000;
const MAX_DEPTH = 4;

export type Unit = 'items' | 'number' | 'lines';

/** The count now: the length of the array at the path, the number there, or its text's lines. */
export async function readCount(count: EffectCount, reader: CountReader): Promise<number> {
  const content = await readContent(count, reader);
  if (content.kind !== 'ok') throw new Error(`count tool ${count.tool}: ${content.problem}`);
  const measure = measureOf(readJsonPath(content.value, count.path));
  if (measure === undefined || measure.unit !== count.unit) {
    throw new Error(`count tool ${count.tool}: ${formatJsonPath(count.path)} no longer holds ${count.unit}`);
  }
  return measure.size;
}

/** The size of a value that can count effects: array items, a number, or the non-empty lines of a text. */
function measureOf(value: unknown): { size: number; unit: Unit } | undefined {
  if (Array.isArray(value)) return { size: value.length, unit: 'items' };
  if (typeof value === 'number' && Number.isFinite(value)) return { size: value, unit: 'number' };
  if (typeof value === 'string') {
    return { size: value.split('\n').filter((line) => line.trim() !== '').length, unit: 'lines' };
  }
  return undefined;
}

/**
 * Finds the count for a tool around its first call: `start` reads every candidate before the call,
 * `finish` reads them again and keeps the first whose array (or configured number; or, unconfigured,
 * the non-empty lines of a text listing) grew. A
 * configured count that is unreadable or points at neither an array nor a number is a usage error
 * (exit 2), raised in `start`, before the tool is called.
 */
export class CountCalibration {
  private constructor(
    private readonly reader: CountReader,
    private readonly before: ReadonlyArray<{ spec: CountSpec; lengths: Map<string, Measure> }>,
  ) {}

  static async start(specs: readonly CountSpec[], reader: CountReader): Promise<CountCalibration> {
    const before: Array<{ spec: CountSpec; lengths: Map<string, Measure> }> = [];
    for (const spec of specs) {
      const content = await readContent(spec, reader);
      if (content.kind !== 'ok') {
        if (spec.from === 'found') continue;
        const cause = `count tool ${spec.tool} (${spec.from}) ${content.problem}`;
        throw new CliError(
          content.kind === 'refused' ? `${cause}: check its arguments` : cause,
          content.kind === 'refused' ? 2 : 1,
        );
      }
      if (spec.path !== undefined) {
        const value = readJsonPath(content.value, spec.path);
        if (!Array.isArray(value) && typeof value !== 'number') {
          throw new CliError(
            `count path ${formatJsonPath(spec.path)} of ${spec.tool} is ${value === undefined ? 'missing' : `a ${kindOf(value)}`}, ` +
              `not a list or a number (the result has: ${describeFields(content.value)})`,
            2,
          );
        }
      }
      before.push({ spec, lengths: measures(content.value, spec.path) });
    }
    return new CountCalibration(reader, before);
  }

  /** The count the call moved, or why there is none. */
  async finish(): Promise<{ count: EffectCount | undefined; note: string | undefined }> {
    for (const { spec, lengths } of this.before) {
      const content = await readContent(spec, this.reader);
      if (content.kind !== 'ok') continue;
      const after = measures(content.value, spec.path);
      const grown = [...lengths.values()]
        .flatMap((was) => {
          const now = after.get(formatJsonPath(was.path));
          return now === undefined || now.unit !== was.unit || now.size <= was.size
            ? []
            : [{ path: was.path, unit: was.unit, growth: now.size - was.size }];
        })
        // Arrays before numbers before text lines; then the shortest path, the fewest indexes, the least growth.
        .sort(
          (a, b) =>
            UNITS.indexOf(a.unit) - UNITS.indexOf(b.unit) ||
            a.path.length - b.path.length ||
            indexes(a.path) - indexes(b.path) ||
            a.growth - b.growth,
        );
      const best = grown[0];
      if (best !== undefined) {
        return {
          count: {
            tool: spec.tool,
            arguments: spec.arguments,
            path: best.path,
            unit: best.unit,
            perAction: best.growth,
            from: spec.from,
          },
          note: undefined,
        };
      }
    }
    const tried = this.before.map(
      ({ spec }) => `${spec.tool}${spec.path === undefined ? '' : ` ${formatJsonPath(spec.path)}`}`,
    );
    const configured = this.before.some(({ spec }) => spec.from !== 'found');
    return {
      count: undefined,
      note:
        tried.length === 0
          ? 'no read tool to count effects with (pass --count-tool NAME)'
          : configured
            ? `the count (${tried.join(', ')}) did not grow after a successful call: effects not counted`
            : `no read tool counted the first call (tried ${tried.join(', ')}): effects not counted (pass --count-tool NAME)`,
    };
  }
}

interface Measure {
  readonly path: JsonPath;
  readonly size: number;
  readonly unit: Unit;
}

const UNITS: readonly Unit[] = ['items', 'number', 'lines'];

type Content =
  { kind: 'ok'; value: Record<string, unknown> } | { kind: 'refused' | 'unanswered'; problem: string };

async function readContent(
  spec: Pick<CountSpec, 'tool' | 'arguments'>,
  reader: CountReader,
): Promise<Content> {
  const step = await reader.connection.call(spec.tool, spec.arguments, reader.timeoutMs, reader.signal);
  if (step.kind === 'failure')
    return { kind: 'unanswered', problem: `did not answer (${errorLabel(step.failure.error)})` };
  if (step.reply.isError) {
    const error = replyError(step.reply.content);
    const text = error
      ? `${errorLabel(error)}: ${error.message}`
      : String(step.reply.content.text ?? 'tool_error').slice(0, 200);
    return { kind: 'refused', problem: `answered an error (${text})` };
  }
  return { kind: 'ok', value: step.reply.content };
}

/**
 * The configured path's measure; without a path, every array and every text four levels deep
 * (numbers only when configured: too many of them move for other reasons).
 */
function measures(content: Record<string, unknown>, path: JsonPath | undefined): Map<string, Measure> {
  const out = new Map<string, Measure>();
  if (path !== undefined) {
    const measure = measureOf(readJsonPath(content, path));
    if (measure !== undefined) out.set(formatJsonPath(path), { path, ...measure });
    return out;
  }
  const queue: Array<{ node: unknown; path: Array<string | number> }> = [{ node: content, path: [] }];
  for (let seen = 0; queue.length > 0 && seen < MAX_NODES; seen += 1) {
    const { node, path: at } = queue.shift() as { node: unknown; path: Array<string | number> };
    if (at.length > MAX_DEPTH) continue;
    if (Array.isArray(node)) {
      out.set(formatJsonPath(at), { path: at, size: node.length, unit: 'items' });
      node.forEach((item, index) => queue.push({ node: item, path: [...at, index] }));
    } else if (typeof node === 'string') {
      out.set(formatJsonPath(at), { path: at, ...(measureOf(node) as { size: number; unit: Unit }) });
    } else if (isObject(node)) {
      for (const [name, value] of Object.entries(node)) queue.push({ node: value, path: [...at, name] });
    }
  }
  return out;
}

function indexes(path: JsonPath): number {
  return path.filter((step) => typeof step === 'number').length;
}

function kindOf(value: unknown): string {
  return value === null ? 'null' : typeof value === 'object' ? 'object' : typeof value;
}

function describeFields(content: Record<string, unknown>): string {
  const fields = Object.entries(content).map(
    ([name, value]) => `${name} (${Array.isArray(value) ? 'list' : kindOf(value)})`,
  );
  return fields.join(', ') || 'no fields';
}
