/** Every test file is in a tier (test/tiers.ts), and the tiers' ceilings add up to at most 15 minutes. */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { inTier, TIERS } from './tiers.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

describe('test tiers', () => {
  it('put every test file in a tier, and add up to at most 15 minutes', () => {
    const files = testFiles('test');
    expect(files.length).toBeGreaterThan(20);
    const homeless = files.filter((file) => !TIERS.some((tier) => inTier(tier, file)));
    expect(homeless).toEqual([]);
    expect(TIERS.reduce((sum, t) => sum + t.seconds, 0)).toBeLessThanOrEqual(15 * 60);
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
});
