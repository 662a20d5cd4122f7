/**
 * The LangGraph.js saver against the local API in-process: LangGraph's own
 * validation suite (through its library entry, with the opt-in delta-channel history tests) on the
 * memory and the fs driver, the HTTP budgets counted on the client's fetch, a put stopped between
 * its two writes, a 200-byte namespace and a 300-byte thread id, and deleteThread.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { RunnableConfig } from '@langchain/core/runnables';
import { type Checkpoint, emptyCheckpoint, TASKS } from '@langchain/langgraph-checkpoint';
import { deltaChannelHistoryTests, specTest } from '@langchain/langgraph-checkpoint-validation';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { langgraphBench } from '../../bench/frameworks/langgraph.js';
import { storeKey, threadSession } from '../../lib/adapters/langgraph.js';
import { SessionNotFoundError } from '../../lib/contract/errors.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { AgentStateSaver } from '../../lib/entries/langgraph.js';
import { localApi } from './langgraph-api.js';

// The suite's spec files call vitest's functions as globals (its CLI runs vitest with globals).
Object.assign(globalThis, { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach });

interface TaskLike {
  type: string;
  mode: string;
  name: string;
  tasks?: TaskLike[];
}
/** The tests registered under a suite: how many, and the names of those skipped. */
function registered(suite: TaskLike): { total: number; skipped: string[] } {
  if (suite.type === 'test') return { total: 1, skipped: suite.mode === 'run' ? [] : [suite.name] };
  const all = (suite.tasks ?? []).map(registered);
  return { total: all.reduce((n, x) => n + x.total, 0), skipped: all.flatMap((x) => x.skipped) };
}

for (const backend of ['memory', 'fs'] as const) {
  const name = `@langchain/langgraph-checkpoint-validation 1.1.1 (${backend} driver)`;
  describe(name, () => {
    let api: Awaited<ReturnType<typeof localApi>>;
    let expected: { total: number; skipped: string[] } | undefined;
    let ran = 0;
    beforeAll(async () => {
      api = await localApi(backend);
    });
    beforeEach(({ task }) => {
      ran++;
      let suite: TaskLike | undefined = task.suite;
      while (suite !== undefined && suite.name !== name) suite = (suite as { suite?: TaskLike }).suite;
      expected ??= suite && registered(suite);
    });
    afterAll(async () => {
      await api.close();
      const skipped = expected?.skipped.length ? expected.skipped.join('; ') : 'none';
      console.log(
        `validation suite (${backend} driver): ${ran} tests ran of ${expected?.total} registered; skipped: ${skipped}`,
      );
      expect(ran).toBe((expected?.total ?? 0) - (expected?.skipped.length ?? 0));
      expect(expected?.total).toBeGreaterThan(700);
    });
    const initializer = {
      checkpointerName: 'agent-state-store',
      // Each saver is a user of its own: what one wrote, the next does not list.
      createCheckpointer: () => new AgentStateSaver({ client: api.client(`lg-${randomUUID()}`).client }),
      destroyCheckpointer: (saver: AgentStateSaver) => saver.client.deleteAllSessions(),
    };
    specTest(initializer);
    deltaChannelHistoryTests(initializer);
  });
}

/** A checkpoint as LangGraph's loop makes one: `messages` grows each step, `plan` changes once. */
function checkpointAt(step: number): { checkpoint: Checkpoint; newVersions: Record<string, number> } {
  const checkpoint: Checkpoint = {
    ...emptyCheckpoint(),
    id: `ckpt-${String(step).padStart(6, '0')}`,
    channel_values: {
      messages: Array.from({ length: step + 1 }, (_, i) => ({
        role: i % 2 ? 'ai' : 'human',
        content: `m${i}`,
      })),
      plan: { steps: ['read', 'write'] },
    },
    channel_versions: { messages: step + 1, plan: 1 },
  };
  return { checkpoint, newVersions: step === 0 ? { messages: 1, plan: 1 } : { messages: step + 1 } };
}

const meta = (step: number) => ({ source: step === 0 ? 'input' : 'loop', step, parents: {} }) as const;

async function toArray<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const x of items) all.push(x);
  return all;
}

/** `steps` supersteps on a thread as LangGraph runs them: put, then the task's writes. */
async function run(saver: AgentStateSaver, thread: string, steps: number, ns = '', from = 0) {
  let config: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: ns } };
  for (let step = from; step < from + steps; step++) {
    const { checkpoint, newVersions } = checkpointAt(step);
    config = await saver.put(config, checkpoint, meta(step), newVersions);
    await saver.putWrites(config, [['messages', { role: 'ai', content: `w${step}` }]], `task-${step}`);
  }
  return config;
}

describe('AgentStateSaver', () => {
  let api: Awaited<ReturnType<typeof localApi>>;
  /** Set to make the driver refuse every list write (a crash between a commit's value and its list). */
  let failLists = false;
  const failing = (driver: ObjectStoreDriver): ObjectStoreDriver =>
    new Proxy(driver, {
      get(target, name) {
        const member = Reflect.get(target, name, target);
        if (name !== 'put' || typeof member !== 'function')
          return typeof member === 'function' ? member.bind(target) : member;
        return (key: string, ...rest: unknown[]) => {
          if (failLists && key.includes('.list'))
            return Promise.reject(new Error('injected: the process died here'));
          return member.call(target, key, ...rest);
        };
      },
    });
  beforeAll(async () => {
    api = await localApi('memory', { wrap: failing });
  });
  afterAll(() => api.close());

  it('keeps the budgets in steady state: put 1, putWrites 1, latest getTuple 1, list of 10 2 calls', async () => {
    const c = api.client('budgets');
    const saver = new AgentStateSaver({ client: c.client });
    const thread = 'budget-thread';
    let config = await run(saver, thread, 12);
    const measured: Record<string, number> = {};
    const count = async <T>(name: string, op: () => Promise<T>): Promise<T> => {
      c.reset();
      const result = await op();
      measured[name] = c.sent.length;
      return result;
    };
    const next = checkpointAt(12);
    config = await count('put', () => saver.put(config, next.checkpoint, meta(12), next.newVersions));
    await count('putWrites', () => saver.putWrites(config, [['messages', 'late']], 'task-12'));
    const latest = await count('getTuple (latest)', () =>
      saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: '' } }),
    );
    const listed = await count('list (limit 10)', () =>
      toArray(saver.list({ configurable: { thread_id: thread, checkpoint_ns: '' } }, { limit: 10 })),
    );
    const byId = await count('getTuple (by id, recent)', () =>
      saver.getTuple({
        configurable: { thread_id: thread, checkpoint_ns: '', checkpoint_id: 'ckpt-000005' },
      }),
    );
    console.log(`langgraph budgets, steady state: ${JSON.stringify(measured)}`);
    expect(measured).toEqual({
      put: 1,
      putWrites: 1,
      'getTuple (latest)': 1,
      'list (limit 10)': 2,
      'getTuple (by id, recent)': 1,
    });
    // What they answered is the thread as written: the latest with its writes, its plan carried
    // over from step 0 (plan was not in newVersions since), the parent chain, newest first.
    expect(latest?.checkpoint.id).toBe('ckpt-000012');
    expect(latest?.checkpoint.channel_values).toEqual(next.checkpoint.channel_values);
    expect(latest?.pendingWrites).toEqual([['task-12', 'messages', 'late']]);
    expect(latest?.parentConfig?.configurable?.checkpoint_id).toBe('ckpt-000011');
    expect(listed.map((t) => t.checkpoint.id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `ckpt-${String(12 - i).padStart(6, '0')}`),
    );
    expect(listed[3]?.pendingWrites).toEqual([['task-9', 'messages', { role: 'ai', content: 'w9' }]]);
    expect(byId?.checkpoint.channel_values).toEqual(checkpointAt(5).checkpoint.channel_values);
  });

  it('adds at most one read on the first call of a saver on a thread', async () => {
    const thread = 'first-calls';
    await run(new AgentStateSaver({ client: api.client('first').client }), thread, 5);
    const reader = api.client('first');
    const fresh = new AgentStateSaver({ client: reader.client });
    const latest = await fresh.getTuple({ configurable: { thread_id: thread, checkpoint_ns: '' } });
    expect(latest?.checkpoint.id).toBe('ckpt-000004');
    const firstGet = reader.sent.length;
    reader.reset();
    const next = checkpointAt(5);
    await fresh.put(latest?.config ?? {}, next.checkpoint, meta(5), next.newVersions);
    const putAfterRead = reader.sent.length;
    // A saver that writes without reading first learns the index's state from the refusal.
    const blind = api.client('first');
    const writer = new AgentStateSaver({ client: blind.client });
    const after = checkpointAt(6);
    const config = { configurable: { thread_id: thread, checkpoint_ns: '', checkpoint_id: 'ckpt-000005' } };
    await writer.put(config, after.checkpoint, meta(6), after.newVersions);
    console.log(
      `langgraph first calls: getTuple (latest) ${firstGet}, then put ${putAfterRead}; put without a read ${blind.sent.length} (${blind.sent.join(', ')})`,
    );
    expect(firstGet).toBe(2);
    expect(putAfterRead).toBe(1);
    // One read: the parent (its plan is carried over) with the index's end, then the commit.
    expect(blind.sent).toEqual([
      'POST /v1/sessions/first-calls/snapshot',
      'POST /v1/sessions/first-calls/commits',
    ]);
    const tuple = await writer.getTuple({ configurable: { thread_id: thread, checkpoint_ns: '' } });
    expect(tuple?.checkpoint.id).toBe('ckpt-000006');
    expect(tuple?.checkpoint.channel_values).toEqual(after.checkpoint.channel_values);
  });

  it('reads index pages until a filtered list has its limit (the cost counted)', async () => {
    const c = api.client('filters');
    const saver = new AgentStateSaver({ client: c.client });
    await run(saver, 'filtered', 250);
    c.reset();
    const found = await toArray(
      saver.list(
        { configurable: { thread_id: 'filtered', checkpoint_ns: '' } },
        { filter: { source: 'input' }, limit: 1 },
      ),
    );
    const calls = c.sent.length;
    c.reset();
    const loops = await toArray(
      saver.list(
        { configurable: { thread_id: 'filtered', checkpoint_ns: '' } },
        { filter: { source: 'loop' }, limit: 5 },
      ),
    );
    console.log(
      `langgraph list with filter, 250 checkpoints: the one match at the start ${calls} calls (${c.sent.length} for 5 matches at the end)`,
    );
    expect(found.map((t) => t.checkpoint.id)).toEqual(['ckpt-000000']);
    expect(loops.map((t) => t.metadata?.step)).toEqual([249, 248, 247, 246, 245]);
    // Three index pages of 100 (the last 100 in a snapshot), then one snapshot of the match.
    expect(calls).toBeGreaterThanOrEqual(4);
    expect(c.sent.length).toBe(2);
  });

  it('a put stopped between its value and its index append leaves nothing either read sees', async () => {
    const user = 'crash';
    const saver = new AgentStateSaver({ client: api.client(user, { attempts: 1 }).client });
    const thread = 'crash-thread';
    const root = { configurable: { thread_id: thread, checkpoint_ns: '' } };
    const first = await run(saver, thread, 1);
    const lost = checkpointAt(1);
    failLists = true;
    try {
      await expect(saver.put(first, lost.checkpoint, meta(1), lost.newVersions)).rejects.toThrow();
    } finally {
      failLists = false;
    }
    // The value was written: the commit stopped between its parts.
    const session = threadSession(thread);
    expect(await api.store(user).get(session, storeKey('c', ['', lost.checkpoint.id]))).toBeDefined();
    const views = async (s: AgentStateSaver) => ({
      byId: (await s.getTuple({ configurable: { ...root.configurable, checkpoint_id: lost.checkpoint.id } }))
        ?.checkpoint.id,
      latest: (await s.getTuple(root))?.checkpoint.id,
      listed: (await toArray(s.list(root))).map((t) => t.checkpoint.id),
      all: (await toArray(s.list({}))).map((t) => t.checkpoint.id),
    });
    const nothing = { byId: undefined, latest: 'ckpt-000000', listed: ['ckpt-000000'], all: ['ckpt-000000'] };
    expect(await views(saver)).toEqual(nothing);
    expect(await views(new AgentStateSaver({ client: api.client(user).client }))).toEqual(nothing);
    // Another checkpoint takes the index position the lost value names: still not answered.
    const other = { ...checkpointAt(1).checkpoint, id: 'ckpt-000001-b' };
    await saver.put(first, other, meta(1), { messages: 2 });
    expect(await views(saver)).toEqual({
      byId: undefined,
      latest: 'ckpt-000001-b',
      listed: ['ckpt-000001-b', 'ckpt-000000'],
      all: ['ckpt-000001-b', 'ckpt-000000'],
    });
    // The put done again (LangGraph runs the step again) is answered like any other.
    await saver.put(first, lost.checkpoint, meta(1), lost.newVersions);
    const again = await views(new AgentStateSaver({ client: api.client(user).client }));
    expect(again.byId).toBe('ckpt-000001');
    // Newest first in the order of the puts (LangGraph's ids grow with time: the same as by id).
    expect(again.listed).toEqual(['ckpt-000001', 'ckpt-000001-b', 'ckpt-000000']);
  });

  it('maps a 200-byte checkpoint_ns and a 300-byte thread id to h.<sha256> keys and back', async () => {
    const user = 'long-keys';
    const c = api.client(user);
    const saver = new AgentStateSaver({ client: c.client });
    const ns = `parent:${'ü'.repeat(40)}|child:${'x'.repeat(106)}`;
    const thread = `thread/${'t'.repeat(293)}`;
    expect(Buffer.byteLength(ns)).toBe(200);
    expect(Buffer.byteLength(thread)).toBe(300);
    const config = await run(saver, thread, 3, ns);
    const hashed = (kind: string, parts: string[]) =>
      `${kind}:h.${createHash('sha256').update(JSON.stringify(parts)).digest('hex')}`;
    const session = `h.${createHash('sha256').update(thread).digest('hex')}`;
    expect(threadSession(thread)).toBe(session);
    const keys = await c.client.listKeys(session);
    expect(keys.lists.map((l) => l.key).sort()).toEqual(
      [hashed('i', [ns]), ...[0, 1, 2].map((i) => hashed('w', [ns, `ckpt-00000${i}`]))].sort(),
    );
    expect(keys.values.map((v) => v.key).sort()).toEqual(
      [0, 1, 2].map((i) => hashed('c', [ns, `ckpt-00000${i}`])),
    );
    // The originals are kept in the index entries.
    const index = await api.store(user).getList<{ thread: string; ns: string }>(session, hashed('i', [ns]));
    expect(index.items.map((e) => [e.thread, e.ns])).toEqual([
      [thread, ns],
      [thread, ns],
      [thread, ns],
    ]);
    const tuple = await new AgentStateSaver({ client: api.client(user).client }).getTuple(config);
    expect(tuple?.config).toEqual({
      configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: 'ckpt-000002' },
    });
    expect(tuple?.pendingWrites).toEqual([['task-2', 'messages', { role: 'ai', content: 'w2' }]]);
    const all = await toArray(saver.list({}));
    expect(all.map((t) => [t.config.configurable?.thread_id, t.config.configurable?.checkpoint_ns])).toEqual([
      [thread, ns],
      [thread, ns],
      [thread, ns],
    ]);
    expect(storeKey('i', ['short'])).toBe('i:["short"]');
  });

  it('deleteThread removes the thread and all it holds, and nothing else', async () => {
    const user = 'deletes';
    const saver = new AgentStateSaver({ client: api.client(user).client });
    for (const thread of ['t1', 't2']) {
      await run(saver, thread, 2);
      await run(saver, thread, 2, 'child:1');
    }
    const sends = await saver.put(
      { configurable: { thread_id: 't1', checkpoint_ns: '' } },
      { ...checkpointAt(9).checkpoint },
      meta(9),
      {},
    );
    await saver.putWrites(sends, [[TASKS, 'send']], 'task-9');
    await saver.deleteThread('t1');
    expect(await api.store(user).exists('t1')).toBe(false);
    await expect(saver.client.listKeys('t1')).rejects.toBeInstanceOf(SessionNotFoundError);
    for (const ns of ['', 'child:1']) {
      expect(await saver.getTuple({ configurable: { thread_id: 't1', checkpoint_ns: ns } })).toBeUndefined();
      expect(await toArray(saver.list({ configurable: { thread_id: 't1', checkpoint_ns: ns } }))).toEqual([]);
      expect(
        (await saver.getTuple({ configurable: { thread_id: 't2', checkpoint_ns: ns } }))?.checkpoint.id,
      ).toBe('ckpt-000001');
    }
    expect(await toArray(saver.list({ configurable: { thread_id: 't1' } }))).toEqual([]);
    expect((await toArray(saver.list({}))).map((t) => t.config.configurable?.thread_id)).toEqual([
      't2',
      't2',
      't2',
      't2',
    ]);
    // The thread starts again from nothing.
    await run(saver, 't1', 1);
    expect(
      (await toArray(saver.list({ configurable: { thread_id: 't1' } }))).map((t) => t.checkpoint.id),
    ).toEqual(['ckpt-000000']);
  });
});

describe('AgentStateSaver, values and sizes', () => {
  let api: Awaited<ReturnType<typeof localApi>>;
  beforeAll(async () => {
    api = await localApi('fs', { bodyLimitBytes: 64 * 1024 });
  });
  afterAll(() => api.close());

  it('stores a checkpoint larger than a request body on its own, then commits its index entry', async () => {
    const c = api.client('big');
    const saver = new AgentStateSaver({ client: c.client, bodyLimitBytes: 64 * 1024 });
    const root = { configurable: { thread_id: 'big', checkpoint_ns: '' } };
    const first = await run(saver, 'big', 1);
    const big = checkpointAt(1);
    big.checkpoint.channel_values.messages = Array.from({ length: 400 }, (_, i) => ({
      content: `${i} `.repeat(100),
    }));
    c.reset();
    await saver.put(first, big.checkpoint, meta(1), big.newVersions);
    const putCalls = [...c.sent];
    c.reset();
    const latest = await new AgentStateSaver({ client: c.client }).getTuple(root);
    const short = (calls: string[]) =>
      calls.map((x) => x.replace(/(\/blobs\/|\/state\/).*/, '$1…')).join(', ');
    console.log(
      `langgraph checkpoint over the 64 KiB body limit: put ${short(putCalls)}; read ${short(c.sent)}`,
    );
    // The value's direct upload (start, PUT, complete), then the commit of its index entry.
    expect(putCalls.map((x) => x.replace(/(\/blobs\/|\/state\/).*/, '$1…'))).toEqual([
      'POST /v1/sessions/big/state/…',
      'PUT /v1/blobs/…',
      'POST /v1/sessions/big/state/…',
      'POST /v1/sessions/big/commits',
    ]);
    // A saver that does not know the limit has its commit refused (413) first, then does the same.
    const unaware = api.client('big');
    const next = { ...big.checkpoint, id: 'ckpt-000002' };
    await new AgentStateSaver({ client: unaware.client }).put(
      latest?.config ?? {},
      next,
      meta(2),
      big.newVersions,
    );
    expect(unaware.sent.filter((x) => x.endsWith('/commits'))).toHaveLength(2);
    expect(latest?.checkpoint.channel_values).toEqual(big.checkpoint.channel_values);
    const listed = await toArray(saver.list(root));
    expect(listed.map((t) => t.checkpoint.id)).toEqual(['ckpt-000002', 'ckpt-000001', 'ckpt-000000']);
  });

  it('round-trips bytes, lone surrogates, deep nesting and parallel tasks’ writes', async () => {
    const saver = new AgentStateSaver({ client: api.client('odd').client });
    let deep: unknown = 'bottom';
    for (let i = 0; i < 150; i++) deep = { d: deep };
    const values = { bytes: new Uint8Array([0, 1, 254, 255]), lone: 'a\ud800b', deep, 'über/..': ['x'] };
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: 'odd-1',
      channel_values: values,
      channel_versions: { bytes: 1, lone: 1, deep: 1, 'über/..': 1 },
    };
    const thread = 'a/b/../~odd thread ü';
    const config = await saver.put(
      { configurable: { thread_id: thread, checkpoint_ns: '' } },
      checkpoint,
      meta(0),
      checkpoint.channel_versions,
    );
    // Parallel tasks write to one checkpoint at once: each write kept, answered in task order.
    await Promise.all(
      ['t3', 't1', 't2', 't0'].map((task) => saver.putWrites(config, [['out', `${task}\ud800`]], task)),
    );
    const tuple = await new AgentStateSaver({ client: api.client('odd').client }).getTuple(config);
    expect(tuple?.checkpoint.channel_values).toEqual(values);
    expect(tuple?.pendingWrites).toEqual(['t0', 't1', 't2', 't3'].map((t) => [t, 'out', `${t}\ud800`]));
    expect(threadSession(thread)).toBe(thread);
  });

  it('runs the bench operations (each once, HTTP calls counted)', async () => {
    const c = api.client('bench');
    const ops = await langgraphBench.prepare(c.client);
    const counted: string[] = [];
    for (const op of ops) {
      c.reset();
      await op.run();
      counted.push(`${op.name}: ${c.sent.length}`);
    }
    console.log(`langgraph bench operations, HTTP calls: ${counted.join('; ')}`);
    expect(counted).toContain('put (the next checkpoint): 1');
    expect(counted).toContain('getTuple (latest): 1');
    expect(counted).toContain('list (limit 10): 2');
  });
});
