/**
 * The rendered lifecycle rules on Ceph RGW, where a lifecycle "day" lasts 10 seconds
 * (`rgw lc debug interval = 10`) and `radosgw-admin lc process` runs them: they expire exactly what
 * they should, an active session survives past its objects' nominal age, an idle one disappears whole.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { describe, expect, inject, it } from 'vitest';
import { ObjectNotFoundError } from '../../lib/drivers/errors.js';
import { createS3Client, createS3Driver } from '../../lib/drivers/s3.js';
import { applyS3Lifecycle } from '../../lib/lifecycle/apply.js';
import { createStateStore } from '../../lib/store/store.js';
import { rgwOptions } from '../backends.js';

const run = promisify(execFile);
const rgw = inject('servers').rgw;
const LC_DAY_MS = 10_000; // rgw lc debug interval
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!rgw)('lifecycle on Ceph RGW [rgw]', () => {
  it('expires markers after retention, state after the grace, keeps archives; a kept-alive session survives whole [rgw]', async () => {
    if (!rgw) return;
    // `radosgw-admin lc process` (Pacific) runs only the FIRST bucket of each lifecycle index shard
    // (it clears the shard's marker and stops after one entry); entries sort by bucket name, so a
    // name that sorts before every other test bucket's ('0' < any letter) is the one it runs, even
    // when another bucket with rules (bootstrap's) hashes to the same shard.
    const bucket = `0lc-${randomUUID().slice(0, 8)}`;
    const client = createS3Client({ endpoint: rgw.endpoint, credentials: rgw });
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    // State expires 8 lc-days after the markers: room for RGW's passes on a loaded machine (RGW
    // rounds a rule's day up to its next lifecycle boundary, and a pass may leave an eligible
    // object for the next one), while each phase can still tell the markers' rule from the state's.
    await applyS3Lifecycle(client, bucket, {
      retentionDays: 1,
      stateGraceDays: 8,
      archiveStorageClass: 'STANDARD_IA',
      archiveTransitionDays: 30,
    });
    const driver = createS3Driver(rgwOptions({ bucket }));
    const lcProcess = () => run('radosgw-admin', ['-c', rgw.conf, '-n', 'client.admin', 'lc', 'process']);
    const gone = async (key: string) =>
      driver.head(key).then(
        () => false,
        (e) => e instanceof ObjectNotFoundError,
      );

    // Raw objects, one of each kind.
    const putAt = Date.now();
    for (const kind of ['marker', 'state', 'archive'])
      await driver.put(`agent-state/raw/${kind}`, kind, { tags: { kind } });
    // A store in RGW's compressed time: retention 1 lc-day, grace 8, keep-alive 2 s.
    const day = LC_DAY_MS / 86_400_000;
    const store = createStateStore({
      driver,
      retentionDays: 1,
      stateGraceDays: 8 * day,
      keepAliveMs: 2000,
    }).forUser('u');
    await store.save('active', 'old', 'kept alive');
    await store.save('idle', 'old', 'left alone');
    await store.saveList('idle', 'l', [1, 2]);

    let ticks = 0;
    /** Activity on the active session (marker and old state refreshed) every 0.4 lc-days until `days` after the put. */
    const keepActiveUntil = async (days: number) => {
      while (Date.now() - putAt < days * LC_DAY_MS) {
        await sleep(LC_DAY_MS / 2.5);
        await store.save('active', 'tick', ticks++);
      }
    };
    /**
     * RGW's pass, again while `key` is there, until `days` after the put. The active session is kept
     * active beside the passes, not between them: on a loaded machine one pass can take longer than
     * an lc-day, which would leave the active marker unrefreshed past its retention.
     */
    const processUntilGone = async (key: string, days: number) => {
      let processing = true;
      const ticking = (async () => {
        while (processing) {
          await store.save('active', 'tick', ticks++);
          await sleep(LC_DAY_MS / 5);
        }
      })();
      try {
        await lcProcess();
        while (!(await gone(key)) && Date.now() - putAt < days * LC_DAY_MS) {
          await sleep(1000);
          await lcProcess();
        }
      } finally {
        processing = false;
        await ticking;
      }
    };

    // Past 1.6 lc-days: markers are eligible; state (9 lc-days) and archives are not.
    await keepActiveUntil(1.6);
    await processUntilGone('agent-state/raw/marker', 8);
    expect(await gone('agent-state/raw/marker')).toBe(true);
    expect(await gone('agent-state/raw/state')).toBe(false);
    expect(await gone('agent-state/raw/archive')).toBe(false);
    expect(await store.exists('idle')).toBe(false);
    expect(await store.get('idle', 'old')).toBeUndefined();
    expect(await store.exists('active')).toBe(true);

    // Past 10.1 lc-days: state is eligible too; the active session, refreshed, is whole.
    await keepActiveUntil(10.1);
    await processUntilGone('agent-state/raw/state', 14);
    expect(await gone('agent-state/raw/state')).toBe(true);
    expect(await gone('agent-state/raw/archive')).toBe(false);
    expect(await store.get('active', 'old')).toBe('kept alive');
    const idleLeft = (await driver.list({ prefix: 'agent-state/u/idle/' })).objects;
    expect(idleLeft).toEqual([]);
    client.destroy();
  });
});
