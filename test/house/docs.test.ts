/**
 * The docs the code cites are real: every `docs/DESIGN.md, "<section>"` a source file names is a
 * section of docs/DESIGN.md, docs/DEVELOPING.md exists and names where a route and a driver go, and
 * no source file cites an issue number (the code says what it does, not when it was asked for).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

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
