/**
 * The runnable blocks of the README and docs/: fenced blocks whose info string is `sh run` or
 * `ts run`, and the output each claims — its `# → <line>` (sh) or `// → <line>` (ts) comments in
 * order, where `…` stands for any text. A block named by an `<!-- example:<name> … -->` marker before
 * it is also found by that name (tests that run it elsewhere, e.g. in an installed project).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The pages a user reads. */
export const DOC_PAGES: readonly string[] = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
  'clients/java/README.md',
];

export interface DocBlock {
  /** `README.md:31`: the page and the line of its opening fence. */
  readonly where: string;
  readonly lang: 'sh' | 'ts';
  /** The `<!-- example:<name>` marker just before it, if any. */
  readonly name: string | undefined;
  /** The code as written. */
  readonly code: string;
  /** The lines its `→` comments say it prints. */
  readonly prints: readonly string[];
}

/** Every block of `markdown` marked `run`. */
export function runnableBlocks(page: string, markdown: string): DocBlock[] {
  const blocks: DocBlock[] = [];
  const fence = /^```(sh|ts) run\n([\s\S]*?)^```$/gm;
  for (const m of markdown.matchAll(fence)) {
    const lang = m[1] as 'sh' | 'ts';
    const code = m[2] as string;
    const before = markdown.slice(0, m.index);
    const line = before.split('\n').length;
    const marker = /<!-- example:([a-z-]+)[^>]*-->\n$/.exec(before);
    const arrow = lang === 'sh' ? /^\s*# → (.*)$/gm : /\/\/ → (.*)$/gm;
    const prints = [...code.matchAll(arrow)].map((p) => (p[1] as string).trim());
    blocks.push({ where: `${page}:${line}`, lang, name: marker?.[1], code, prints });
  }
  return blocks;
}

/** Every runnable block of the pages. */
export function docBlocks(pages: readonly string[] = DOC_PAGES): DocBlock[] {
  return pages.flatMap((page) => runnableBlocks(page, readFileSync(page, 'utf8')));
}

/** The block named `name` (by its `<!-- example:<name> -->` marker). */
export function docExample(name: string, blocks: readonly DocBlock[] = docBlocks()): DocBlock {
  const found = blocks.filter((b) => b.name === name);
  if (found.length !== 1)
    throw new Error(`the docs hold ${found.length} runnable blocks named ${name}, not 1`);
  return found[0] as DocBlock;
}

/** Whether `actual` is the line `expected` says, `…` standing for any text. */
export function printedAs(actual: string, expected: string): boolean {
  const pattern = expected
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`, 's').test(actual.trim());
}
