import { posix } from 'node:path';

/** One `[text](target)` or `![alt](target)` link of a Markdown file, outside code. */
export interface MarkdownLink {
  readonly target: string;
  readonly line: number;
}

/** The lines of a Markdown file that are prose: fenced code blocks are blanked (kept as empty lines). */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split('\n').map((line) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (fence === undefined && marker !== undefined) {
      fence = marker;
      return '';
    }
    if (fence !== undefined) {
      if (marker !== undefined && marker.startsWith(fence[0] ?? '`') && marker.length >= fence.length) {
        fence = undefined;
      }
      return '';
    }
    return line;
  });
}

/** Every inline link and image of `markdown` outside fenced code and inline code spans. */
export function markdownLinks(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  proseLines(markdown).forEach((line, index) => {
    const prose = line.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ target: match[1] ?? '', line: index + 1 });
    }
  });
  return links;
}

/** The anchors GitHub gives the headings of `markdown` (`## The CLI` is `#the-cli`, repeats get `-1`, …). */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** What a link check may ask about the repository and the packed tarball. */
export interface LinkWorld {
  /** Whether the repository path (posix, relative to its root) is a file or a directory. */
  exists(path: string): boolean;
  /** The files `npm pack` ships, relative to the package root. */
  readonly packed: ReadonlySet<string>;
  /** The text of a Markdown file of the repository. */
  read(path: string): string;
}

/**
 * The relative links of the Markdown file `file` (a repository path) that would be dead on the
 * repository or in the tarball: a target that does not exist, one `npm pack` does not ship (a
 * directory counts when it ships a file under it), or a `#fragment` that names no heading of its
 * Markdown target. Absolute URLs (`https:`, `mailto:`) are not checked. Each problem names the line.
 */
export function deadLinks(file: string, markdown: string, world: LinkWorld): string[] {
  const problems: string[] = [];
  for (const { target, line } of markdownLinks(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [rawPath = '', fragment] = target.split('#', 2);
    const path = rawPath === '' ? file : posix.normalize(posix.join(posix.dirname(file), rawPath));
    const where = `${file}:${line} → ${target}`;
    if (path.startsWith('..') || posix.isAbsolute(path)) {
      problems.push(`${where}: points outside the package`);
      continue;
    }
    if (!world.exists(path)) {
      problems.push(`${where}: ${path} does not exist`);
      continue;
    }
    const dir = path.replace(/\/$/, '');
    if (!world.packed.has(path) && ![...world.packed].some((p) => p.startsWith(`${dir}/`))) {
      problems.push(`${where}: ${path} is not in the packed tarball (package.json "files")`);
      continue;
    }
    if (fragment !== undefined && path.endsWith('.md') && !headingAnchors(world.read(path)).has(fragment)) {
      problems.push(`${where}: ${path} has no heading #${fragment}`);
    }
  }
  return problems;
}
