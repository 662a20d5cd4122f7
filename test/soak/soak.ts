/**
 * The concurrency soak: agents running turns against the local server (the same router) backed by
 * S3 (s3rver through the S3 front) and the DynamoDB lock (dynalite), two agents per session.
 * - locked: every turn holds the session lock and appends with its fencing token;
 * - unlocked: turns append with `expectedCount` only and retry on conflicts.
 * Either way every acknowledged turn must be in its session's list exactly once, each agent's in order.
 */
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SignJWT } from 'jose';
import { createHttpClient } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import { AppendConflictError, LockConflictError } from '../../lib/contract/errors.js';
import { createS3Driver } from '../../lib/drivers/s3.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createDynamoDbLock, createLockTable } from '../../lib/lock/dynamodb.js';

export interface SoakOptions {
  agents: number;
  turns: number;
  seed: number;
  s3Endpoint: string;
  bucket: string;
  dynamoEndpoint: string;
  /** Called after each acknowledged turn with the number so far. */
  progress?: (acknowledged: number) => void;
}

export interface SoakResult {
  mode: 'locked' | 'unlocked';
  agents: number;
  turns: number;
  acknowledged: number;
  conflictsRetried: number;
  lockWaits: number;
  /** Acquires that waited their whole `waitMs` and were asked again (the agent keeps its turn). */
  lockTimeouts: number;
  /** Longest wait for the lock, and longest hold, in ms. */
  maxWaitMs: number;
  maxHoldMs: number;
  seconds: number;
  /** Problems found; empty when every acknowledged turn is there exactly once and in order. */
  problems: string[];
}

export async function runSoak(options: SoakOptions, mode: 'locked' | 'unlocked'): Promise<SoakResult> {
  const secret = `soak-${options.seed}`;
  const config = loadConfig({
    STORE_BACKEND: 'memory',
    AUTH_JWT_SECRET: secret,
    LOG_LEVEL: 'SILENT',
    STATE_PREFIX: `soak-${options.seed}-${mode}/`,
  });
  const dynamo = new DynamoDBClient({
    endpoint: options.dynamoEndpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'soak', secretAccessKey: 'soak' },
  });
  const tableName = `soak-${options.seed}-${mode}`;
  await createLockTable(dynamo, tableName);
  const driver = createS3Driver({
    bucket: options.bucket,
    endpoint: options.s3Endpoint,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  const server = createNodeServer(
    createApp(config, { driver, lock: createDynamoDbLock({ tableName, client: dynamo }) }).handle,
    config.BODY_LIMIT_BYTES,
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sessions = Math.ceil(options.agents / 2);
  const tokens = await Promise.all(
    Array.from({ length: sessions }, (_, s) =>
      new SignJWT({ sub: `soak-user-${s}` })
        .setProtectedHeader({ alg: 'HS256' })
        .setExpirationTime('2h')
        .sign(new TextEncoder().encode(secret)),
    ),
  );
  let conflictsRetried = 0;
  let lockWaits = 0;
  let lockTimeouts = 0;
  let maxWaitMs = 0;
  let maxHoldMs = 0;
  const acknowledged: Array<{ agent: number; turn: number }> = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: options.agents }, async (_, agent) => {
      const s = agent % sessions;
      const client = createHttpClient({ baseUrl, token: tokens[s] });
      const session = `sandbox/session/${s}`;
      let state = (options.seed * 7919 + agent * 104729) >>> 0;
      const think = () => {
        // A seeded think time between turns (agents wait on their model between turns).
        state = (Math.imul(state, 1103515245) + 12345) >>> 0;
        return new Promise((r) => setTimeout(r, 50 + (state % 200)));
      };
      for (let turn = 0; turn < options.turns; turn++) {
        await think();
        const item = { agent, turn };
        if (mode === 'locked') {
          const asked = performance.now();
          let lease: Awaited<ReturnType<typeof client.acquireLock>>;
          for (;;) {
            try {
              lease = await client.acquireLock(session, { waitMs: 10_000, leaseMs: 10_000 });
              break;
            } catch (error) {
              // Held past the wait (a slow turn under load): an agent asks again.
              if (!(error instanceof LockConflictError)) throw error;
              lockTimeouts++;
            }
          }
          maxWaitMs = Math.max(maxWaitMs, performance.now() - asked);
          const held = performance.now();
          try {
            const { count, hash } = await client.getList(session, 'turns', { limit: 0 });
            await client.appendList(session, 'turns', [item], {
              expectedCount: count,
              expectedHash: hash,
              token: lease.token,
            });
          } finally {
            await client.releaseLock(session, lease);
            maxHoldMs = Math.max(maxHoldMs, performance.now() - held);
          }
          lockWaits++;
        } else {
          for (;;) {
            const { count, hash } = await client.getList(session, 'turns', { limit: 0 });
            try {
              await client.appendList(session, 'turns', [item], { expectedCount: count, expectedHash: hash });
              break;
            } catch (error) {
              if (!(error instanceof AppendConflictError)) throw error;
              conflictsRetried++;
            }
          }
        }
        acknowledged.push(item);
        options.progress?.(acknowledged.length);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const problems: string[] = [];
  for (let s = 0; s < sessions; s++) {
    const client = createHttpClient({ baseUrl, token: tokens[s] });
    const { items } = await client.getList<{ agent: number; turn: number }>(`sandbox/session/${s}`, 'turns');
    const agents = Array.from({ length: options.agents }, (_, a) => a).filter((a) => a % sessions === s);
    for (const a of agents) {
      const mine = items.filter((i) => i.agent === a).map((i) => i.turn);
      const expected = acknowledged.filter((i) => i.agent === a).map((i) => i.turn);
      if (JSON.stringify(mine) !== JSON.stringify(expected)) {
        problems.push(
          `session ${s} agent ${a}: ${mine.length} turns stored, ${expected.length} acknowledged, in order: ${JSON.stringify(mine) === JSON.stringify([...mine].sort((x, y) => x - y))}`,
        );
      }
    }
    if (items.length !== agents.length * options.turns)
      problems.push(`session ${s}: ${items.length} items, expected ${agents.length * options.turns}`);
  }
  await new Promise<void>((r) => server.close(() => r()));
  dynamo.destroy();
  await driver.close();
  return {
    mode,
    agents: options.agents,
    turns: options.turns,
    acknowledged: acknowledged.length,
    conflictsRetried,
    lockWaits,
    lockTimeouts,
    maxWaitMs,
    maxHoldMs,
    seconds,
    problems,
  };
}
