/**
 * The docs the code cites are real: every `docs/DESIGN.md, "<section>"` a source file names is a
 * section of docs/DESIGN.md, docs/DEVELOPING.md exists and names where a route and a driver go, and
 * no source file cites an issue number (the code says what it does, not when it was asked for).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOC_PAGES } from '../docs/blocks.js';

const ROOTS = ['lib', 'functions', 'scripts', 'bench', 'test', 'infra', 'clients', '.ci'];
/** Source files at the top of the project. */
const TOP = ['serverless.yml', 'vitest.config.ts'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory())
      return ['node_modules', 'build', 'target'].includes(entry.name) ? [] : sources(full);
    return /\.(ts|mjs|cjs|sh|yaml|yml|java)$/.test(entry.name) || entry.name === 'run' ? [full] : [];
  });
}

/** The section names a text cites as `DESIGN.md, "A"` or `DESIGN.md, "A" and "B"`. */
function citedSections(text: string): string[] {
  return [...text.matchAll(/DESIGN\.md,?\s+(?:sections?\s+)?((?:"[^"]+"(?:\s+and\s+)?)+)/g)].flatMap((m) =>
    [...(m[1] as string).matchAll(/"([^"]+)"/g)].map((q) =>
      (q[1] as string).replace(/\s*\n\s*(?:\*|\/\/)?\s*/g, ' '),
    ),
  );
}

/** The headings of a Markdown page, without their trailing `(`file`…)` notes. */
function headings(markdown: string): string[] {
  return [...markdown.matchAll(/^#{2,3} (.+)$/gm)].map((m) => (m[1] as string).replace(/ \(`.*$/, '').trim());
}

describe('docs the code cites', () => {
  const files = [...ROOTS.flatMap(sources), ...TOP]
    .filter((file) => file !== 'test/house/docs.test.ts')
    .map((file) => ({ file, text: readFileSync(file, 'utf8') }));
  const design = headings(readFileSync('docs/DESIGN.md', 'utf8'));

  it('every cited section of docs/DESIGN.md exists', () => {
    const missing = files.flatMap(({ file, text }) =>
      citedSections(text)
        .filter((section) => !design.includes(section))
        .map((section) => `${file}: "${section}"`),
    );
    expect(design.length).toBeGreaterThan(8);
    expect(missing).toEqual([]);
  });

  it('no source file cites an issue number', () => {
    const citing = files.filter(({ text }) => /\b[Ii]ssues? #?\d+\b/.test(text)).map(({ file }) => file);
    expect(citing).toEqual([]);
  });

  it('docs/DEVELOPING.md says where a new route and a new driver go, and points at docs/DESIGN.md', () => {
    const developing = readFileSync('docs/DEVELOPING.md', 'utf8');
    const sections = headings(developing);
    expect(sections).toEqual(expect.arrayContaining(['Adding a route', 'Adding a driver', 'Test tiers']));
    expect(developing).toContain('docs/DESIGN.md');
  });

  it('finds a citation and a heading as written (the checks can fail)', () => {
    expect(citedSections('see docs/DESIGN.md, "Sessions" and "The write path"; DESIGN.md, "Lists"')).toEqual([
      'Sessions',
      'The write path',
      'Lists',
    ]);
    expect(headings('## Lists\n### CAS format (`lib/store/lists/cas.ts`)\n')).toEqual([
      'Lists',
      'CAS format',
    ]);
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** A page's text outside fenced code blocks. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```$/gm, '');

/** The relative links of a page that lead nowhere: a missing file, or a missing heading. */
function brokenLinks(page: string, read: (file: string) => string | undefined): string[] {
  const text = read(page) ?? '';
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].flatMap((m) => {
    const target = m[1] as string;
    if (/^[a-z]+:/.test(target)) return [];
    const [file, anchor] = target.split('#') as [string, string | undefined];
    const resolved =
      file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
    const linked = read(resolved);
    if (linked === undefined) return [`${page}: ${target} (no such file)`];
    if (anchor === undefined || !resolved.endsWith('.md')) return [];
    const anchors = [...prose(linked).matchAll(/^#{1,6} (.+)$/gm)].map((h) => anchorOf(h[1] as string));
    return anchors.includes(anchor) ? [] : [`${page}: ${target} (no such heading)`];
  });
}

const readIfThere = (file: string) => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return readdirSync(file) ? '' : undefined; // a folder is a valid target
  }
};

describe('the README and docs/', () => {
  it('every relative link leads to a file, and every anchor to a heading of it', () => {
    expect(DOC_PAGES.length).toBeGreaterThan(8);
    expect(
      DOC_PAGES.flatMap((page) => brokenLinks(page, (f) => (existsSync(f) ? readIfThere(f) : undefined))),
    ).toEqual([]);
  });

  it('finds a broken link and a broken anchor (the check can fail)', () => {
    const pages: Record<string, string> = {
      'docs/a.md':
        '# A\n\n## The lock (DynamoDB)\n\n[ok](#the-lock-dynamodb) [bad](#nope) [gone](b.md) [up](../README.md#top)\n',
      'README.md': '# Top\n',
    };
    expect(brokenLinks('docs/a.md', (f) => pages[f])).toEqual([
      'docs/a.md: #nope (no such heading)',
      'docs/a.md: b.md (no such file)',
    ]);
    expect(anchorOf('What a million agent turns cost (AWS, us-east-1)')).toBe(
      'what-a-million-agent-turns-cost-aws-us-east-1',
    );
  });

  it('the README is at most 350 lines and reaches a working call within its first 80', () => {
    const readme = readFileSync('README.md', 'utf8').split('\n');
    expect(readme.length).toBeLessThanOrEqual(350);
    const firstCall = readme.findIndex((line) => /^call -X PUT /.test(line));
    expect(firstCall).toBeGreaterThan(0);
    expect(firstCall).toBeLessThan(80);
  });
});
