import { readFileSync } from 'node:fs';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileEntry {
  readonly name: string;
  readonly selfMs: number;
  readonly selfPct: number;
}

export interface ProfileSummary {
  readonly totalMs: number;
  /** Self time by function (top entries). */
  readonly functions: readonly ProfileEntry[];
  /** Self time by where the code lives: Idem's modules, the driver, Node internals, idle... */
  readonly areas: readonly ProfileEntry[];
}

/** Where a frame's code lives, in words a reader of the report knows. */
function areaOf(frame: CpuProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (functionName === '(idle)') return 'idle (waiting for I/O: fsync, network, database)';
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)') return 'native code outside JS (V8, libuv)';
  const src = /\/src\/([^/]+(?:\/[^/]+)?)\//.exec(url) ?? /\/src\/([^/]+)\.js$/.exec(url);
  if (src !== null && !url.includes('node_modules')) return `idem src/${src[1]}`;
  if (url.includes('/bench/lib/notes')) return "the effect and the bench's call wrapper (bench/lib/notes.ts)";
  if (url.includes('/bench/')) return 'bench harness';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return `dependency ${pkg[1]}`;
  if (url.startsWith('node:') || url === '')
    return functionName === '' ? 'native/anonymous' : 'node internals';
  return 'other';
}

function shortUrl(url: string): string {
  const i = url.lastIndexOf('/src/');
  if (i >= 0 && !url.includes('node_modules')) return url.slice(i + 1);
  const pkg = url.lastIndexOf('node_modules/');
  if (pkg >= 0) return url.slice(pkg + 'node_modules/'.length);
  return url.replace(/^file:\/\/.*\/dist-bench\//, '');
}

/** Self time per function and per area from a `.cpuprofile` written by `node --cpu-prof`. */
export function summarizeProfile(path: string, top = 12): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i += 1) {
    const id = profile.samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  const label = (frame: CpuProfileNode['callFrame']) =>
    frame.url === ''
      ? frame.functionName || '(anonymous)'
      : `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
  for (const [id, us] of selfUs) {
    const frame = (byId.get(id) as CpuProfileNode).callFrame;
    const parentId = parentOf.get(id);
    const parent = parentId === undefined ? undefined : byId.get(parentId)?.callFrame;
    // A native function (a driver's statement.run, a crypto hash...) has no URL: name it by its caller.
    const native = frame.url === '' && !frame.functionName.startsWith('(') && parent !== undefined;
    const name = native ? `native ${frame.functionName}() called by ${label(parent)}` : label(frame);
    functions.set(name, (functions.get(name) ?? 0) + us);
    const callerArea = native ? areaOf(parent) : '';
    const area = !native
      ? areaOf(frame)
      : callerArea.startsWith('idem src/adapters/sqlite') || callerArea.startsWith('the effect')
        ? `SQLite C code (statements; COMMIT with its WAL write and fsync) called from ${callerArea}`
        : `${callerArea}: native code it calls`;
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const entries = (map: Map<string, number>, limit: number): ProfileEntry[] =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, us]) => ({ name, selfMs: us / 1000, selfPct: total === 0 ? 0 : (100 * us) / total }));
  return { totalMs: total / 1000, functions: entries(functions, top), areas: entries(areas, 10) };
}
