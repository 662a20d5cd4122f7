/** The per-issue time ceilings cover every suite once and add up to at most 15 minutes. */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CEILINGS, ceilingOf } from './servers/ceilings.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

describe('suite time ceilings', () => {
  it('name one group for every test file, and add up to at most 15 minutes', () => {
    const files = testFiles('test');
    expect(files.length).toBeGreaterThan(20);
    for (const file of files) {
      const groups = CEILINGS.filter((c) =>
        c.files.some((f) => (f.endsWith('/') ? file.startsWith(f) : file === f)),
      );
      expect(
        groups.map((g) => g.issue),
        file,
      ).toHaveLength(1);
      expect(ceilingOf(file)).toBe(groups[0]);
    }
    expect(CEILINGS.reduce((sum, c) => sum + c.seconds, 0)).toBeLessThanOrEqual(15 * 60);
  });
});
