/**
 * Files a newcomer can hold in their head (docs/DEVELOPING.md, "Conventions"): no file of lib/ over
 * 1,000 lines, no function over 150 (a class counts by its methods, not as a whole).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const MAX_FILE_LINES = 1000;
const MAX_FUNCTION_LINES = 150;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every function, method, accessor and arrow function of a source with its length in lines. */
function functionLengths(file: string, text: string): Array<{ name: string; lines: number }> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const out: Array<{ name: string; lines: number }> = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
      out.push({ name: `${file}:${start + 1} ${name}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

describe('sizes of lib/', () => {
  const files = sources('lib').map((file) => ({ file, text: readFileSync(file, 'utf8') }));

  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const long = files
      .map(({ file, text }) => ({ file, lines: text.split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_FILE_LINES);
    expect(long).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = files.flatMap(({ file, text }) =>
      functionLengths(file, text).filter((f) => f.lines > MAX_FUNCTION_LINES),
    );
    expect(long).toEqual([]);
  });

  it('measures a function as its source says (the check can fail)', () => {
    const body = Array.from({ length: 160 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const [f] = functionLengths('x.ts', `function long() {\n${body}\n}\n`);
    expect(f).toEqual({ name: 'x.ts:1 long', lines: 162 });
  });
});
