/** Every test file is in a tier (test/tiers.ts), and the tiers' ceilings add up to at most 25 minutes. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { inTier, TIERS } from './tiers.js';

/** The lines of `source` that end a test or hook with a timeout of its own (`}, 60_000);`). */
function ownTimeouts(source: string): string[] {
  return source
    .split('\n')
    .filter((line) => /^\s*\}, [0-9_]+\);$/.test(line) || /\{ timeout: [0-9_]+ \}\)/.test(line));
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

describe('test tiers', () => {
  it('put every test file in a tier, and add up to at most 25 minutes', () => {
    const files = testFiles('test');
    expect(files.length).toBeGreaterThan(20);
    const homeless = files.filter((file) => !TIERS.some((tier) => inTier(tier, file)));
    expect(homeless).toEqual([]);
    expect(TIERS.reduce((sum, t) => sum + t.seconds, 0)).toBeLessThanOrEqual(25 * 60);
  });

  it('name only files and folders that exist', () => {
    const files = testFiles('test');
    for (const tier of TIERS)
      for (const f of [...tier.files, ...(tier.exclude ?? [])])
        expect(
          files.some((file) => (f.endsWith('/') ? file.startsWith(f) : file === f)),
          `${tier.name}: ${f}`,
        ).toBe(true);
  });

  it('keep the fast tier free of servers', () => {
    expect(TIERS.find((t) => t.name === 'fast')?.servers).toBe('none');
  });

  it('leave every test and hook the time of its tier: none has a timeout of its own that load could break', () => {
    const own = testFiles('test').flatMap((file) =>
      ownTimeouts(readFileSync(file, 'utf8')).map((l) => `${file}: ${l.trim()}`),
    );
    expect(own).toEqual([]);
    expect(ownTimeouts("it('x', async () => {\n  }, 30_000);\n")).toHaveLength(1);
  });
});
