/**
 * Helpers of the OpenAI Agents SDK adapter's tests: the local API started in-process
 * (the memory driver, or the fs driver whose presigned URLs the same server answers, for items too
 * large for a request body), clients whose HTTP calls are counted, and a scripted model.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Model, ModelRequest, ModelResponse, protocol } from '@openai/agents-core';
import { Usage } from '@openai/agents-core';
import { createHttpClient, type HttpSessionStore } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { hsToken, SECRET } from '../http/harness.js';

/** One HTTP call a client made: method and path (no query). */
export interface Call {
  readonly method: string;
  readonly path: string;
  /** Bytes of the request body. */
  readonly bytes: number;
}

/** A client of alice that records its calls, and a hook run before each call is sent. */
export interface CountingClient {
  readonly client: HttpSessionStore;
  readonly calls: Call[];
  /** Runs before each request leaves (await it to hold the request back). */
  before?: (call: Call) => Promise<void> | void;
  /** The calls `work` makes. */
  count<T>(work: () => Promise<T>): Promise<{ result: T; calls: Call[] }>;
}

export interface LocalApi {
  readonly baseUrl: string;
  /** A new client of alice (its own view of every list), counting its calls. */
  client(): CountingClient;
  close(): Promise<void>;
}

/**
 * The API on node:http: `memory` storage, or `fs` storage under a temporary folder with presigned
 * URLs served by the same server (the direct uploads and downloads of big values).
 */
export async function startApi(storage: 'memory' | 'fs' = 'memory'): Promise<LocalApi> {
  const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
  let baseUrl = '';
  const root = storage === 'fs' ? await mkdtemp(path.join(tmpdir(), 'openai-agents-')) : undefined;
  const fsDriver = root ? createFsDriver({ root, presign: { baseUrl: () => baseUrl } }) : undefined;
  const driver = fsDriver ?? createMemoryDriver();
  const app = createApp(config, { driver, lock: createMemoryLock() });
  const blobs = fsDriver?.serveBlob
    ? { serveBlob: fsDriver.serveBlob, limitBytes: 64 * 1024 * 1024 }
    : undefined;
  const server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES, blobs);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    client() {
      const calls: Call[] = [];
      const counting: CountingClient = {
        calls,
        client: createHttpClient({
          baseUrl,
          token: () => hsToken({ sub: 'alice' }),
          fetch: (async (input: string | URL | Request, init?: RequestInit) => {
            const body = init?.body;
            const bytes =
              typeof body === 'string'
                ? Buffer.byteLength(body)
                : body instanceof Uint8Array
                  ? body.byteLength
                  : 0;
            const call = { method: init?.method ?? 'GET', path: new URL(String(input)).pathname, bytes };
            calls.push(call);
            await counting.before?.(call);
            return fetch(input, init);
          }) as typeof fetch,
        }),
        async count(work) {
          const from = calls.length;
          const result = await work();
          return { result, calls: calls.slice(from) };
        },
      };
      return counting;
    },
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      if (root) await rm(root, { recursive: true, force: true });
    },
  };
}

/**
 * A model answering from a script: each call takes the next response (its output items), and
 * records the input it was given.
 */
export class ScriptedModel implements Model {
  readonly inputs: ModelRequest['input'][] = [];
  constructor(private readonly script: Array<() => protocol.OutputModelItem[]>) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.inputs.push(structuredClone(request.input));
    const next = this.script[this.inputs.length - 1];
    if (!next) throw new Error(`the script has no response ${this.inputs.length}`);
    return { usage: new Usage(), output: next(), responseId: `resp_${this.inputs.length}` };
  }

  // biome-ignore lint/correctness/useYield: the scripted model does not stream
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('the scripted model does not stream');
  }
}

/**
 * What importing `entry` prints in a child process (tsx), with `@openai/agents-core` hidden from
 * module resolution when `hidePeer`: `loaded`, or the error's name and message.
 */
export async function importInChild(entry: string, hidePeer: boolean): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'hide-peer-'));
  try {
    // A resolve hook answering the package as not installed, as Node does for a missing one.
    await writeFile(
      path.join(dir, 'hide.mjs'),
      `export async function resolve(specifier, context, next) {
  if (specifier === '@openai/agents-core' || specifier.startsWith('@openai/agents-core/')) {
    const error = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}
`,
    );
    await writeFile(
      path.join(dir, 'register.mjs'),
      "import { register } from 'node:module';\nregister('./hide.mjs', import.meta.url);\n",
    );
    const script = `import(${JSON.stringify(entry)}).then(() => console.log('loaded'), (e) => console.log(e.name + ': ' + e.message))`;
    const args = [
      '--import',
      'tsx',
      ...(hidePeer ? ['--import', path.join(dir, 'register.mjs')] : []),
      '-e',
      script,
    ];
    const { stdout } = await promisify(execFile)(process.execPath, args, { cwd: process.cwd() });
    return stdout.trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
