import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFsDriver, encodeSegment } from '../../lib/drivers/fs.js';
import { describeDriverConformance } from '../conformance/driver-suite.js';

/** The folder of an object file, as the fs driver lays it out. */
function objectPath(root: string, key: string): string {
  return `${path.join(root, ...key.split('/').map(encodeSegment))}~`;
}

describeDriverConformance('fs', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'fs-driver-'));
  const blocked: string[] = [];
  return {
    driver: createFsDriver({ root }),
    // A real failure: a non-empty folder where the object file would be cannot be unlinked.
    failDeletes: async (keys) => {
      for (const key of keys) {
        const at = objectPath(root, key);
        await rm(at, { force: true });
        await mkdir(path.join(at, 'blocker'), { recursive: true });
        blocked.push(at);
      }
    },
    reset: async () => {
      for (const at of blocked.splice(0)) await rm(at, { recursive: true, force: true });
    },
    close: () => rm(root, { recursive: true, force: true }),
  };
});

describe('fs driver layout', () => {
  it('keeps every path component at most 255 bytes and inside the root', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'fs-layout-'));
    const driver = createFsDriver({ root });
    const long = `${'É'.repeat(150)}/${'z'.repeat(300)}/${'...'}/${'~'.repeat(100)}`;
    await driver.put(long, 'deep');
    const walk = async (dir: string): Promise<string[]> => {
      const entries = await readdir(dir, { withFileTypes: true });
      const names = entries.map((e) => e.name);
      for (const e of entries) if (e.isDirectory()) names.push(...(await walk(path.join(dir, e.name))));
      return names;
    };
    const names = await walk(root);
    expect(names.length).toBeGreaterThan(3);
    for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
    expect((await driver.list({ prefix: 'É' })).objects.map((o) => o.key)).toEqual([long]);
    expect((await driver.list({ prefix: `${'É'.repeat(150)}/`, delimiter: '/' })).prefixes).toEqual([
      `${'É'.repeat(150)}/${'z'.repeat(300)}/`,
    ]);
    await driver.delete(long);
    expect(await readdir(root)).toEqual([]);
    await rm(root, { recursive: true, force: true });
  });

  it('does not merge keys that differ only in letter case', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'fs-case-'));
    const driver = createFsDriver({ root });
    await driver.put('Session/A', 'upper');
    await driver.put('session/a', 'lower');
    expect(Buffer.from((await driver.get('Session/A')).body).toString()).toBe('upper');
    expect(Buffer.from((await driver.get('session/a')).body).toString()).toBe('lower');
    for (const name of await readdir(root)) expect(name).toBe(name.toLowerCase());
    await rm(root, { recursive: true, force: true });
  });
});
