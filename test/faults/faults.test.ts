/**
 * Faults: S3 or OSS (500, 503, connection resets, answers lost after the write) and DynamoDB
 * (throttling, 500, resets) injected at random into every request of agents' turns, through private
 * fronts (scenario.ts). With the SDKs' and the drivers' retries and the callers' own retries, every
 * acknowledged write reads back exactly once, and no read is ever torn.
 */
import { describe, expect, inject, it } from 'vitest';
import { runFaultScenario } from './scenario.js';

const servers = inject('servers');
const portOf = (url: string) => Number(new URL(url).port);

describe.each(['s3', 'oss'] as const)(
  'faults injected at random points of every operation (%s)',
  (backend) => {
    it('loses no acknowledged write and shows no torn read', async () => {
      const o = await runFaultScenario(backend, {
        s3rverPort: portOf(servers.s3rver),
        dynamoPort: portOf(servers.dynamodb),
        bucket: servers.bucket,
      });
      console.log(
        `faults (${backend}): ${o.operations} operations, ${o.injectedStore} object-store and ${o.injectedDynamo} DynamoDB faults injected, ${o.callerRetries} caller retries, ${o.lost} acknowledged writes lost or doubled, ${o.tornReads} torn reads`,
      );
      expect(o.injectedStore + o.injectedDynamo).toBeGreaterThan(20);
      expect(o.lost).toBe(0);
      expect(o.tornReads).toBe(0);
      expect(o.final).toEqual(o.acknowledged);
      expect(o.plan).toEqual({ turn: 39 });
    });
  },
);
