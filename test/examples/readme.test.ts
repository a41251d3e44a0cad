import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/mcp-fixtures.js';

/**
 * The TypeScript examples of the README and of the guides in docs/ are files under examples/
 * (compiled and run by examples.test.ts and its neighbours). Each ```ts block must follow a
 * `<!-- examples/NAME.ts -->` marker and equal that file exactly, so that an example can no
 * longer drift from the code that runs; and every file in examples/ is shown (under its marker)
 * or linked (`[…](examples/NAME.ts)`, `../examples/` from docs/) by the README or a guide.
 */
const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
const GUIDES = readdirSync(join(REPO_ROOT, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/${f}`);
const EXAMPLES = readdirSync(join(REPO_ROOT, 'examples')).filter((f) => f.endsWith('.ts'));

interface Block {
  readonly marker: string | undefined;
  readonly code: string;
  readonly line: number;
}

function typeScriptBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i] ?? '')) continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`unclosed code block at line ${i + 1}`);
    let before = i - 1;
    while (before >= 0 && (lines[before] ?? '').trim() === '') before -= 1;
    const marker = /^<!-- (examples\/[\w.-]+\.ts) -->$/.exec(lines[before] ?? '')?.[1];
    blocks.push({ marker, code: `${lines.slice(i + 1, end).join('\n')}\n`, line: i + 1 });
    i = end;
  }
  return blocks;
}

describe('README examples', () => {
  const blocks = typeScriptBlocks(README);

  it('shows a client and a tool of your own', () => {
    expect(blocks.map((b) => b.marker)).toEqual([
      'examples/quickstart-client.ts',
      'examples/quickstart-tool.ts',
    ]);
  });

  it.each(blocks.map((b) => [b.line, b] as const))(
    'the block at line %i is an examples/ file, verbatim',
    (_, block) => {
      expect(block.marker, 'a <!-- examples/NAME.ts --> line right before the block').toBeDefined();
      expect(block.code).toBe(readFileSync(join(REPO_ROOT, block.marker as string), 'utf8'));
    },
  );
});

describe('the guides in docs/', () => {
  it.each(GUIDES)('%s: every TypeScript block is an examples/ file, verbatim', (guide) => {
    for (const block of typeScriptBlocks(readFileSync(join(REPO_ROOT, guide), 'utf8'))) {
      expect(
        block.marker,
        `${guide} line ${block.line}: a <!-- examples/NAME.ts --> line before`,
      ).toBeDefined();
      expect(block.code, `${guide} line ${block.line}`).toBe(
        readFileSync(join(REPO_ROOT, block.marker as string), 'utf8'),
      );
    }
  });

  it('the README or a guide shows or links every file in examples/', () => {
    const all = [README, ...GUIDES.map((guide) => readFileSync(join(REPO_ROOT, guide), 'utf8'))].join('\n');
    for (const file of EXAMPLES) {
      expect(all, `examples/${file} is neither shown nor linked`).toMatch(
        new RegExp(
          `<!-- examples/${file.replace('.', '\\.')} -->|\\]\\((\\.\\./)?examples/${file.replace('.', '\\.')}\\)`,
        ),
      );
    }
  });

  it('external-effects.md shows examples/durable-payment.ts', () => {
    const guide = readFileSync(join(REPO_ROOT, 'docs', 'external-effects.md'), 'utf8');
    expect(typeScriptBlocks(guide).map((b) => b.marker)).toContain('examples/durable-payment.ts');
  });
});
