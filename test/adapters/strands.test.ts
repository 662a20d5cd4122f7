/**
 * The Strands Agents (TS) adapter: the SDK's unified `Storage` on the HTTP client,
 * against the local API (memory driver), with the client's HTTP calls counted.
 *
 * The SessionManager part ports the assertions of strands-agents/sdk-typescript at commit
 * 00e04880c30c5ce1f76e40c164d32ce52f7b6dca (the repository's last, 2026-06-02):
 * strands-ts/src/session/__tests__/session-manager.test.ts (saved, listed with `limit` /
 * `startAfter`, latest, restore, hooks, triggers, multi-agent) and
 * strands-ts/src/session/__tests__/file-storage.test.node.ts (sorted ids, non-snapshot files
 * ignored, pagination, delete). There they run on a mock `SnapshotStorage`; here they run through
 * the SDK's own `SessionManager` on our `Storage` (SDK 1.16.0 wraps a unified `Storage` in its
 * `SnapshotStorageAdapter` under `session/`), and what the mock was asked directly is read back
 * through the storage or a second manager.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  AfterInvocationEvent,
  AfterModelCallEvent,
  type Agent,
  InitializedEvent,
  Message,
  MessageAddedEvent,
  SessionManager,
  type Snapshot,
  TextBlock,
} from '@strands-agents/sdk';
import {
  AfterMultiAgentInvocationEvent,
  AfterNodeCallEvent,
  BeforeMultiAgentInvocationEvent,
  type Graph,
  MultiAgentState,
  NodeResult,
  Status,
} from '@strands-agents/sdk/multiagent';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { strandsBench } from '../../bench/frameworks/strands.js';
import { createStrandsStorage, STRANDS_BYTES, STRANDS_SHARED_SESSION } from '../../lib/adapters/strands.js';
import { createHttpClient } from '../../lib/client/index.js';
import { ValidationError } from '../../lib/contract/errors.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { hsToken } from '../http/harness.js';
import { BODY_LIMIT, localBase, startWorkspaceApi } from '../workspaces/api.js';
import { agentNamed, hookedAgent, importWithoutSdk, ScriptedModel, strandsApi } from './strands-helpers.js';

let api: Awaited<ReturnType<typeof strandsApi>>;
let user: ReturnType<(typeof api)['user']>;
beforeAll(async () => {
  api = await strandsApi();
});
afterAll(() => api.close());
beforeEach(() => {
  user = api.user();
});

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array | null) => (data === null ? null : new TextDecoder().decode(data));
const scopeKey = (sessionId: string, scope: string, scopeId: string) =>
  `session/${sessionId}/scopes/${scope}/${scopeId}/snapshots`;
const latestKey = (sessionId: string, scopeId: string, scope = 'agent') =>
  `${scopeKey(sessionId, scope, scopeId)}/snapshot_latest.json`;
const historyKey = (sessionId: string, scopeId: string, id: string) =>
  `${scopeKey(sessionId, 'agent', scopeId)}/immutable_history/snapshot_${id}.json`;
/** The latest snapshot as stored (what the SDK tests asked the mock storage's `loadSnapshot`). */
const storedLatest = async (sessionId: string, scopeId: string, scope = 'agent') => {
  const data = await user.storage.read(latestKey(sessionId, scopeId, scope));
  return data === null ? null : (JSON.parse(text(data) as string) as Snapshot);
};
const manager = (sessionId: string, config: Partial<ConstructorParameters<typeof SessionManager>[0]> = {}) =>
  new SessionManager({ sessionId, storage: user.storage, ...config });
const MESSAGE = new Message({ role: 'user', content: [new TextBlock('test')] });
/** The message as a snapshot holds it (JSON). */
const MESSAGE_JSON = JSON.parse(JSON.stringify(MESSAGE.toJSON()));
const invocation = (agent: Agent) => new AfterInvocationEvent({ agent, invocationState: {} });
/** A snapshot as the SDK's fixtures make one (createTestSnapshot). */
const testSnapshot = (overrides: Partial<Snapshot> = {}): Snapshot => ({
  schemaVersion: '1.0',
  scope: 'agent',
  createdAt: '2024-01-01T00:00:00.000Z',
  data: { messages: [], state: { testKey: 'testValue' }, systemPrompt: 'You are a test assistant' },
  appData: {},
  ...overrides,
});
const put = (key: string, value: unknown) => user.storage.write(key, bytes(JSON.stringify(value)));

describe('Storage contract', () => {
  it('round-trips bytes: a JSON text is stored as its value, anything else as base64, each read answering the bytes written', async () => {
    const cases: Array<[string, Uint8Array]> = [
      ['json', bytes(JSON.stringify({ b: 1, a: [true, null, 'ü 😀'], n: 1.5e-7, '1': 'first' }))],
      ['string', bytes('"a string"')],
      ['null', bytes('null')],
      ['spaced', bytes('{ "a": 1 }\n')],
      ['big-number', bytes('12345678901234567890')],
      ['bom', new Uint8Array([0xef, 0xbb, 0xbf, ...bytes('{}')])],
      ['binary', new Uint8Array([0, 1, 2, 0xff, 0xfe, 0x80, 10])],
      ['empty', new Uint8Array()],
      ['envelope-shaped', bytes(JSON.stringify({ [STRANDS_BYTES]: 'AAAA' }))],
      // JSON texts the store refuses (not I-JSON): a lone surrogate, nesting past 128 levels.
      ['lone-surrogate', bytes(JSON.stringify({ s: '\ud800' }))],
      ['deep', bytes(`${'['.repeat(200)}${']'.repeat(200)}`)],
    ];
    for (const [name, data] of cases) {
      await user.storage.write(`files/${name}`, data);
      expect(await user.storage.read(`files/${name}`), name).toEqual(data);
    }
    // What the API holds: the JSON document itself, and the envelope for the rest.
    expect(await user.client.get(STRANDS_SHARED_SESSION, 'files/json')).toEqual(
      JSON.parse(text(cases[0]?.[1] as Uint8Array) as string),
    );
    expect(await user.client.get(STRANDS_SHARED_SESSION, 'files/binary')).toEqual({
      [STRANDS_BYTES]: Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10]).toString('base64'),
    });
    expect(await user.client.get(STRANDS_SHARED_SESSION, 'files/envelope-shaped')).toEqual({
      [STRANDS_BYTES]: Buffer.from(JSON.stringify({ [STRANDS_BYTES]: 'AAAA' })).toString('base64'),
    });
  });

  it('maps session/<id>/<rest> to the value <rest> of the store session <id>, other keys to the shared session', async () => {
    await put('session/s1/scopes/agent/a/snapshots/snapshot_latest.json', { n: 1 });
    await put('offloader/item-1', { n: 2 });
    expect(await user.client.get('s1', 'scopes/agent/a/snapshots/snapshot_latest.json')).toEqual({ n: 1 });
    expect(await user.client.get(STRANDS_SHARED_SESSION, 'offloader/item-1')).toEqual({ n: 2 });
    const sessions = (await user.client.listSessionIds()).sessions.map((s) => s.sessionId).sort();
    expect(sessions).toEqual([STRANDS_SHARED_SESSION, 's1'].sort());
  });

  it('answers null for a missing key (absent session or absent key), one call', async () => {
    const missing = await user.count(() => user.storage.read('session/nobody/x.json'));
    expect(missing.result).toBeNull();
    expect(missing.calls).toHaveLength(1);
    await put('session/s1/a', 1);
    expect(await user.storage.read('session/s1/b')).toBeNull();
    expect(await user.storage.read('nothing/here')).toBeNull();
  });

  it('overwrites, deletes (absent is fine), one call each', async () => {
    const write = await user.count(() => put('session/s1/k', { v: 1 }));
    expect(write.calls).toEqual([
      { method: 'PUT', path: expect.stringMatching(/^\/v1\/sessions\/s1\/state\//) },
    ]);
    await put('session/s1/k', { v: 2 });
    const read = await user.count(() => user.storage.read('session/s1/k'));
    expect(JSON.parse(text(read.result) as string)).toEqual({ v: 2 });
    expect(read.calls.map((c) => c.method)).toEqual(['GET']);
    const removed = await user.count(() => user.storage.delete('session/s1/k'));
    expect(removed.calls.map((c) => c.method)).toEqual(['DELETE']);
    expect(await user.storage.read('session/s1/k')).toBeNull();
    await expect(user.storage.delete('session/s1/k')).resolves.toBeUndefined();
    await expect(user.storage.delete('session/never/k')).resolves.toBeUndefined();
    await expect(user.storage.delete('never/k')).resolves.toBeUndefined();
  });

  describe('list(prefix)', () => {
    const keys = [
      'session/a/scopes/agent/x/snapshots/snapshot_latest.json',
      'session/a/scopes/agent/x/snapshots/immutable_history/snapshot_2.json',
      'session/a/scopes/agent/x/snapshots/immutable_history/snapshot_1.json',
      'session/a/scopes/multiAgent/g/snapshots/snapshot_latest.json',
      'session/ab/z',
      'session/b/y',
      'offloader/2',
      'offloader/10',
      'memory/notes/n.json',
      'sessions-not-a-session/k',
    ];
    beforeEach(async () => {
      for (const key of keys) await put(key, { key });
    });
    const expected = (prefix: string) => keys.filter((k) => k.startsWith(prefix)).sort();

    it.each([
      'session/a/',
      'session/a/scopes/agent/x/snapshots/immutable_history/',
      'session/a/scopes/agent/x/snapshots/immutable_history/snapshot_1',
      'session/b/',
      'session/zz/',
    ])('within one session (%s): sorted full keys, one listKeys', async (prefix) => {
      const listed = await user.count(() => user.storage.list(prefix));
      expect(listed.result).toEqual(expected(prefix));
      expect(listed.calls).toHaveLength(1);
      expect(listed.calls[0]?.path).toMatch(/^\/v1\/sessions\/[^/]+\/keys/);
    });

    it.each([
      ['session/a', 2],
      ['session/', 3],
      ['session', 3],
      ['', 3],
      ['s', 3],
    ])(
      'above a session (%s): listSessionIds, then one listKeys per session (%i)',
      async (prefix, sessions) => {
        const listed = await user.count(() => user.storage.list(prefix));
        expect(listed.result).toEqual(expected(prefix));
        const lists = listed.calls.filter((c) => /^\/v1\/sessions(\?|$)/.test(c.path));
        const keyLists = listed.calls.filter((c) => /^\/v1\/sessions\/[^/]+\/keys/.test(c.path));
        expect(lists).toHaveLength(1);
        // The shared session is read as well when the prefix does not start with `session/`.
        const shared = prefix.startsWith('session/') ? 0 : 1;
        expect(keyLists).toHaveLength(sessions + shared);
        expect(listed.calls).toHaveLength(1 + sessions + shared);
      },
    );

    it('outside the sessions: only the shared session, one listKeys', async () => {
      for (const prefix of ['offloader/', 'memory/', 'sessions-']) {
        const listed = await user.count(() => user.storage.list(prefix));
        expect(listed.result).toEqual(expected(prefix));
        expect(listed.calls).toHaveLength(1);
      }
    });

    it('normalizes as the SDK backends do and refuses ".."', async () => {
      expect(await user.storage.list('//session//a//scopes/multiAgent')).toEqual(
        expected('session/a/scopes/multiAgent'),
      );
      await expect(user.storage.list('session/../x')).rejects.toBeInstanceOf(ValidationError);
    });

    it('leaves out the store lists of a session (only values are Storage entries)', async () => {
      await user.client.saveList('a', 'a-list', [1, 2]);
      expect(await user.storage.list('session/a/')).toEqual(expected('session/a/'));
    });
  });

  it('namespaces: isolated views, nested, marked namespaced as the SDK views are', async () => {
    const a = user.storage.namespace('tenant-a');
    const b = user.storage.namespace('tenant-b/');
    await a.write('k', bytes('1'));
    await b.write('k', bytes('2'));
    await a.namespace('inner').write('k', bytes('3'));
    expect(text(await a.read('k'))).toBe('1');
    expect(text(await b.read('k'))).toBe('2');
    expect(await a.list('')).toEqual(['inner/k', 'k']);
    expect(await b.list('')).toEqual(['k']);
    expect(await a.namespace('inner').list('')).toEqual(['k']);
    expect(await user.storage.list('tenant-')).toEqual(['tenant-a/inner/k', 'tenant-a/k', 'tenant-b/k']);
    await a.delete('k');
    expect(await a.read('k')).toBeNull();
    expect(text(await b.read('k'))).toBe('2');
    // A view of session/ puts the manager's sessions where the storage itself would.
    const sessions = user.storage.namespace('session');
    expect(Symbol.for('strands.storage.namespaced') in sessions).toBe(true);
    expect(Symbol.for('strands.storage.namespaced') in user.storage).toBe(false);
    await manager('via-view', { storage: sessions }).saveSnapshot({
      target: agentNamed('x'),
      isLatest: true,
    });
    expect(await storedLatest('via-view', 'x')).not.toBeNull();
  });

  it('takes odd ids: any session id and key the store takes, each encoded in the URL', async () => {
    const odd = [
      'session/with space/k',
      'session/ünï-cødé/ключ/😀',
      'session/til~de/per%cent/q?x=1&y#z',
      'session/.hidden/a.json.list',
      'session/UPPER.Case_1/plain',
      'top-level key with spaces',
      '~weird/!bang/%41',
    ];
    for (const [i, key] of odd.entries()) await user.storage.write(key, bytes(String(i)));
    for (const [i, key] of odd.entries()) expect(text(await user.storage.read(key)), key).toBe(String(i));
    expect(await user.storage.list('')).toEqual([...odd].sort());
    // Slashes are collapsed and stripped, as the SDK's shipped backends do.
    expect(text(await user.storage.read('/session//with space///k/'))).toBe('0');
  });

  it('refuses, before any call, keys that name no value', async () => {
    const refused = [
      '',
      '///',
      'a/../b',
      'session/only-a-session',
      'session',
      `session/${STRANDS_SHARED_SESSION}/k`,
      `session/s/${'k'.repeat(129)}`,
      `session/${'s'.repeat(181)}/k`,
    ];
    for (const key of refused) {
      const attempt = await user.count(() => user.storage.write(key, bytes('1')).catch((e: unknown) => e));
      expect(attempt.result, key).toBeInstanceOf(ValidationError);
      expect(attempt.calls, key).toEqual([]);
    }
    // The shared session is never listed as a Strands session.
    await user.storage.write('shared/k', bytes('1'));
    expect(await user.storage.list('session/')).toEqual([]);
    expect(await user.storage.list(`session/${STRANDS_SHARED_SESSION}/`)).toEqual([]);
  });
});

describe('SessionManager (ported from the SDK tests)', () => {
  let agent: Agent;
  beforeEach(() => {
    agent = agentNamed('test-agent');
  });

  describe('saveSnapshot', () => {
    it('defaults saveLatestOn to invocation', async () => {
      const sm = manager('test-default');
      const hooks = hookedAgent();
      sm.initAgent(hooks.agent);
      await hooks.fire(invocation(agent));
      expect(await storedLatest('test-default', 'test-agent')).not.toBeNull();
    });

    it('saves snapshot_latest when isLatest is true (one call)', async () => {
      const saved = await user.count(() =>
        manager('test-session').saveSnapshot({ target: agent, isLatest: true }),
      );
      const snapshot = await storedLatest('test-session', 'test-agent');
      expect(snapshot?.scope).toBe('agent');
      expect(saved.calls.map((c) => c.method)).toEqual(['PUT']);
      // The session's first write also creates its marker.
      expect(saved.requests).toMatchObject({ put: 2, get: 2, list: 1 });
    });

    it('saves an immutable snapshot when isLatest is false, with unique ids (one call each)', async () => {
      const sm = manager('test-session');
      const saved = await user.count(() => sm.saveSnapshot({ target: agent, isLatest: false }));
      expect(saved.calls).toHaveLength(1);
      await sm.saveSnapshot({ target: agent, isLatest: false });
      await sm.saveSnapshot({ target: agent, isLatest: false });
      const ids = await sm.listSnapshotIds({ target: agent });
      expect(ids).toHaveLength(3);
      expect(new Set(ids).size).toBe(3);
      expect(await storedLatest('test-session', 'test-agent')).toBeNull();
    });
  });

  it('takes agent ids up to 36 bytes: an immutable snapshot key is 92 bytes plus the id, the store keys at most 128', async () => {
    const sm = manager('long-ids');
    await sm.saveSnapshot({ target: agentNamed('a'.repeat(36)), isLatest: false });
    expect(await sm.listSnapshotIds({ target: agentNamed('a'.repeat(36)) })).toHaveLength(1);
    const refused = await user.count(() =>
      sm.saveSnapshot({ target: agentNamed('a'.repeat(37)), isLatest: false }).catch((e: unknown) => e),
    );
    expect((refused.result as Error).name).toBe('SessionError');
    expect((refused.result as Error).cause).toBeInstanceOf(ValidationError);
    expect(refused.calls).toEqual([]);
    // The latest snapshot's key is shorter (58 bytes plus the id).
    await sm.saveSnapshot({ target: agentNamed('a'.repeat(37)), isLatest: true });
  });

  describe('listSnapshotIds', () => {
    let sm: SessionManager;
    beforeEach(() => {
      sm = manager('test-session');
    });

    it('returns an empty array when no snapshots exist (one call)', async () => {
      const listed = await user.count(() => sm.listSnapshotIds({ target: agent }));
      expect(listed.result).toStrictEqual([]);
      expect(listed.calls).toHaveLength(1);
    });

    it('returns the snapshot ids of the target agent, not the latest, not another agent', async () => {
      await sm.saveSnapshot({ target: agent, isLatest: false });
      await sm.saveSnapshot({ target: agent, isLatest: false });
      await sm.saveSnapshot({ target: agent, isLatest: true });
      await sm.saveSnapshot({ target: agentNamed('other-agent'), isLatest: false });
      const listed = await user.count(() => sm.listSnapshotIds({ target: agent }));
      expect(listed.result).toHaveLength(2);
      expect(listed.calls).toHaveLength(1);
    });

    it('does not return the latest snapshot id', async () => {
      await sm.saveSnapshot({ target: agent, isLatest: true });
      expect(await sm.listSnapshotIds({ target: agent })).toStrictEqual([]);
    });

    it('forwards limit and startAfter', async () => {
      for (let i = 0; i < 3; i++) await sm.saveSnapshot({ target: agent, isLatest: false });
      const all = await sm.listSnapshotIds({ target: agent });
      expect(all).toEqual([...all].sort());
      expect(await sm.listSnapshotIds({ target: agent, limit: 2 })).toEqual(all.slice(0, 2));
      const page2 = await sm.listSnapshotIds({ target: agent, startAfter: all[0] as string });
      expect(page2).toEqual(all.slice(1));
      expect(await sm.listSnapshotIds({ target: agent, startAfter: all[0] as string, limit: 1 })).toEqual([
        all[1],
      ]);
      expect(await sm.listSnapshotIds({ target: agent, limit: 0 })).toEqual([]);
    });

    it('returns sorted ids whatever the order written, ignoring non-snapshot files', async () => {
      const ids = [
        '019c9bf1-14e5-7eef-96fb-cc07ae54210f',
        '019c9bf1-1d34-7eef-96fb-d1be20fd7bbd',
        '019c9bf1-24bb-7eef-96fb-ddcc943cd859',
      ];
      for (const i of [2, 0, 1])
        await put(historyKey('test-session', 'test-agent', ids[i] as string), testSnapshot());
      await user.storage.write(
        `${scopeKey('test-session', 'agent', 'test-agent')}/immutable_history/other-file.txt`,
        bytes('not a snapshot'),
      );
      expect(await sm.listSnapshotIds({ target: agent })).toEqual(ids);
      expect(await sm.listSnapshotIds({ target: agent, startAfter: ids[0] as string })).toEqual(ids.slice(1));
      expect(await sm.listSnapshotIds({ target: agent, limit: 2 })).toEqual(ids.slice(0, 2));
      expect(await sm.listSnapshotIds({ target: agent, startAfter: ids[0] as string, limit: 1 })).toEqual([
        ids[1],
      ]);
    });
  });

  describe('restoreSnapshot', () => {
    let sm: SessionManager;
    beforeEach(() => {
      sm = manager('test-session');
    });

    it('restores snapshot_latest when no snapshotId is given (one call)', async () => {
      const saved = testSnapshot({
        data: { messages: [MESSAGE_JSON], state: { k: 'v' }, systemPrompt: 'restored prompt' },
      });
      await put(latestKey('test-session', 'test-agent'), saved);
      const restored = await user.count(() => sm.restoreSnapshot({ target: agent }));
      expect(restored.result).toBe(true);
      expect(restored.calls.map((c) => c.method)).toEqual(['GET']);
      expect(agent.messages.map((m) => m.toJSON())).toEqual([MESSAGE.toJSON()]);
      expect(agent.appState.get('k')).toBe('v');
      expect(agent.systemPrompt).toBe('restored prompt');
    });

    it('restores a specific snapshot by id', async () => {
      await put(historyKey('test-session', 'test-agent', '5'), testSnapshot());
      expect(await sm.restoreSnapshot({ target: agent, snapshotId: '5' })).toBe(true);
      expect(agent.appState.get('testKey')).toBe('testValue');
    });

    it('returns false when the snapshot is not found', async () => {
      expect(await sm.restoreSnapshot({ target: agent, snapshotId: '999' })).toBe(false);
      expect(await sm.restoreSnapshot({ target: agent })).toBe(false);
    });
  });

  describe('hooks', () => {
    it('loads snapshot_latest on initialization; a missing one is fine', async () => {
      const saved = testSnapshot({ data: { messages: [MESSAGE_JSON], state: {}, systemPrompt: null } });
      await put(latestKey('test-session', 'test-agent'), saved);
      const hooks = hookedAgent();
      manager('test-session').initAgent(hooks.agent);
      await hooks.fire(new InitializedEvent({ agent }));
      expect(agent.messages.map((m) => m.toJSON())).toEqual([MESSAGE.toJSON()]);

      const fresh = hookedAgent();
      manager('new-session').initAgent(fresh.agent);
      await expect(
        fresh.fire(new InitializedEvent({ agent: agentNamed('test-agent') })),
      ).resolves.toBeUndefined();
    });

    it('saves snapshot_latest on MessageAdded when saveLatestOn is message, registers nothing for it otherwise', async () => {
      const hooks = hookedAgent();
      manager('test-session', { saveLatestOn: 'message' }).initAgent(hooks.agent);
      await hooks.fire(new MessageAddedEvent({ agent, message: MESSAGE, invocationState: {} }));
      expect(await storedLatest('test-session', 'test-agent')).not.toBeNull();

      const other = hookedAgent();
      manager('other-session', { saveLatestOn: 'invocation' }).initAgent(other.agent);
      expect(other.trackedHooks.find((h) => h.eventType === MessageAddedEvent)).toBeUndefined();
      expect(await storedLatest('other-session', 'test-agent')).toBeNull();
    });

    it('saves snapshot_latest after an invocation, not when saveLatestOn is trigger', async () => {
      const hooks = hookedAgent();
      manager('test-session', { saveLatestOn: 'invocation' }).initAgent(hooks.agent);
      await hooks.fire(invocation(agent));
      expect(await storedLatest('test-session', 'test-agent')).not.toBeNull();

      const trigger = hookedAgent();
      manager('trigger-session', { saveLatestOn: 'trigger' }).initAgent(trigger.agent);
      await trigger.fire(invocation(agent));
      expect(await storedLatest('trigger-session', 'test-agent')).toBeNull();
    });

    it.each(['invocation', 'message'] as const)(
      'saves snapshot_latest on a redaction when saveLatestOn is %s',
      async (saveLatestOn) => {
        const hooks = hookedAgent();
        manager('test-session', { saveLatestOn }).initAgent(hooks.agent);
        const stopData = {
          message: new Message({ role: 'assistant', content: [new TextBlock('r')] }),
          stopReason: 'endTurn',
        };
        await hooks.fire(new AfterModelCallEvent({ agent, model: {}, stopData } as never));
        expect(await storedLatest('test-session', 'test-agent')).toBeNull();
        await hooks.fire(
          new AfterModelCallEvent({
            agent,
            model: {},
            stopData: { ...stopData, redaction: { userMessage: '[User input redacted.]' } },
          } as never),
        );
        expect(await storedLatest('test-session', 'test-agent')).not.toBeNull();
      },
    );
  });

  describe('snapshotTrigger', () => {
    it('creates an immutable snapshot and the latest when the trigger fires, nothing when it does not', async () => {
      const hooks = hookedAgent();
      const sm = manager('test-session', { saveLatestOn: 'trigger', snapshotTrigger: () => true });
      sm.initAgent(hooks.agent);
      const first = await user.count(() => hooks.fire(invocation(agent)));
      expect(await sm.listSnapshotIds({ target: agent })).toHaveLength(1);
      expect(await storedLatest('test-session', 'test-agent')).not.toBeNull();
      expect(first.calls.map((c) => c.method)).toEqual(['PUT', 'PUT']);
      // The session's first write also creates its marker.
      expect(first.requests).toMatchObject({ put: 3 });
      const next = await user.count(() => hooks.fire(invocation(agent)));
      expect(next.calls.map((c) => c.method)).toEqual(['PUT', 'PUT']);
      // Each save reads its value's head for the revision it writes (docs/DESIGN.md, "Revisions").
      expect(next.requests).toMatchObject({ put: 2, get: 2, head: 2, list: 0 });
      expect(await sm.listSnapshotIds({ target: agent })).toHaveLength(2);

      const never = hookedAgent();
      const quiet = manager('quiet-session', { saveLatestOn: 'trigger', snapshotTrigger: () => false });
      quiet.initAgent(never.agent);
      await never.fire(invocation(agent));
      expect(await quiet.listSnapshotIds({ target: agent })).toHaveLength(0);
      expect(await storedLatest('quiet-session', 'test-agent')).toBeNull();
    });

    it('triggers on the message count and on agent state through agentData', async () => {
      const hooks = hookedAgent();
      const sm = manager('test-session', {
        saveLatestOn: 'trigger',
        snapshotTrigger: ({ agentData }) =>
          agentData.messages.length >= 2 || agentData.appState.get('checkpoint') === true,
      });
      sm.initAgent(hooks.agent);
      await hooks.fire(invocation(agent));
      expect(await sm.listSnapshotIds({ target: agent })).toHaveLength(0);
      agent.messages.push(MESSAGE, MESSAGE);
      await hooks.fire(invocation(agent));
      expect(await sm.listSnapshotIds({ target: agent })).toHaveLength(1);
      const other = agentNamed('other');
      other.appState.set('checkpoint', true);
      await hooks.fire(invocation(other));
      expect(await sm.listSnapshotIds({ target: other })).toHaveLength(1);
    });
  });

  describe('integration', () => {
    it('handles a complete session lifecycle: three invocations, three immutable snapshots and the latest', async () => {
      const hooks = hookedAgent();
      const target = agentNamed('agent');
      const sm = manager('lifecycle-test', { saveLatestOn: 'invocation', snapshotTrigger: () => true });
      sm.initAgent(hooks.agent);
      await hooks.fire(new InitializedEvent({ agent: target }));
      for (let i = 0; i < 3; i++) await hooks.fire(invocation(target));
      expect(await storedLatest('lifecycle-test', 'agent')).not.toBeNull();
      expect(await sm.listSnapshotIds({ target })).toHaveLength(3);
    });

    it('resumes from an immutable snapshot in a new manager', async () => {
      const hooks = hookedAgent();
      const first = agentNamed('agent');
      const sm = manager('resume-test', {
        saveLatestOn: 'trigger',
        snapshotTrigger: ({ agentData }) => agentData.messages.length === 2,
      });
      sm.initAgent(hooks.agent);
      await hooks.fire(new InitializedEvent({ agent: first }));
      first.messages.push(MESSAGE, MESSAGE);
      await hooks.fire(invocation(first));
      const ids = await sm.listSnapshotIds({ target: first });
      expect(ids).toHaveLength(1);

      const second = agentNamed('agent');
      const next = manager('resume-test', { saveLatestOn: 'invocation' });
      expect(await next.restoreSnapshot({ target: second, snapshotId: ids[0] as string })).toBe(true);
      expect(second.messages.map((m) => m.toJSON())).toEqual(first.messages.map((m) => m.toJSON()));
    });

    it('runs a real agent: invoke saves the latest, a new agent on the session resumes the conversation', async () => {
      const first = agentNamed('assistant');
      const sm = manager('conversation');
      const agent1 = new (first.constructor as typeof Agent)({
        id: 'assistant',
        model: new ScriptedModel('hello back'),
        printer: false,
        sessionManager: sm,
      });
      const turn = await user.count(() => agent1.invoke('hello'));
      // The restore at initialization (nothing yet), then the latest after the invocation.
      expect(turn.calls.map((c) => c.method)).toEqual(['GET', 'PUT']);
      expect(agent1.messages).toHaveLength(2);

      const agent2 = new (first.constructor as typeof Agent)({
        id: 'assistant',
        model: new ScriptedModel('again'),
        printer: false,
        sessionManager: manager('conversation'),
      });
      await agent2.invoke('and again');
      expect(agent2.messages.map((m) => m.toJSON()).slice(0, 2)).toEqual(
        agent1.messages.map((m) => m.toJSON()),
      );
      expect(agent2.messages).toHaveLength(4);
      expect((await storedLatest('conversation', 'assistant'))?.data.messages).toHaveLength(4);
    });
  });

  describe('deleteSession', () => {
    it('removes every snapshot of the session (one list, one delete per key), leaves the others', async () => {
      const sm = manager('test-session', { snapshotTrigger: () => true });
      await sm.saveSnapshot({ target: agent, isLatest: true });
      await sm.saveSnapshot({ target: agent, isLatest: false });
      await sm.saveSnapshot({ target: agent, isLatest: false });
      await manager('kept-session').saveSnapshot({ target: agent, isLatest: true });
      const deleted = await user.count(() => sm.deleteSession());
      expect(deleted.calls.map((c) => c.method).sort()).toEqual(['DELETE', 'DELETE', 'DELETE', 'GET']);
      expect(await user.storage.list('session/test-session/')).toEqual([]);
      expect(await sm.listSnapshotIds({ target: agent })).toEqual([]);
      expect(await sm.restoreSnapshot({ target: agent })).toBe(false);
      expect(await storedLatest('kept-session', 'test-agent')).not.toBeNull();
    });

    it('no-ops when the session does not exist (one call)', async () => {
      const deleted = await user.count(() => manager('nonexistent-session').deleteSession());
      expect(deleted.calls).toHaveLength(1);
    });
  });
});

describe('SessionManager, multi-agent (ported from the SDK tests)', () => {
  /** An orchestrator stand-in, as the SDK's tests make one. */
  function orchestratorNamed(id: string) {
    const hooks = hookedAgent();
    const orchestrator = { id, nodes: new Map(), addHook: hooks.agent.addHook };
    return { orchestrator, target: orchestrator as unknown as Graph, fire: hooks.fire };
  }
  const stateWithSteps = (steps: number) => {
    const state = new MultiAgentState({ nodeIds: ['a'] });
    state.steps = steps;
    return state;
  };

  it('saves the orchestrator snapshot as latest, with its state, and immutable ones', async () => {
    const { target } = orchestratorNamed('test-graph');
    const sm = manager('test-session');
    await sm.saveSnapshot({ target, state: stateWithSteps(3), isLatest: true });
    const latest = await storedLatest('test-session', 'test-graph', 'multiAgent');
    expect(latest?.scope).toBe('multiAgent');
    expect(latest?.data.state).toBeDefined();
    await sm.saveSnapshot({ target, isLatest: false });
    expect(
      await user.storage.list(`${scopeKey('test-session', 'multiAgent', 'test-graph')}/immutable_history/`),
    ).toHaveLength(1);
  });

  it('restores the orchestrator snapshot, false when there is none', async () => {
    const { target } = orchestratorNamed('test-graph');
    const sm = manager('test-session');
    expect(await sm.restoreSnapshot({ target })).toBe(false);
    await sm.saveSnapshot({ target, isLatest: true });
    expect(await sm.restoreSnapshot({ target })).toBe(true);
  });

  it('saves after a node call (default) and after an invocation (invocation), whatever saveLatestOn', async () => {
    const byNode = orchestratorNamed('test-graph');
    manager('node-session').initMultiAgent(byNode.orchestrator as never);
    await byNode.fire(
      new AfterNodeCallEvent({
        orchestrator: byNode.orchestrator as never,
        state: stateWithSteps(1),
        nodeId: 'a',
        invocationState: {},
      }),
    );
    expect((await storedLatest('node-session', 'test-graph', 'multiAgent'))?.scope).toBe('multiAgent');

    const byInvocation = orchestratorNamed('test-graph');
    manager('inv-session', { saveLatestOn: 'trigger', multiAgentSaveLatestOn: 'invocation' }).initMultiAgent(
      byInvocation.orchestrator as never,
    );
    await byInvocation.fire(
      new AfterMultiAgentInvocationEvent({
        orchestrator: byInvocation.orchestrator as never,
        state: stateWithSteps(1),
        invocationState: {},
      }),
    );
    expect(await storedLatest('inv-session', 'test-graph', 'multiAgent')).not.toBeNull();
  });

  it('keeps agent and multi-agent snapshots apart', async () => {
    const { target } = orchestratorNamed('test-graph');
    const sm = manager('shared-session');
    await sm.saveSnapshot({ target: agentNamed('test-agent'), isLatest: true });
    await sm.saveSnapshot({ target, isLatest: true });
    expect((await storedLatest('shared-session', 'test-agent'))?.scope).toBe('agent');
    expect((await storedLatest('shared-session', 'test-graph', 'multiAgent'))?.scope).toBe('multiAgent');
  });

  it('restores state before the first invocation of each orchestrator, once', async () => {
    const a = orchestratorNamed('graph-a');
    const b = orchestratorNamed('swarm-b');
    const saver = manager('test-session');
    const state = stateWithSteps(7);
    const node = state.node('a');
    if (node) {
      node.status = Status.COMPLETED;
      node.results.push(
        new NodeResult({
          nodeId: 'a',
          status: Status.COMPLETED,
          duration: 100,
          content: [new TextBlock('done')],
        }),
      );
    }
    await saver.saveSnapshot({ target: a.target, state, isLatest: true });
    await saver.saveSnapshot({ target: b.target, state: stateWithSteps(5), isLatest: true });

    const sm = manager('test-session');
    sm.initMultiAgent(a.orchestrator as never);
    sm.initMultiAgent(b.orchestrator as never);
    const restoreBefore = (o: ReturnType<typeof orchestratorNamed>, s: MultiAgentState) =>
      o.fire(
        new BeforeMultiAgentInvocationEvent({
          orchestrator: o.orchestrator as never,
          state: s,
          invocationState: {},
        }),
      );
    const stateA = new MultiAgentState({ nodeIds: ['a'] });
    await restoreBefore(a, stateA);
    expect(stateA.steps).toBe(7);
    expect(stateA.node('a')?.status).toBe(Status.COMPLETED);
    expect(stateA.node('a')?.results[0]?.nodeId).toBe('a');
    expect(stateA.node('a')?.content[0]).toEqual(expect.objectContaining({ text: 'done' }));
    const stateB = new MultiAgentState({ nodeIds: ['a'] });
    await restoreBefore(b, stateB);
    expect(stateB.steps).toBe(5);
    const again = new MultiAgentState({ nodeIds: ['a'] });
    await restoreBefore(a, again);
    expect(again.steps).toBe(0);

    const empty = orchestratorNamed('test-graph');
    manager('empty-session').initMultiAgent(empty.orchestrator as never);
    const fresh = new MultiAgentState({ nodeIds: ['a'] });
    await restoreBefore(empty, fresh);
    expect(fresh.steps).toBe(0);
  });
});

describe('a snapshot too large for a request body', () => {
  it('is uploaded straight to the object store and read back from it (fs driver, presigned)', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'strands-big-'));
    const big = await startWorkspaceApi(createFsDriver({ root, presign: { baseUrl: () => localBase.url } }));
    try {
      const calls: string[] = [];
      const client = createHttpClient({
        baseUrl: big.baseUrl,
        token: () => hsToken({ sub: 'big' }),
        bodyLimitBytes: BODY_LIMIT,
        fetch: (async (input: string | URL | Request, init?: RequestInit) => {
          const url = new URL(String(input));
          calls.push(`${init?.method ?? 'GET'} ${url.pathname.startsWith('/v1/blobs/') ? 'direct' : 'api'}`);
          return fetch(input, init);
        }) as typeof fetch,
      });
      const sm = new SessionManager({ sessionId: 'big-session', storage: createStrandsStorage(client) });
      const talker = agentNamed('talker');
      for (let i = 0; i < 40; i++)
        talker.messages.push(
          new Message({ role: 'user', content: [new TextBlock(`${i} ${'x'.repeat(4000)}`)] }),
        );
      await sm.saveSnapshot({ target: talker, isLatest: true });
      expect(calls).toEqual(['POST api', 'PUT direct', 'POST api']);
      calls.length = 0;
      const back = agentNamed('talker');
      expect(await sm.restoreSnapshot({ target: back })).toBe(true);
      expect(calls).toEqual(['GET api', 'GET direct']);
      expect(back.messages.map((m) => m.toJSON())).toEqual(talker.messages.map((m) => m.toJSON()));
    } finally {
      await big.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('the bench operations', () => {
  /** Most HTTP calls of one run of each operation (the README's table). */
  const CEILINGS: Record<string, number> = {
    'saveSnapshot (latest)': 1,
    'saveSnapshot (immutable)': 1,
    'restoreSnapshot (latest)': 1,
    'listSnapshotIds (limit 10)': 1,
    'Storage.read': 1,
    // listSessionIds, then one listKeys per session.
    'Storage.list (session/, 61 sessions)': 1 + 61,
    // One listKeys, then one DELETE per key.
    'deleteSession (latest + 2 immutable)': 1 + 3,
  };

  it('stay within their call ceilings (three runs each)', async () => {
    const ops = await strandsBench.prepare(user.client);
    expect(ops.map((o) => o.name)).toEqual(Object.keys(CEILINGS));
    const rows: string[] = [];
    for (const op of ops) {
      for (let i = 0; i < 3; i++) {
        const { calls, requests } = await user.count(() => op.run());
        expect(calls.length, op.name).toBe(CEILINGS[op.name]);
        if (i === 0)
          rows.push(
            `${op.name}: ${calls.length} calls (${[...new Set(calls.map((c) => c.method))].join('/')}); object requests ${JSON.stringify(
              Object.fromEntries(Object.entries(requests).filter(([, n]) => n > 0)),
            )}`,
          );
      }
    }
    console.info(`Strands bench, per run:\n${rows.join('\n')}`);
  });
});

describe('the entry', () => {
  it('loads with the SDK installed and exports the storage', async () => {
    const entry = await import('../../lib/entries/strands.js');
    expect(typeof entry.createStrandsStorage).toBe('function');
    expect(entry.STRANDS_SESSIONS).toBe('session/');
  });

  it('throws a MissingPeerError naming the package when the SDK is not installed', async () => {
    const printed = await importWithoutSdk(path.resolve('lib/entries/strands.ts'));
    expect(printed).toMatch(
      /^MissingPeerError: agent-state-store\/strands needs the package @strands-agents\/sdk/,
    );
  });
});
