/**
 * Helpers of the Strands adapter's tests: the local API (memory driver) with a fresh user per
 * test and a fetch that counts the client's calls, a model that answers one scripted line, and an
 * agent stand-in that records the hooks a plugin registers (as the SDK's own tests do).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { ModelStreamEvent } from '@strands-agents/sdk';
import {
  Agent,
  type BaseModelConfig,
  type HookableEvent,
  type LocalAgent,
  type Message,
  Model,
} from '@strands-agents/sdk';
import { createStrandsStorage, type StrandsStorage } from '../../lib/adapters/strands.js';
import { createHttpClient, type HttpSessionStore } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { hsToken, SECRET } from '../http/harness.js';
import { counting } from '../store/wrappers.js';

/** One HTTP call the client made: its method and path (with the query). */
export interface Call {
  readonly method: string;
  readonly path: string;
}

/**
 * The local API on the memory driver (its object requests counted); `user()` answers a client, its
 * Strands storage and its calls.
 */
export async function strandsApi() {
  const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
  const driver = counting(createMemoryDriver());
  const app = createApp(config, { driver, lock: createMemoryLock() });
  const server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    /** A fresh user: nothing of another test is visible. */
    user() {
      const calls: Call[] = [];
      const counted = (async (input: string | URL | Request, init?: RequestInit) => {
        const url = new URL(String(input));
        calls.push({ method: init?.method ?? 'GET', path: `${url.pathname}${url.search}` });
        return fetch(input, init);
      }) as typeof fetch;
      const sub = `u-${randomUUID()}`;
      const client: HttpSessionStore = createHttpClient({
        baseUrl,
        token: () => hsToken({ sub }),
        fetch: counted,
      });
      const storage: StrandsStorage = createStrandsStorage(client);
      /** The HTTP calls `work` makes, and the object requests they cost (by driver method). */
      const count = async <T>(work: () => Promise<T>) => {
        const from = calls.length;
        driver.reset();
        const result = await work();
        return { result, calls: calls.slice(from), requests: { ...driver.calls } };
      };
      return { client, storage, calls, count };
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A model that answers every turn with one line of text (no network). */
export class ScriptedModel extends Model<BaseModelConfig> {
  private config: BaseModelConfig = { modelId: 'scripted' };
  constructor(private readonly line = 'ok') {
    super();
  }
  updateConfig(config: BaseModelConfig): void {
    this.config = { ...this.config, ...config };
  }
  getConfig(): BaseModelConfig {
    return this.config;
  }
  async *stream(_messages: Message[]): AsyncIterable<ModelStreamEvent> {
    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: this.line } };
    yield { type: 'modelContentBlockStopEvent' };
    yield { type: 'modelMessageStopEvent', stopReason: 'endTurn' };
  }
}

/** A real agent (its snapshots are the SDK's own) that never calls a model unless invoked. */
export function agentNamed(id: string, options: { messages?: Message[] } = {}): Agent {
  return new Agent({ id, model: new ScriptedModel(), printer: false, ...options });
}

/** A hook registration a plugin made. */
export interface TrackedHook {
  readonly eventType: unknown;
  readonly callback: (event: HookableEvent) => unknown;
}

/** An agent stand-in that records the hooks registered on it (`initAgent` needs only `addHook`). */
export function hookedAgent() {
  const trackedHooks: TrackedHook[] = [];
  const agent = {
    addHook(eventType: unknown, callback: (event: HookableEvent) => unknown) {
      trackedHooks.push({ eventType, callback });
      return () => {};
    },
  };
  return {
    agent: agent as unknown as LocalAgent,
    trackedHooks,
    /** Calls the hook registered for the event's class. */
    async fire(event: HookableEvent) {
      const hook = trackedHooks.find((h) => h.eventType === event.constructor);
      if (!hook) throw new Error(`no hook for ${event.constructor.name}`);
      await hook.callback(event);
    },
  };
}

/**
 * Imports `entry` (a TypeScript module, through tsx) in a child process where `@strands-agents/sdk`
 * resolves as a package that is not installed; answers what it printed: `loaded`, or the error's
 * name and message.
 */
export async function importWithoutSdk(entry: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'strands-peer-'));
  try {
    await writeFile(
      path.join(dir, 'hooks.mjs'),
      `export async function resolve(specifier, context, next) {
  if (specifier === '@strands-agents/sdk' || specifier.startsWith('@strands-agents/sdk/')) {
    const error = new Error("Cannot find package '@strands-agents/sdk' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}
`,
    );
    await writeFile(
      path.join(dir, 'hide.mjs'),
      "import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n",
    );
    const script = `import(${JSON.stringify(entry)}).then(() => console.log('loaded'), (e) => console.log(e.name + ': ' + e.message))`;
    const args = ['--import', 'tsx', '--import', path.join(dir, 'hide.mjs'), '-e', script];
    const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: process.cwd() });
    return stdout.trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
