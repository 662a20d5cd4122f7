/** The CI-sized soak: 8 agents x 60 turns, seeded, 2 agents per session, with and without the lock. */
import { describe, expect, inject, it } from 'vitest';
import { runSoak } from './soak.js';

describe('concurrency soak (CI size)', () => {
  const servers = inject('servers');
  const options = {
    agents: 8,
    turns: 60,
    seed: 7,
    s3Endpoint: servers.s3,
    bucket: servers.bucket,
    dynamoEndpoint: servers.dynamodb,
  };

  it.concurrent('with the lock: every turn appended exactly once, in order', async () => {
    const result = await runSoak(options, 'locked');
    expect(result.problems).toEqual([]);
    expect(result.acknowledged).toBe(480);
  });

  it.concurrent('without the lock: conditional appends lose nothing and double nothing', async () => {
    const result = await runSoak(options, 'unlocked');
    expect(result.problems).toEqual([]);
    expect(result.acknowledged).toBe(480);
    expect(result.conflictsRetried).toBeGreaterThan(0);
  });
});
