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
    const bucket = `lc-${randomUUID().slice(0, 8)}`;
    const client = createS3Client({ endpoint: rgw.endpoint, credentials: rgw });
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    await applyS3Lifecycle(client, bucket, {
      retentionDays: 1,
      stateGraceDays: 2,
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
    // A store in RGW's compressed time: retention 1 lc-day, grace 2, keep-alive 2 s.
    const day = LC_DAY_MS / 86_400_000;
    const store = createStateStore({
      driver,
      retentionDays: 1,
      stateGraceDays: 2 * day,
      keepAliveMs: 2000,
    }).forUser('u');
    await store.save('active', 'old', 'kept alive');
    await store.save('idle', 'old', 'left alone');
    await store.saveList('idle', 'l', [1, 2]);

    // Past 1.5 lc-days: markers are eligible; state and archives are not.
    for (let t = 0; t < 4; t++) {
      await sleep(LC_DAY_MS / 2.5);
      await store.save('active', 'tick', t); // activity: marker refreshed, old state refreshed
    }
    // RGW's lifecycle pass may leave an eligible object for its next pass (a busy machine): run it
    // again, while the state (eligible after 3 lc-days) cannot be yet.
    await lcProcess();
    while (!(await gone('agent-state/raw/marker')) && Date.now() - putAt < 2.4 * LC_DAY_MS) {
      await sleep(1000);
      await lcProcess();
    }
    expect(await gone('agent-state/raw/marker')).toBe(true);
    expect(await gone('agent-state/raw/state')).toBe(false);
    expect(await gone('agent-state/raw/archive')).toBe(false);
    expect(await store.exists('idle')).toBe(false);
    expect(await store.get('idle', 'old')).toBeUndefined();
    expect(await store.exists('active')).toBe(true);

    // Past 3.5 lc-days: state is eligible too; the active session, refreshed, is whole.
    for (let t = 4; t < 10; t++) {
      await sleep(LC_DAY_MS / 2.5);
      await store.save('active', 'tick', t);
    }
    await lcProcess();
    expect(await gone('agent-state/raw/state')).toBe(true);
    expect(await gone('agent-state/raw/archive')).toBe(false);
    expect(await store.get('active', 'old')).toBe('kept alive');
    const idleLeft = (await driver.list({ prefix: 'agent-state/u/idle/' })).objects;
    expect(idleLeft).toEqual([]);
    client.destroy();
  }, 90_000);
});
