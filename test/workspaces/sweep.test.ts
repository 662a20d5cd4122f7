/**
 * The sweep of workspace snapshot packs (docs/DESIGN.md, "Workspace snapshots") with a clock the
 * test moves: a pack is tagged `gc=1` only on the second sweep that finds it unreferenced and only
 * when it is older than the presign expiry + `maxCommitMs`; a push in flight keeps its packs (the
 * age rule, and the commit's untagging when the push overstayed); a snapshot lives as long as its
 * session and its packs go to the sweep after; `gc` and the sweep bring the stored bytes down to
 * the live ones. On fs through the local server's signed URLs, s3rver behind the S3 front and the
 * OSS front (servers tier): tags are set by a copy onto itself on each.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../lib/client/node/index.js';
import { runWorkspaceCli } from '../../lib/client/node/workspace-cli.js';
import { hasWorkspacePackSweep, type WorkspacePackSweeper } from '../../lib/contract/workspace-snapshots.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { runSweep } from '../../lib/lifecycle/sweep.js';
import { createStateStore } from '../../lib/store/store.js';
import { type Backend, backends } from '../backends.js';
import { hsToken } from '../http/harness.js';
import { BODY_LIMIT, localBase, startWorkspaceApi, type WorkspaceApi } from './api.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const sid = () => `session-${randomBytes(6).toString('hex')}`;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Deterministic incompressible bytes. */
function noise(n: number, seed: number): Buffer {
  const out = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

let fsRoot = '';
const localFs: Backend = {
  name: 'fs (local server)',
  make: async () => {
    fsRoot = await mkdtemp(path.join(tmpdir(), 'fs-sweep-'));
    const driver = createFsDriver({ root: fsRoot, presign: { baseUrl: () => localBase.url } });
    return { driver, close: () => rm(fsRoot, { recursive: true, force: true }) };
  },
};
const transferring = [localFs, ...backends().filter((b) => b.name !== 'memory' && b.name !== 'fs')];

describe.each(transferring)(
  'the sweep of workspace snapshot packs on $name (a clock the test moves)',
  (backend) => {
    let driver: ObjectStoreDriver;
    let close: () => Promise<void>;
    let api: WorkspaceApi;
    let sweeper: WorkspacePackSweeper;
    let offset = 0; // the clock the test moves: real time plus this
    const now = () => Date.now() + offset;
    const temps: string[] = [];
    const temp = async () => {
      const d = await mkdtemp(path.join(tmpdir(), 'sweep-'));
      temps.push(d);
      return d;
    };

    beforeAll(async () => {
      ({ driver, close } = await backend.make());
      api = await startWorkspaceApi(driver, { now });
      const store = createStateStore({ driver, prefix: api.prefix, now }).forUser('alice');
      if (!hasWorkspacePackSweep(store)) throw new Error('the store has no sweep');
      sweeper = store;
    });
    afterAll(async () => {
      await api.close();
      await close();
      await Promise.all(temps.map((d) => rm(d, { recursive: true, force: true })));
    });

    /** A client whose commit calls (POST …/snapshots/{id}) wait for `gate` when it is set. */
    const gated = () => {
      const state: { gate?: Promise<void>; reached?: () => void } = {};
      const reached = new Promise<void>((r) => {
        state.reached = r;
      });
      const client = createHttpClient({
        baseUrl: api.baseUrl,
        token: () => hsToken({ sub: 'alice' }),
        bodyLimitBytes: BODY_LIMIT,
        fetch: async (input, init) => {
          const url = String(input);
          if (init?.method === 'POST' && /\/snapshots\/[0-9a-z]{10}-[0-9a-f]{16}$/.test(url) && state.gate) {
            state.reached?.();
            await state.gate;
          }
          return fetch(input, init);
        },
      });
      return { client, state, reached };
    };
    const packsOf = async (s: string) =>
      (await driver.list({ prefix: `${api.prefix}alice/${s}/` })).objects.filter((o) =>
        o.key.includes('/p/'),
      );
    const tagsOf = async (key: string) => (await driver.head(key, { tags: true })).tags;
    const tree = async (files: Record<string, Buffer>) => {
      const dir = await temp();
      for (const [name, body] of Object.entries(files)) await writeFile(path.join(dir, name), body);
      return dir;
    };

    it('tags a pack on the second sweep that finds it unreferenced and old enough, never one a snapshot holds', async () => {
      const alice = api.client('alice');
      offset = 0; // markers carry the real time: each test starts there
      const s = sid();
      const a = await alice.workspaces.push(s, 'w', await tree({ 'a.bin': noise(600 * KIB, 1) }), {
        packBytes: 256 * KIB,
      });
      const b = await alice.workspaces.push(
        s,
        'w',
        await tree({ 'b.bin': noise(600 * KIB, 2), 'c.txt': Buffer.from('c') }),
        { packBytes: 256 * KIB },
      );
      const all = await packsOf(s);
      const bInfo = (await alice.workspaces.list(s, 'w')).find((x) => x.snapshotId === b.snapshotId);
      expect(bInfo).toBeDefined();
      await alice.workspaces.delete(s, 'w', a.snapshotId);
      const bPacks = new Set((await alice.workspaces.get(s, 'w', b.snapshotId))?.packs);
      const aOnly = all.filter((o) => !bPacks.has(o.key.split('/').at(-1) as string));
      expect(aOnly.length).toBeGreaterThan(0);

      // First sweep: candidates only. Second, at once: too young (the packs were just written).
      const first = await sweeper.sweepWorkspacePacks({ sessionId: s });
      expect(first).toMatchObject({ packs: all.length, unreferenced: aOnly.length, tagged: 0 });
      expect((await sweeper.sweepWorkspacePacks({ sessionId: s })).tagged).toBe(0);
      offset += 10 * 60_000; // 10 minutes: still inside presign expiry (15 min) + maxCommitMs (1 min)
      expect((await sweeper.sweepWorkspacePacks({ sessionId: s })).tagged).toBe(0);
      offset += 2 * HOUR;
      const third = await sweeper.sweepWorkspacePacks({ sessionId: s });
      expect(third.tagged).toBe(aOnly.length);
      for (const o of all)
        expect(await tagsOf(o.key)).toEqual(
          bPacks.has(o.key.split('/').at(-1) as string) ? { kind: 'pack' } : { kind: 'pack', gc: '1' },
        );
      // Without lifecycle rules (fs), the sweep deletes tagged packs after the grace it is given.
      offset += 3 * DAY;
      expect(
        (await sweeper.sweepWorkspacePacks({ sessionId: s, deleteTaggedAfterMs: 7 * DAY })).deleted,
      ).toBe(0);
      offset += 5 * DAY;
      const late = await sweeper.sweepWorkspacePacks({ sessionId: s, deleteTaggedAfterMs: 7 * DAY });
      expect(late.deleted).toBe(aOnly.length);
      expect((await packsOf(s)).map((o) => o.key).sort()).toEqual(
        all
          .filter((o) => bPacks.has(o.key.split('/').at(-1) as string))
          .map((o) => o.key)
          .sort(),
      );
      const out = path.join(await temp(), 'out');
      await alice.workspaces.pull(s, 'w', b.snapshotId, out);
      expect(sha(await readFile(path.join(out, 'b.bin')))).toBe(sha(noise(600 * KIB, 2)));
    });

    it('a sweep racing a push deletes nothing the push references: the age rule, and the commit untagging an overstayed push', async () => {
      offset = 0; // markers carry the real time: each test starts there
      const s = sid();
      const alice = api.client('alice');
      await alice.workspaces.push(s, 'w', await tree({ 'x.txt': Buffer.from('x') }));
      // A push whose commit waits while sweeps run inside the age window: nothing is tagged.
      const quick = gated();
      let release: () => void = () => {};
      quick.state.gate = new Promise<void>((r) => {
        release = r;
      });
      const src = await tree({ 'big.bin': noise(700 * KIB, 3) });
      const pushing = quick.client.workspaces.push(s, 'w', src, { parent: null, packBytes: 256 * KIB });
      await quick.reached;
      const uploaded = (await packsOf(s)).length;
      expect(uploaded).toBeGreaterThan(1);
      for (let i = 0; i < 3; i++) {
        offset += 4 * 60_000;
        expect((await sweeper.sweepWorkspacePacks({ sessionId: s })).tagged).toBe(0);
      }
      release();
      const pushed = await pushing;
      offset += 2 * HOUR;
      await sweeper.sweepWorkspacePacks({ sessionId: s });
      expect((await sweeper.sweepWorkspacePacks({ sessionId: s })).tagged).toBe(0);

      // A push that overstays (its commit after two sweeps past the window): its packs are tagged
      // meanwhile, and the commit takes the tag off again before it answers.
      const slow = gated();
      slow.state.gate = new Promise<void>((r) => {
        release = r;
      });
      const src2 = await tree({ 'other.bin': noise(700 * KIB, 4) });
      const pushing2 = slow.client.workspaces.push(s, 'w', src2, { parent: null, packBytes: 256 * KIB });
      await slow.reached;
      const before = new Set((await packsOf(s)).map((o) => o.key));
      await sweeper.sweepWorkspacePacks({ sessionId: s });
      offset += 2 * HOUR;
      const swept = await sweeper.sweepWorkspacePacks({ sessionId: s });
      expect(swept.tagged).toBeGreaterThan(0);
      release();
      const pushed2 = await pushing2;
      const held = new Set((await alice.workspaces.get(s, 'w', pushed2.snapshotId))?.packs);
      for (const o of await packsOf(s))
        if (held.has(o.key.split('/').at(-1) as string))
          expect(await tagsOf(o.key)).toEqual({ kind: 'pack' });
      offset += 9 * DAY; // under the retention: the session is live
      const after = await sweeper.sweepWorkspacePacks({ sessionId: s, deleteTaggedAfterMs: 7 * DAY });
      expect(after.deleted).toBe(0);
      for (const [id, dir, file] of [
        [pushed.snapshotId, src, 'big.bin'],
        [pushed2.snapshotId, src2, 'other.bin'],
      ] as const) {
        const out = path.join(await temp(), 'out');
        await alice.workspaces.pull(s, 'w', id, out);
        expect(sha(await readFile(path.join(out, file)))).toBe(sha(await readFile(path.join(dir, file))));
      }
      expect(before.size).toBeGreaterThan(0);
    });

    it('uploads a tagged pack again when a push needs it, so the new object carries no gc tag', async () => {
      offset = 0; // markers carry the real time: each test starts there
      const s = sid();
      const alice = api.client('alice');
      const files = { 'same.bin': noise(600 * KIB, 5) };
      const first = await alice.workspaces.push(s, 'w', await tree(files), { packBytes: 256 * KIB });
      await alice.workspaces.delete(s, 'w', first.snapshotId);
      await sweeper.sweepWorkspacePacks({ sessionId: s });
      offset += 2 * HOUR;
      const tagged = (await sweeper.sweepWorkspacePacks({ sessionId: s })).tagged;
      expect(tagged).toBe((await packsOf(s)).length);
      const again = await alice.workspaces.push(s, 'w', await tree(files), {
        parent: null,
        packBytes: 256 * KIB,
      });
      expect(again.uploadedPacks).toBe(tagged);
      for (const o of await packsOf(s)) expect(await tagsOf(o.key)).toEqual({ kind: 'pack' });
      offset += 9 * DAY;
      const after = await sweeper.sweepWorkspacePacks({ sessionId: s, deleteTaggedAfterMs: 7 * DAY });
      expect(after).toMatchObject({ deleted: 0, tagged: 0 });
      const out = path.join(await temp(), 'out');
      await alice.workspaces.pull(s, 'w', again.snapshotId, out);
      expect(sha(await readFile(path.join(out, 'same.bin')))).toBe(sha(files['same.bin']));
    });

    it('gc rewrites packs with ≥ 30 % garbage into new packs, replaces the snapshots in place, and the sweep takes the old packs', async () => {
      offset = 0;
      const s = sid();
      const alice = api.client('alice');
      // Four files of 200 KiB in one pack; a second snapshot keeps one of them, the first is deleted.
      const big = (i: number) => noise(200 * KIB, 10 + i);
      const first = await alice.workspaces.push(
        s,
        'w',
        await tree({ 'f0.bin': big(0), 'f1.bin': big(1), 'f2.bin': big(2), 'f3.bin': big(3) }),
        { packBytes: 4 * MIB },
      );
      const keptDir = await tree({ 'f0.bin': big(0), 'new.bin': big(9) });
      const second = await alice.workspaces.push(s, 'w', keptDir, { packBytes: 4 * MIB });
      const third = await alice.workspaces.push(s, 'w', keptDir, { packBytes: 4 * MIB });
      await alice.workspaces.delete(s, 'w', first.snapshotId);
      const before = await alice.workspaces.list(s, 'w');
      const result = await alice.workspaces.gc(s, 'w', { packBytes: 4 * MIB });
      // The first pack is 3/4 garbage: rewritten; the pack of new.bin is all live: kept.
      expect(result.rewrittenPacks).toBe(1);
      expect(result.garbageBytes).toBe(3 * 200 * KIB);
      expect(result.uploadedPacks).toBe(1);
      expect(result.replaced.map((r) => r.from).sort()).toEqual([second.snapshotId, third.snapshotId].sort());
      const after = await alice.workspaces.list(s, 'w');
      expect(after.map((x) => x.snapshotId.slice(0, 10))).toEqual(
        before.map((x) => x.snapshotId.slice(0, 10)),
      );
      expect(after.map((x) => x.snapshotId)).not.toEqual(before.map((x) => x.snapshotId));
      // A second gc, from the CLI, finds nothing to do.
      const lines: string[] = [];
      const code = await runWorkspaceCli(
        ['gc', '--session', s, '--name', 'w', '--token', await hsToken({ sub: 'alice' })],
        { env: { AGENT_STATE_URL: api.baseUrl }, line: (t) => lines.push(t), write: () => {} },
      );
      expect(code).toBe(0);
      expect(lines.at(-1)).toMatch(/^rewrote 0 of 2 pack\(s\)/);
      // The sweep takes the old pack: stored bytes fall to the live ones.
      await sweeper.sweepWorkspacePacks({ sessionId: s });
      offset += 2 * HOUR;
      await sweeper.sweepWorkspacePacks({ sessionId: s });
      offset += 8 * DAY;
      const swept = await sweeper.sweepWorkspacePacks({ sessionId: s, deleteTaggedAfterMs: 7 * DAY });
      expect(swept.deleted).toBe(1);
      const stored = (await packsOf(s)).reduce((n, o) => n + o.size, 0);
      expect(stored).toBe(2 * 200 * KIB);
      const out = path.join(await temp(), 'out');
      await alice.workspaces.pull(s, 'w', 'latest', out);
      for (const [file, body] of [
        ['f0.bin', big(0)],
        ['new.bin', big(9)],
      ] as const)
        expect(sha(await readFile(path.join(out, file)))).toBe(sha(body));
    });

    it('keeps a snapshot while its session lives, and hands its packs to the sweep once it expired', async () => {
      offset = 0; // markers carry the real time: each test starts there
      const s = sid();
      const alice = api.client('alice');
      const pushed = await alice.workspaces.push(s, 'w', await tree({ 'keep.bin': noise(600 * KIB, 6) }), {
        packBytes: 256 * KIB,
      });
      for (let i = 0; i < 3; i++) {
        offset += 2 * DAY;
        expect(await sweeper.sweepWorkspacePacks({ sessionId: s, deleteTaggedAfterMs: DAY })).toMatchObject({
          tagged: 0,
          deleted: 0,
          deadObjects: 0,
        });
      }
      const out = path.join(await temp(), 'out');
      await alice.workspaces.pull(s, 'w', pushed.snapshotId, out);
      expect(sha(await readFile(path.join(out, 'keep.bin')))).toBe(sha(noise(600 * KIB, 6)));
      // The session expires (no activity for the retention, 30 days): the store-wide sweep finds its
      // folder without a marker, deletes records and manifests, and tags the packs on its second pass.
      offset += 31 * DAY;
      expect(await alice.workspaces.list(s, 'w')).toEqual([]);
      const first = await sweeper.sweepWorkspacePacks({ deleteTaggedAfterMs: 7 * DAY });
      expect(first.deadObjects).toBeGreaterThanOrEqual(2);
      const packs = (await packsOf(s)).length;
      expect(packs).toBeGreaterThan(0);
      expect(
        (await sweeper.sweepWorkspacePacks({ deleteTaggedAfterMs: 7 * DAY })).tagged,
      ).toBeGreaterThanOrEqual(packs);
      offset += 8 * DAY;
      await sweeper.sweepWorkspacePacks({ deleteTaggedAfterMs: 7 * DAY });
      await sweeper.sweepWorkspacePacks({ deleteTaggedAfterMs: 7 * DAY });
      const left = (await driver.list({ prefix: `${api.prefix}alice/${s}/` })).objects.filter((o) =>
        o.key.includes('~wss~'),
      );
      expect(left).toEqual([]);
    });

    it("the deployment's sweep (runSweep) sweeps every user's packs, and deletes a deleted snapshot's when told to", async () => {
      offset = 0;
      const s = sid();
      const users = ['alice', 'bob'];
      const pushed = [];
      for (const [i, user] of users.entries())
        pushed.push(
          await api.client(user).workspaces.push(s, 'w', await tree({ 'a.bin': noise(300 * KIB, 10 + i) }), {
            packBytes: 256 * KIB,
          }),
        );
      // Bob's snapshot goes: only a sweep that reaches bob's folder can collect its packs.
      await api.client('bob').workspaces.delete(s, 'w', pushed[1]?.snapshotId as string);
      const bobPacks = async () =>
        (await driver.list({ prefix: `${api.prefix}bob/${s}/` })).objects.filter((o) =>
          o.key.includes('/p/'),
        );
      expect((await bobPacks()).length).toBeGreaterThan(0);
      const store = createStateStore({ driver, prefix: api.prefix, now });
      const lines: string[] = [];
      const logger = { info: (message: string) => lines.push(message) };
      const sweep = () => runSweep({ store, logger }, { deleteTaggedAfterMs: 7 * DAY, now });
      const first = await sweep();
      expect(first).toMatchObject({ expiredSessions: 0, batches: 0, complete: true });
      // Both users' live snapshots are seen (alice's earlier sessions too).
      expect(first.packs?.referenced).toBeGreaterThan(0);
      expect(first.packs?.workspaces).toBeGreaterThanOrEqual(2);
      expect(lines).toEqual(['sweep']);
      const lines2 = lines.length;
      await sweep();
      offset += 2 * 60 * 60_000; // past the presign expiry and the commit time
      // Unreferenced in two sweeps running, and old enough: tagged.
      expect((await sweep()).packs?.tagged).toBeGreaterThan(0);
      expect(lines.length).toBe(lines2 + 2);
      offset += 8 * DAY;
      await sweep();
      expect(await bobPacks()).toEqual([]);
      // Alice's snapshot still reads back whole.
      const out = path.join(await temp(), 'out');
      await api.client('alice').workspaces.pull(s, 'w', pushed[0]?.snapshotId as string, out);
      expect(sha(await readFile(path.join(out, 'a.bin')))).toBe(sha(noise(300 * KIB, 10)));
    });
  },
);
