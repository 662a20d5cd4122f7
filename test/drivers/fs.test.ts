import { appendFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ObjectConditionFailedError } from '../../lib/drivers/errors.js';
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

describe('fs driver appends', () => {
  it('an append cut off by a crash is invisible and cut off by the next append', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'fs-append-'));
    const driver = createFsDriver({ root });
    await driver.append('logs/a', 'first;', { position: 0 });
    // What an append interrupted after writing its bytes, before its committed length, leaves.
    await appendFile(objectPath(root, 'logs/a'), 'torn bytes');
    const got = await driver.get('logs/a');
    expect(Buffer.from(got.body).toString()).toBe('first;');
    expect(got.size).toBe(6);
    expect((await driver.list({ prefix: 'logs/' })).objects[0]?.size).toBe(6);
    const wrong = await driver.append('logs/a', 'x', { position: 16 }).catch((e: unknown) => e);
    expect(wrong).toMatchObject({ nextPosition: 6 });
    expect((await driver.append('logs/a', 'second;', { position: 6 })).nextPosition).toBe(13);
    expect(Buffer.from((await driver.get('logs/a')).body).toString()).toBe('first;second;');
    const tail = await driver.get('logs/a', { range: { suffix: 7 } });
    expect(Buffer.from(tail.body).toString()).toBe('second;');
    await rm(root, { recursive: true, force: true });
  });

  it('creating appends from two drivers on one folder (two processes): exactly one creates', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'fs-append-'));
    const drivers = [createFsDriver({ root }), createFsDriver({ root })];
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => drivers[i % 2]?.append('race', `writer ${i}`, { position: 0 })),
    );
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    expect(won).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') {
        expect(r.reason).toBeInstanceOf(ObjectConditionFailedError);
        expect((r.reason as ObjectConditionFailedError).nextPosition).toBe('writer 0'.length);
      }
    }
    expect(Buffer.from((await drivers[1]?.get('race'))?.body ?? []).toString()).toBe(`writer ${won[0]}`);
    await rm(root, { recursive: true, force: true });
  });
});
