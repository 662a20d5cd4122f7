/**
 * The OpenAI Agents SDK (JS) `Session` on the store, against the local API
 * started in-process. It behaves as the SDK's own `MemorySession` (its tests ported below), runs a
 * real `run()` with a scripted model and a tool approval across a reloaded session, keeps an append
 * racing a `popItem` (the truncate is conditional), round-trips a 5 MB item, and each operation
 * takes a counted number of HTTP calls.
 */
import {
  Agent,
  type AgentInputItem,
  MemorySession,
  OutputGuardrailTripwireTriggered,
  Runner,
  RunState,
  type SessionHistoryTransactionArgs,
  setTracingDisabled,
  tool,
  UserError,
} from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CommitPartialError } from '../../lib/contract/errors.js';
import { EMPTY_HASH } from '../../lib/contract/hash.js';
import { OpenAIAgentsSession } from '../../lib/entries/openai-agents.js';
import {
  type Call,
  type CountingClient,
  importInChild,
  type LocalApi,
  ScriptedModel,
  startApi,
} from './openai-agents-api.js';

setTracingDisabled(true);

const user = (text: string): AgentInputItem => ({ role: 'user', content: [{ type: 'input_text', text }] });

/**
 * Each call as the client method that makes it (`appendList`, `commit`, …); `direct GET` / `direct
 * PUT` for a presigned transfer straight to storage.
 */
const kinds = (calls: readonly Call[]) =>
  calls.map(({ method, path }) => {
    // The fs driver's presigned URLs are the local server's `/v1/blobs/…`.
    if (!path.startsWith('/v1/sessions/')) return `direct ${method}`;
    // /v1/sessions/<session>/<kind>/<key>/<rest…>
    const [, , , , kind, , ...rest] = path.split('/');
    const at = rest.join('/');
    if (kind === 'lists') {
      if (at === 'items') return 'appendList';
      if (at === 'truncate') return 'truncateList';
      return method === 'DELETE' ? 'deleteList' : 'getList';
    }
    if (kind === 'state') {
      if (at === 'uploads') return 'createValueUpload';
      if (at.startsWith('uploads/')) return 'commitValueUpload';
      return method === 'PUT' ? 'save' : method === 'DELETE' ? 'deleteKey' : 'get';
    }
    return { snapshot: 'snapshot', commits: 'commit', keys: 'listKeys' }[kind ?? ''] ?? `${method} ${path}`;
  });

let api: LocalApi;
let n = 0;
/** A session on a new store session, through its own counting client. */
function fresh(sessionId = `s-${++n}`) {
  const counting = api.client();
  return { counting, session: new OpenAIAgentsSession({ store: counting.client, sessionId }), sessionId };
}
/** The same store session through another client: what a reload sees. */
const reload = (sessionId: string) => new OpenAIAgentsSession({ store: api.client().client, sessionId });

beforeAll(async () => {
  api = await startApi('memory');
});
afterAll(async () => {
  await api?.close();
});

// Ported from openai/openai-agents-js, packages/agents-core/test/memorySession.test.ts at tag
// v0.14.3 (commit 94a3edc3e5318fdbc4ceb045df4dad934ca4ab2b; the file as last changed by
// 31bc820b6efe3807ae2d3e83866da28746332fb1). Each session starts from the items the SDK's test gives
// `initialItems`, added through `addItems`; every read after a write also goes through a reloaded
// session (another client), since the items are persisted. Not ported: the two logger tests (the
// adapter logs nothing), `applyHistoryMutations` (an optional capability the adapter leaves out),
// and the shared-memory `Uint8Array` test: a JSON store cannot hold binary exactly, so binary
// metadata is refused before anything is written (asserted below instead).
describe('the MemorySession behaviours, on the store', () => {
  async function withItems(items: AgentInputItem[]) {
    const made = fresh();
    await made.session.addItems(items);
    return made;
  }

  it('stores and retrieves items', async () => {
    const initialItems = [user('hello')];
    const { session, sessionId } = await withItems(initialItems);
    expect(await session.getSessionId()).toBe(sessionId);
    expect(await session.getItems()).toEqual(initialItems);

    const newItems = [user('one'), user('two')];
    await session.addItems(newItems);
    expect(await session.getItems()).toEqual([...initialItems, ...newItems]);
    expect(await reload(sessionId).getItems()).toEqual([...initialItems, ...newItems]);
    expect(await session.getItems(2)).toEqual(newItems);

    expect(await session.popItem()).toEqual(newItems[1]);
    expect(await session.getItems()).toEqual([...initialItems, newItems[0]]);
    expect(await reload(sessionId).getItems()).toEqual([...initialItems, newItems[0]]);

    await session.clearSession();
    expect(await session.getItems()).toEqual([]);
    expect(await session.getItems(3)).toEqual([]);
    expect(await session.popItem()).toBeUndefined();
    expect(await reload(sessionId).getItems()).toEqual([]);
  });

  it('names a session with a new UUID when given none, as MemorySession does', async () => {
    const [a, b] = [0, 1].map(() => new OpenAIAgentsSession({ store: api.client().client }));
    const ids = await Promise.all([a?.getSessionId(), b?.getSessionId()]);
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(ids[0]).not.toBe(ids[1]);
    await a?.addItems([user('hi')]);
    expect(await reload(ids[0] as string).getItems()).toEqual([user('hi')]);
  });

  it('returns clones so external mutations do not persist', async () => {
    const initial = user('start');
    const { session } = await withItems([initial]);
    const items = await session.getItems();
    expect(items[0]).not.toBe(initial);
    (items[0] as { content: unknown }).content = 'mutated';
    expect(await session.getItems()).toEqual([user('start')]);

    const next = user('next');
    await session.addItems([next]);
    (next as { content: unknown }).content = 'mutated';
    expect(await session.getItems()).toEqual([user('start'), user('next')]);

    const popped = await session.popItem();
    expect(popped).toEqual(user('next'));
    if (popped) (popped as { content: unknown }).content = 'mutated';
    expect(await session.getItems()).toEqual([user('start')]);
  });

  it('applies append transactions idempotently', async () => {
    const { session, sessionId } = await withItems([user('start')]);
    const appended = user('committed');
    const args = {
      operationId: 'operation-append-1',
      transaction: { type: 'append_items' as const, items: [appended] },
    };
    await session.applyHistoryTransaction(args);
    (appended as { content: unknown }).content = 'mutated';
    await session.addItems([user('later')]);
    // The replay through another client: the operation's record is in the store, not in memory.
    await reload(sessionId).applyHistoryTransaction({
      operationId: args.operationId,
      transaction: { type: 'append_items', items: [user('committed')] },
    });
    expect(await session.getItems()).toEqual([user('start'), user('committed'), user('later')]);
  });

  it('replaces an exact history suffix idempotently', async () => {
    const prefix = user('start');
    const expected = user('blocked');
    const replacement = user('accepted');
    const { session, sessionId } = await withItems([prefix, expected]);
    const transaction = {
      operationId: 'operation-replace-1',
      transaction: {
        type: 'replace_suffix' as const,
        expectedSuffix: [expected],
        replacement: [replacement],
      },
    };
    await session.applyHistoryTransaction(transaction);
    await session.addItems([user('later')]);
    await reload(sessionId).applyHistoryTransaction(transaction);
    expect(await session.getItems()).toEqual([prefix, replacement, user('later')]);
  });

  it('rejects a suffix mismatch without recording the operation', async () => {
    const start = user('start');
    const { session } = await withItems([start]);
    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-replace-after-conflict',
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: [user('different')],
          replacement: [user('accepted')],
        },
      }),
    ).rejects.toThrow('suffix no longer matches');
    expect(await session.getItems()).toEqual([start]);
    await session.applyHistoryTransaction({
      operationId: 'operation-replace-after-conflict',
      transaction: { type: 'replace_suffix', expectedSuffix: [start], replacement: [user('accepted')] },
    });
    expect(await session.getItems()).toEqual([user('accepted')]);
  });

  it('rejects operation ID reuse with different content', async () => {
    const { session, sessionId } = fresh();
    await session.applyHistoryTransaction({
      operationId: 'operation-conflict',
      transaction: { type: 'append_items', items: [user('first')] },
    });
    const reuse = reload(sessionId).applyHistoryTransaction({
      operationId: 'operation-conflict',
      transaction: { type: 'append_items', items: [user('second')] },
    });
    await expect(reuse).rejects.toThrow('already applied with a different transaction');
    await expect(reuse).rejects.toBeInstanceOf(UserError);
    expect(await session.getItems()).toEqual([user('first')]);
  });

  it('records an empty append transaction', async () => {
    const { session } = fresh();
    await session.applyHistoryTransaction({
      operationId: 'operation-empty',
      transaction: { type: 'append_items', items: [] },
    });
    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-empty',
        transaction: { type: 'append_items', items: [user('unexpected')] },
      }),
    ).rejects.toThrow('already applied with a different transaction');
    expect(await session.getItems()).toEqual([]);
  });

  it('resets transaction identities when the session is cleared', async () => {
    const { session } = fresh();
    const transaction = {
      operationId: 'operation-after-reset',
      transaction: { type: 'append_items' as const, items: [user('committed')] },
    };
    await session.applyHistoryTransaction(transaction);
    await session.clearSession();
    await session.applyHistoryTransaction(transaction);
    expect(await session.getItems()).toEqual([user('committed')]);
  });

  it('rejects invalid transaction input before mutation', async () => {
    const start = user('start');
    const { session } = await withItems([start]);
    const bad = (args: unknown) => session.applyHistoryTransaction(args as SessionHistoryTransactionArgs);
    await expect(
      bad({ operationId: '   ', transaction: { type: 'append_items', items: [] } }),
    ).rejects.toThrow('operationId must be a non-empty string');
    await expect(bad({ operationId: 'operation-unknown', transaction: { type: 'unknown' } })).rejects.toThrow(
      'Unsupported session history transaction type',
    );
    await expect(bad({ operationId: 'operation-missing-transaction', transaction: null })).rejects.toThrow(
      'transaction must be an object',
    );
    await expect(
      bad({ operationId: 'operation-invalid-item', transaction: { type: 'append_items', items: [42] } }),
    ).rejects.toThrow('items contain invalid or unsupported data');
    expect(await session.getItems()).toEqual([start]);
  });

  it('rejects unsupported transaction metadata before mutation (binary too: JSON cannot hold it)', async () => {
    const start = user('start');
    const { session } = await withItems([start]);
    const withDate = { ...user('unsupported'), providerData: { timestamp: new Date(0) } } as AgentInputItem;
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const withCycle = { ...user('cyclic'), providerData: cycle } as AgentInputItem;
    const withBigInt = { ...user('bigint'), providerData: { value: 42n } } as AgentInputItem;
    const withBytes = {
      ...user('binary'),
      providerData: { bytes: new Uint8Array([3, 7]) },
    } as AgentInputItem;
    const sparse = new Array<AgentInputItem>(1);
    const cases: Array<[string, AgentInputItem[]]> = [
      ['operation-date', [withDate]],
      ['operation-cycle', [withCycle]],
      ['operation-bigint', [withBigInt]],
      ['operation-bytes', [withBytes]],
      ['operation-sparse', sparse],
    ];
    for (const [operationId, items] of cases)
      await expect(
        session.applyHistoryTransaction({ operationId, transaction: { type: 'append_items', items } }),
      ).rejects.toThrow('items contain invalid or unsupported data');
    expect(await session.getItems()).toEqual([start]);
  });

  it('rejects non-enumerable metadata before mutation', async () => {
    const start = user('start');
    const { session } = await withItems([start]);
    const item = user('unsupported');
    Object.defineProperty(item, 'providerData', { enumerable: false, value: { hidden: true } });
    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-non-enumerable',
        transaction: { type: 'append_items', items: [item] },
      }),
    ).rejects.toThrow('items contain invalid or unsupported data');
    expect(await session.getItems()).toEqual([start]);
    const retry = user('retry');
    await session.applyHistoryTransaction({
      operationId: 'operation-non-enumerable',
      transaction: { type: 'append_items', items: [retry] },
    });
    expect(await session.getItems()).toEqual([start, retry]);
  });

  it('rejects unexpected transaction fields before mutation', async () => {
    const start = user('start');
    const { session } = await withItems([start]);
    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-unexpected-append-field',
        transaction: { type: 'append_items', items: [user('unsupported')], metadata: { attempt: 1 } },
      } as unknown as SessionHistoryTransactionArgs),
    ).rejects.toThrow('append transaction fields are invalid');
    await expect(
      session.applyHistoryTransaction({
        operationId: 'operation-unexpected-suffix-field',
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: [start],
          replacement: [user('unsupported')],
          metadata: { attempt: 1 },
        },
      } as unknown as SessionHistoryTransactionArgs),
    ).rejects.toThrow('suffix transaction fields are invalid');
    expect(await session.getItems()).toEqual([start]);
    const retry = user('retry');
    await session.applyHistoryTransaction({
      operationId: 'operation-unexpected-append-field',
      transaction: { type: 'append_items', items: [retry] },
    });
    expect(await session.getItems()).toEqual([start, retry]);
  });

  it('does not expose transaction content in snapshot errors', async () => {
    const { session } = fresh();
    const item = {
      ...user('unsupported'),
      providerData: { secret: Symbol('api-key-secret') },
    } as AgentInputItem;
    const error = await session
      .applyHistoryTransaction({
        operationId: 'operation-sensitive-invalid',
        transaction: { type: 'append_items', items: [item] },
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe(
      'Session history transaction items contain invalid or unsupported data.',
    );
    expect(await session.getItems()).toEqual([]);
  });

  it('canonicalizes ordinary object prototypes for retries and suffixes', async () => {
    const { session } = fresh();
    const appended = {
      ...user('canonical'),
      providerData: Object.assign(Object.create(null), { source: 'provider' }),
    } as AgentInputItem;
    await session.applyHistoryTransaction({
      operationId: 'operation-canonical-append',
      transaction: { type: 'append_items', items: [appended] },
    });
    const [roundTripped] = await session.getItems();
    await session.applyHistoryTransaction({
      operationId: 'operation-canonical-append',
      transaction: { type: 'append_items', items: [roundTripped as AgentInputItem] },
    });
    await session.applyHistoryTransaction({
      operationId: 'operation-canonical-replace',
      transaction: { type: 'replace_suffix', expectedSuffix: [appended], replacement: [user('replaced')] },
    });
    expect(await session.getItems()).toEqual([user('replaced')]);
  });

  it('rejects unsupported cloned values without recording the operation', async () => {
    const typed = { ...user('unsupported-typed-array'), providerData: { values: new Uint16Array([300]) } };
    const proxied = new Proxy([user('proxied')], {});
    const { session } = fresh();
    for (const items of [[typed as AgentInputItem], proxied])
      await expect(
        session.applyHistoryTransaction({
          operationId: 'operation-rejected-clone',
          transaction: { type: 'append_items', items },
        }),
      ).rejects.toThrow('items contain invalid or unsupported data');
    await session.applyHistoryTransaction({
      operationId: 'operation-rejected-clone',
      transaction: { type: 'append_items', items: [user('accepted-after-rejections')] },
    });
    expect(await session.getItems()).toEqual([user('accepted-after-rejections')]);
  });

  it('reads the transaction envelope once and redacts accessor errors', async () => {
    const { session } = fresh();
    let reads = 0;
    const args = {
      transaction: { type: 'append_items' as const, items: [user('once')] },
    } as SessionHistoryTransactionArgs;
    Object.defineProperty(args, 'operationId', {
      enumerable: true,
      get: () => {
        reads++;
        return reads === 1 ? 'operation-read-once' : 'changed';
      },
    });
    await session.applyHistoryTransaction(args);
    expect(reads).toBe(1);
    reads = 0;
    await session.applyHistoryTransaction(args);
    expect(reads).toBe(1);
    expect(await session.getItems()).toEqual([user('once')]);

    const throwing = {} as SessionHistoryTransactionArgs;
    Object.defineProperty(throwing, 'operationId', {
      get: () => {
        throw new Error('api-key-secret');
      },
    });
    const error = await session.applyHistoryTransaction(throwing).catch((e: unknown) => e);
    expect((error as Error).message).toBe('Session history transaction arguments are invalid.');
    expect((error as Error).message).not.toContain('api-key-secret');
  });

  it('answers what the SDK MemorySession answers for the same calls', async () => {
    // The reference and the adapter, driven by one script: every answer and the end state agree.
    const reference = new MemorySession({ sessionId: 'reference' });
    const { session } = fresh();
    const script: Array<(s: MemorySession | OpenAIAgentsSession) => Promise<unknown>> = [
      (s) => s.addItems([user('a'), user('b'), user('c')]),
      (s) => s.getItems(2),
      (s) => s.popItem(),
      (s) => s.getItems(10),
      (s) =>
        s.applyHistoryTransaction({
          operationId: 'op-1',
          transaction: { type: 'append_items', items: [user('d')] },
        }),
      (s) =>
        s.applyHistoryTransaction({
          operationId: 'op-2',
          transaction: {
            type: 'replace_suffix',
            expectedSuffix: [user('b'), user('d')],
            replacement: [user('e')],
          },
        }),
      (s) =>
        s.applyHistoryTransaction({
          operationId: 'op-1',
          transaction: { type: 'append_items', items: [user('d')] },
        }),
      (s) => s.popItem(),
      (s) => s.popItem(),
      (s) => s.popItem(),
      (s) => s.getItems(),
    ];
    for (const step of script) expect(await step(session)).toEqual(await step(reference));
  });
});

describe('a real run() with a tool approval, across a reloaded session', () => {
  it('persists the interrupted turn, resumes from the serialized state on a new session object, and records the whole history', async () => {
    const executed: string[] = [];
    const refund = tool({
      name: 'refund',
      description: 'Refunds an order.',
      parameters: z.object({ orderId: z.string() }),
      needsApproval: true,
      execute: async ({ orderId }) => {
        executed.push(orderId);
        return `refunded ${orderId}`;
      },
    });
    const model = new ScriptedModel([
      () => [
        {
          type: 'function_call',
          id: 'fc_1',
          callId: 'call_1',
          name: 'refund',
          status: 'completed',
          arguments: JSON.stringify({ orderId: 'A-17' }),
        },
      ],
      () => [
        {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Order A-17 is refunded.' }],
        },
      ],
    ]);
    const agent = new Agent({ name: 'support', instructions: 'Help.', model, tools: [refund] });
    const runner = new Runner({ tracingDisabled: true });
    const { session, sessionId, counting } = fresh();
    await session.addItems([
      user('earlier question'),
      { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'earlier answer' }] },
    ]);

    const first = await counting.count(() => runner.run(agent, 'Refund order A-17', { session }));
    expect(first.result.interruptions).toHaveLength(1);
    expect(executed).toEqual([]);
    const serialized = first.result.state.toString();

    // Another process: a new client and session object on the same store session.
    const reloaded = fresh(sessionId);
    const state = await RunState.fromString(agent, serialized);
    const [approval] = state.getInterruptions();
    expect(approval?.name).toBe('refund');
    state.approve(approval as NonNullable<typeof approval>);
    const second = await reloaded.counting.count(() =>
      runner.run(agent, state, { session: reloaded.session }),
    );
    expect(second.result.finalOutput).toBe('Order A-17 is refunded.');
    expect(executed).toEqual(['A-17']);

    // The model saw the persisted history: the earlier turn, then the new input.
    expect(JSON.stringify(model.inputs[0])).toContain('earlier answer');
    expect(JSON.stringify(model.inputs[1])).toContain('refunded A-17');
    const history = await reload(sessionId).getItems();
    const shape = history.map((item) =>
      'role' in item && item.role ? `${item.role}` : (item as { type: string }).type,
    );
    expect(shape).toEqual([
      'user',
      'assistant',
      'user',
      'function_call',
      'function_call_result',
      'assistant',
    ]);
    expect(JSON.stringify(history)).toContain('Refund order A-17');
    // Each item once: the approval's resume did not persist the turn's input or call again.
    expect(history.filter((i) => (i as { type?: string }).type === 'function_call')).toHaveLength(1);

    // HTTP calls of each run: the history read once, then one append per addItems of the runner.
    // The resume reads the history or not, by SDK version (0.14 does not, the state carrying it;
    // 0.20 does): without the read its first append goes at the end the new session object
    // guesses (empty), and the conflict answers the real one, one append more.
    expect(kinds(first.calls)).toEqual(['getList', 'appendList']);
    const resumed = kinds(second.calls);
    const read = resumed[0] === 'getList' ? ['getList'] : [];
    expect(resumed).toEqual([...read, ...Array(3 - read.length).fill('appendList')]);
  });
});

describe('a real run() whose output guardrail trips', () => {
  it('persists the executed tool call and its result through applyHistoryTransaction, never the blocked answer', async () => {
    const lookup = tool({
      name: 'lookup',
      description: 'Looks an order up.',
      parameters: z.object({ orderId: z.string() }),
      execute: async ({ orderId }) => `order ${orderId}: shipped`,
    });
    const model = new ScriptedModel([
      () => [
        {
          type: 'function_call',
          id: 'fc_2',
          callId: 'call_2',
          name: 'lookup',
          status: 'completed',
          arguments: JSON.stringify({ orderId: 'B-2' }),
        },
      ],
      () => [
        {
          type: 'message',
          id: 'msg_2',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'SECRET internal note' }],
        },
      ],
    ]);
    const agent = new Agent({
      name: 'support',
      instructions: 'Help.',
      model,
      tools: [lookup],
      outputGuardrails: [
        {
          name: 'no secrets',
          execute: async ({ agentOutput }) => ({
            tripwireTriggered: String(agentOutput).includes('SECRET'),
            outputInfo: {},
          }),
        },
      ],
    });
    const { session, sessionId, counting } = fresh();
    const { result: error, calls } = await counting.count(() =>
      new Runner({ tracingDisabled: true }).run(agent, 'Where is B-2?', { session }).catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(OutputGuardrailTripwireTriggered);
    // The SDK committed the turn's replay-safe items with one transaction: a snapshot and a commit.
    expect(kinds(calls)).toEqual(['getList', 'snapshot', 'commit']);
    const history = await reload(sessionId).getItems();
    expect(history.map((i) => ('role' in i && i.role ? i.role : (i as { type: string }).type))).toEqual([
      'user',
      'function_call',
      'function_call_result',
    ]);
    expect(JSON.stringify(history)).not.toContain('SECRET');
  });
});

describe('races and budgets', () => {
  it('an append racing a popItem is never lost: the truncate fails on the moved list and the pop starts again', async () => {
    const { session, sessionId, counting } = fresh();
    await session.addItems([user('a'), user('b')]);
    const other = reload(sessionId);
    // Hold the pop's truncate back until the other writer's append has landed.
    let held = false;
    counting.before = async (call) => {
      if (call.path.endsWith('/truncate') && !held) {
        held = true;
        await other.addItems([user('x')]);
      }
    };
    const { result: popped, calls } = await counting.count(() => session.popItem());
    counting.before = undefined;
    // The append landed first: the pop is of x, and a, b are kept.
    expect(popped).toEqual(user('x'));
    expect(await reload(sessionId).getItems()).toEqual([user('a'), user('b')]);
    expect(kinds(calls)).toEqual(['getList', 'truncateList', 'getList', 'truncateList']);
  });

  it('a transaction racing an append: the commit fails on the moved list, nothing written, and it is sent again at the new end', async () => {
    const { session, sessionId, counting } = fresh();
    await session.addItems([user('a')]);
    const other = reload(sessionId);
    let held = false;
    counting.before = async (call) => {
      if (call.path.endsWith('/commits') && !held) {
        held = true;
        await other.addItems([user('x')]);
      }
    };
    const op = {
      operationId: 'op-raced',
      transaction: { type: 'append_items' as const, items: [user('t')] },
    };
    const { calls } = await counting.count(() => session.applyHistoryTransaction(op));
    counting.before = undefined;
    expect(kinds(calls)).toEqual(['snapshot', 'commit', 'snapshot', 'commit']);
    await other.applyHistoryTransaction(op); // a replay: applied once
    expect(await reload(sessionId).getItems()).toEqual([user('a'), user('x'), user('t')]);

    // A suffix replacement whose suffix an append moved on is refused, and not recorded.
    held = false;
    counting.before = async (call) => {
      if (call.path.endsWith('/commits') && !held) {
        held = true;
        await other.addItems([user('y')]);
      }
    };
    const replace = {
      operationId: 'op-replace-raced',
      transaction: { type: 'replace_suffix' as const, expectedSuffix: [user('t')], replacement: [user('u')] },
    };
    await expect(session.applyHistoryTransaction(replace)).rejects.toThrow('suffix no longer matches');
    counting.before = undefined;
    expect(await reload(sessionId).getItems()).toEqual([user('a'), user('x'), user('t'), user('y')]);
    await session.popItem();
    await session.applyHistoryTransaction(replace);
    expect(await reload(sessionId).getItems()).toEqual([user('a'), user('x'), user('u')]);
  });

  it('a commit that lands its record but not its list change (commit-partial) takes the record back and is sent again', async () => {
    const { counting, sessionId } = fresh();
    const client = counting.client;
    let partial = true;
    // The store answers the first commit as the server answers a write raced at write time.
    const racy: typeof client = {
      ...client,
      async commit(s, request, o) {
        if (!partial) return client.commit(s, request, o);
        partial = false;
        await client.commit(s, { ...request, lists: [] }, o);
        const [list] = request.lists ?? [];
        throw new CommitPartialError(
          request.commitId,
          (request.values ?? []).map((v) => ({ kind: 'value' as const, key: v.key })),
          [{ kind: 'list', key: list?.key ?? '', reason: 'count', count: 1, hash: EMPTY_HASH }],
        );
      },
    };
    const session = new OpenAIAgentsSession({ store: racy, sessionId });
    await session.addItems([user('a')]);
    const op = {
      operationId: 'op-partial',
      transaction: { type: 'append_items' as const, items: [user('t')] },
    };
    const { calls } = await counting.count(() => session.applyHistoryTransaction(op));
    expect(kinds(calls)).toEqual(['snapshot', 'commit', 'deleteKey', 'snapshot', 'commit']);
    await reload(sessionId).applyHistoryTransaction(op);
    expect(await reload(sessionId).getItems()).toEqual([user('a'), user('t')]);
  });

  it('a commit-partial on the last attempt takes the record back before it fails: a replay then applies the operation', async () => {
    const { counting, sessionId } = fresh();
    const client = counting.client;
    const racy: typeof client = {
      ...client,
      async commit(s, request, o) {
        await client.commit(s, { ...request, lists: [] }, o);
        throw new CommitPartialError(
          request.commitId,
          (request.values ?? []).map((v) => ({ kind: 'value' as const, key: v.key })),
          [{ kind: 'list', key: request.lists?.[0]?.key ?? '', reason: 'count', count: 1, hash: EMPTY_HASH }],
        );
      },
    };
    const op = { operationId: 'op-last', transaction: { type: 'append_items' as const, items: [user('t')] } };
    const session = new OpenAIAgentsSession({ store: racy, sessionId, attempts: 1 });
    await expect(session.applyHistoryTransaction(op)).rejects.toBeInstanceOf(CommitPartialError);
    await reload(sessionId).applyHistoryTransaction(op);
    expect(await reload(sessionId).getItems()).toEqual([user('t')]);
  });

  it('refuses a suffix replacement of a list too long for one commit, writing nothing', async () => {
    const { session, sessionId } = fresh();
    const items = Array.from({ length: 1000 }, (_, i) => user(`m${i}`));
    await session.addItems(items);
    await expect(
      session.applyHistoryTransaction({
        operationId: 'op-long',
        transaction: {
          type: 'replace_suffix',
          expectedSuffix: [user('m999')],
          replacement: [user('a'), user('b')],
        },
      }),
    ).rejects.toThrow('at most 1000 items, not 1001');
    expect(await reload(sessionId).getItems(2)).toEqual([user('m998'), user('m999')]);
  });

  it('racing appends and pops, many times: every appended item is in the list or was popped', async () => {
    const { session, sessionId } = fresh();
    await session.addItems([user('seed')]);
    const writers = [0, 1, 2].map(() => reload(sessionId));
    const added: string[] = [];
    const popped: string[] = [];
    const text = (item: AgentInputItem | undefined) =>
      ((item as { content: Array<{ text: string }> } | undefined)?.content[0]?.text ?? '') as string;
    await Promise.all([
      ...writers.map(async (w, i) => {
        for (let k = 0; k < 8; k++) {
          const t = `w${i}-${k}`;
          await w.addItems([user(t)]);
          added.push(t);
        }
      }),
      (async () => {
        for (let k = 0; k < 12; k++) {
          const item = await session.popItem();
          if (item) popped.push(text(item));
        }
      })(),
    ]);
    const kept = (await reload(sessionId).getItems()).map(text);
    expect([...kept, ...popped].sort()).toEqual(['seed', ...added].sort());
    expect(new Set([...kept, ...popped]).size).toBe(kept.length + popped.length);
  });

  it('takes a counted number of calls per operation', async () => {
    const { session, sessionId, counting } = fresh();
    const c = (work: () => Promise<unknown>) => counting.count(work).then((r) => kinds(r.calls));
    // The first append of a session object that has not read the list: at its guess of the end.
    expect(await c(() => session.addItems([user('1'), user('2')]))).toEqual(['appendList']);
    expect(await c(() => session.addItems([user('3')]))).toEqual(['appendList']);
    expect(await c(() => session.getItems(2))).toEqual(['getList']);
    expect(await c(() => session.getItems())).toEqual(['getList']);
    expect(await c(() => session.popItem())).toEqual(['getList', 'truncateList']);
    const op = {
      operationId: 'op-budget',
      transaction: { type: 'append_items' as const, items: [user('4')] },
    };
    expect(await c(() => session.applyHistoryTransaction(op))).toEqual(['snapshot', 'commit']);
    expect(await c(() => session.applyHistoryTransaction(op))).toEqual(['snapshot']);
    expect(
      await c(() =>
        session.applyHistoryTransaction({
          operationId: 'op-replace',
          transaction: { type: 'replace_suffix', expectedSuffix: [user('4')], replacement: [user('5')] },
        }),
      ),
    ).toEqual(['snapshot', 'commit']);
    // Another writer moved the end: one conflict, then the append at the end it names.
    await reload(sessionId).addItems([user('other')]);
    expect(await c(() => session.addItems([user('6')]))).toEqual(['appendList', 'appendList']);
    expect(await c(() => session.clearSession())).toEqual([
      'deleteList',
      'listKeys',
      'deleteKey',
      'deleteKey',
    ]);
    expect(await session.getItems()).toEqual([]);
  });
});

describe('a 5 MB item (fs storage, whose presigned URLs the local server answers)', () => {
  let big: LocalApi;
  beforeAll(async () => {
    big = await startApi('fs');
  });
  afterAll(async () => {
    await big?.close();
  });

  it('round-trips through addItems, getItems, a run transaction and popItem, never through a request body', async () => {
    const counting: CountingClient = big.client();
    const session = new OpenAIAgentsSession({ store: counting.client, sessionId: 'big' });
    const huge: AgentInputItem = {
      type: 'function_call_result',
      callId: 'call_big',
      name: 'read_file',
      status: 'completed',
      output: 'x'.repeat(5_000_000),
    };
    const added = await counting.count(() => session.addItems([user('read it'), huge, user('thanks')]));
    // The item is a value of its own, uploaded straight to storage; the list holds a reference.
    expect(kinds(added.calls)).toEqual([
      'createValueUpload',
      'direct PUT',
      'commitValueUpload',
      'appendList',
    ]);
    const readBack = new OpenAIAgentsSession({ store: big.client().client, sessionId: 'big' });
    expect(await readBack.getItems()).toEqual([user('read it'), huge, user('thanks')]);
    const tail = await counting.count(() => session.getItems(2));
    expect(tail.result).toEqual([huge, user('thanks')]);
    // The list page, then the value: a 303 to its presigned URL, read straight from storage.
    expect(kinds(tail.calls)).toEqual(['getList', 'get', 'direct GET']);
    expect(await readBack.popItem()).toEqual(user('thanks'));
    const pop = await counting.count(() => session.popItem());
    expect(pop.result).toEqual(huge);
    expect(kinds(pop.calls)).toEqual(['getList', 'get', 'direct GET', 'truncateList', 'deleteKey']);
    expect(await readBack.getItems()).toEqual([user('read it')]);
    await readBack.applyHistoryTransaction({
      operationId: 'op-big',
      transaction: { type: 'append_items', items: [huge] },
    });
    expect(await session.getItems(1)).toEqual([huge]);
    await session.clearSession();
    expect(await readBack.getItems()).toEqual([]);
    // Never through a request body of the API: every call to it carried less than 64 KiB.
    const api = counting.calls.filter((c) => c.path.startsWith('/v1/sessions/'));
    expect(Math.max(...api.map((c) => c.bytes))).toBeLessThan(64 * 1024);
    expect(counting.calls.filter((c) => c.bytes > 5_000_000)).toHaveLength(1);
  });
});

describe('the entry without its peer', () => {
  it('throws MissingPeerError naming @openai/agents-core, and loads with it', async () => {
    const entry = new URL('../../lib/entries/openai-agents.ts', import.meta.url).pathname;
    const [hidden, present] = await Promise.all([importInChild(entry, true), importInChild(entry, false)]);
    expect(hidden).toBe(
      'MissingPeerError: agent-state-store/openai-agents needs the package @openai/agents-core: install it next to agent-state-store (npm install @openai/agents-core)',
    );
    expect(present).toBe('loaded');
  });
});
