import type { JsonPath } from './json-path.js';

/** A read tool to count effects with; `path` undefined: the array one call grows, found by calibration. */
export interface CountSpec {
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  readonly path: JsonPath | undefined;
  /** `config`, `--count-tool` or `found` (a readOnlyHint tool tried by itself). */
  readonly from: 'config' | '--count-tool' | 'found';
}
