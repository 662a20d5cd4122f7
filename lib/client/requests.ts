/**
 * How the client sends: an API call (its token and JSON body; sent again when that is safe, and
 * whenever it is answered `contended`; its answer read whole within the attempt), and a presigned
 * request to the object store (sent again on network errors, timeouts and 5xx). And how an answer
 * becomes what the protocol says it is: its body validated with the protocol's schema, or the typed
 * error its problem names, carrying the answer's request id. The headers the writes share (the
 * fencing token, the conditions of a save) are built here too.
 */

import type * as z from 'zod/mini';
import { DEFAULTS } from '../contract/defaults.js';
import { BackendError, ProtocolError, type StoreError } from '../contract/errors.js';
import type { Lease } from '../contract/lock.js';
import type { SaveOptions, WriteOptions } from '../contract/types.js';
import { isFinalProblem, type ProblemCode, problemCodeOf, problemError } from '../protocol/problems.js';
import { HEADER_NAMES, REQUEST_ID_HEADER, type schemas } from '../protocol/schemas.js';
import { MIB } from '../util/units.js';
import {
  type Attempt,
  NULL_BODY,
  nodeFetch,
  pauseMs,
  RequestTimeoutError,
  race,
  sleep,
  startAttempt,
} from './transport.js';
import type { CallOptions, HttpClientOptions } from './types.js';

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);
const TRANSIENT = new Set([429, 500, 502, 503, 504]);

/** The problem code of a 409 or 503 answer (read from a clone: the answer stays readable). */
async function codeOf(response: Response): Promise<ProblemCode | undefined> {
  if (response.status !== 409 && response.status !== 503) return undefined;
  return problemCodeOf(
    await response
      .clone()
      .json()
      .catch(() => undefined),
  );
}

/** The request id of an API answer (`X-Request-Id`), or of an object store's. */
export const requestIdOf = (response: Response) =>
  response.headers.get(REQUEST_ID_HEADER) ??
  response.headers.get('x-amz-request-id') ??
  response.headers.get('x-oss-request-id') ??
  undefined;

/** `error`, carrying the request id of the answer it comes from. */
export function tagged<E extends StoreError>(
  error: E,
  response: Response | { requestId?: string | undefined },
): E {
  const id = response instanceof Response ? requestIdOf(response) : response.requestId;
  if (id !== undefined) error.requestId = id;
  return error;
}

/**
 * The body of an answer, validated with the protocol's schema; a `ProtocolError` when it is not
 * JSON or not of that schema (never a cast).
 */
export async function bodyOf<S extends z.ZodMiniType>(
  response: Response,
  schema: S,
  what: string,
): Promise<z.output<S>> {
  let value: unknown;
  try {
    value = await response.json();
  } catch (error) {
    throw tagged(
      new ProtocolError(`${what}: the ${response.status} answer is not JSON`, response.status, {
        cause: error,
      }),
      response,
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
    const expected = issue && 'expected' in issue ? ` (expected ${String(issue.expected)})` : '';
    throw tagged(
      new ProtocolError(
        `${what}: malformed ${response.status} answer${at}: ${issue?.code ?? 'invalid'}${expected}`,
        response.status,
      ),
      response,
    );
  }
  return parsed.data;
}

/**
 * Raises the typed error of an answer that is not a success: the protocol's table for its problem
 * code, else one for its status (API Gateway's own answers carry only {"message": ...}).
 */
export async function fail(response: Response): Promise<never> {
  if (response.status < 400)
    throw tagged(new ProtocolError(`unexpected ${response.status} answer`, response.status), response);
  throw problemError(response.status, await response.json().catch(() => undefined), requestIdOf(response));
}

/** A body, whole, as one answer carries it: a fresh `Response` that can be read at leisure. */
async function buffered(response: Response): Promise<Response> {
  if (!response.body) return response;
  const bytes = await response.arrayBuffer();
  return new Response(NULL_BODY.has(response.status) ? null : bytes, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** Drops a body nobody will read. */
const discard = (response: Response | undefined) => response?.body?.cancel().catch(() => {});

/** The chunks of an answer's body; each restarts the attempt's clock; an abort or timeout ends it. */
export async function* chunksOf(response: Response, clock: Attempt): AsyncGenerator<Uint8Array> {
  if (!response.body) return;
  const reader = response.body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await race(reader.read(), clock.signal);
      if (done) {
        finished = true;
        return;
      }
      clock.touch();
      yield value;
    }
  } finally {
    if (!finished) reader.cancel().catch(() => {});
    try {
      reader.releaseLock();
    } catch {
      // a read still pending on a cancelled stream
    }
  }
}

/** What a failed attempt amounts to: the call's abort reason, the attempt's timeout, or `error`. */
function failureOf(error: unknown, clock: Attempt, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  if (clock.timedOut) return clock.signal.reason;
  return error;
}

/** Only the call options of an options object. */
export const callOf = (o: CallOptions | undefined): CallOptions => ({
  signal: o?.signal,
  timeoutMs: o?.timeoutMs,
});

/** The fencing-token header of a write that carries a token. */
export const fence = (o: WriteOptions | undefined): Record<string, string> =>
  o?.token === undefined ? {} : { [HEADER_NAMES.fencingToken]: String(o.token) };

/** The headers of a save's conditions: its token, `ifVersion` and `ifAbsent`. */
export const conditions = (o: SaveOptions): Record<string, string> => ({
  ...fence(o),
  ...(o.ifVersion !== undefined ? { [HEADER_NAMES.ifMatch]: `"${o.ifVersion}"` } : {}),
  ...(o.ifAbsent ? { [HEADER_NAMES.ifNoneMatch]: '*' } : {}),
});

/** A lease as an answer carries it, with its expiry as a Date. */
export const leaseOf = (lease: z.output<typeof schemas.Lease>): Lease => ({
  ...lease,
  expiresAt: new Date(lease.expiresAt),
});

/** What an API call sends besides its method and path, and how it may be retried. */
export interface CallInit {
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  call?: CallOptions | undefined;
  /** Whether a lost answer may be retried; default by method (an append says so itself). */
  idempotent?: boolean;
  /** Time the server may take on purpose (a lock's `waitMs`), added to the timeout. */
  extraMs?: number;
  /** Set when an attempt whose answer was lost (network error, timeout, 5xx) was sent again. */
  retried?: { lost: boolean };
}

/** A presigned request to the object store, as the API signs it. */
type StoreRequest = { method: string; url: string; headers: Readonly<Record<string, string>> };

/**
 * What every part of the client shares: where the API is, its token, the fetches, the attempts and
 * the timeouts; and the two ways of sending, to the API and straight to the object store.
 */
export class Requests {
  /** Largest request body the API takes; a larger value is uploaded directly and committed. */
  readonly bodyLimit: number;
  private readonly base: string;
  private readonly attempts: number;
  private readonly timeoutMs: number;
  private readonly apiFetch: typeof fetch;
  private readonly downloadFetch: typeof nodeFetch;

  constructor(private readonly options: HttpClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.attempts = options.attempts ?? 4;
    this.apiFetch = options.fetch ?? fetch;
    // Direct downloads without a given fetch: node:http(s), which hands over the bytes as stored.
    this.downloadFetch = options.fetch ?? nodeFetch;
    this.bodyLimit = options.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /**
   * Whether direct downloads go through the fetch the client was given, which decodes a body
   * served with its Content-Encoding (node:http(s) hands over the bytes as stored).
   */
  get downloadsThroughFetch(): boolean {
    return this.options.fetch !== undefined;
  }

  /**
   * An API call: sent again (after the answer's `Retry-After` or a jittered backoff) on a network
   * error, a timeout or a 429/5xx when a retry is safe, and on any `contended` answer; the answer
   * is read whole within its attempt. `path` is built with the protocol's `paths`, which check ids
   * as the library checks them (an id with a lone surrogate cannot even be encoded).
   */
  async call(method: string, path: string, init: CallInit = {}): Promise<Response> {
    const { options, attempts } = this;
    const signal = init.call?.signal;
    signal?.throwIfAborted();
    const query = Object.entries(init.query ?? {}).filter(([, v]) => v !== undefined);
    const url = `${this.base}${path}${query.length > 0 ? `?${new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)]))}` : ''}`;
    const token =
      typeof options.token !== 'function'
        ? options.token
        : signal
          ? await race(Promise.resolve(options.token()), signal)
          : await options.token();
    const headers: Record<string, string> = { ...init.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const body = init.body === undefined ? undefined : JSON.stringify(init.body);
    const idempotent = init.idempotent ?? IDEMPOTENT.has(method);
    const limit = init.call?.timeoutMs ?? this.timeoutMs;
    const send = this.apiFetch;
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      const clock = startAttempt(signal, limit > 0 ? limit + (init.extraMs ?? 0) : 0, `${method} ${path}`);
      try {
        // A 303 (a value too large for an answer) is followed by hand, without the Authorization.
        const answer = send(url, { method, headers, body, redirect: 'manual', signal: clock.signal });
        // Read whole within the attempt: an answer that stops half way times out too.
        response = await race(buffered(await race(answer, clock.signal, discard)), clock.signal);
      } catch (error) {
        failure = failureOf(error, clock, signal);
        if (signal?.aborted) throw failure;
      } finally {
        clock.end();
      }
      if (attempt < attempts) {
        const code = response && (await codeOf(response));
        // A backend that does not honour write conditions, or a deployment that refuses the
        // service, stays so: no retry helps (`final` in the problem table).
        const retryable = (!response || TRANSIENT.has(response.status)) && !isFinalProblem(code);
        // Nothing was written after `contended`: any method may be sent again.
        const wait = pauseMs(attempt, response, code === 'contended');
        if (wait !== undefined && ((idempotent && retryable) || (response && code === 'contended'))) {
          if (init.retried && (!response || response.status >= 500)) init.retried.lost = true;
          await sleep(wait, signal);
          continue;
        }
      }
      if (!response) {
        if (failure instanceof RequestTimeoutError) throw failure;
        throw new BackendError(`request failed: ${String(failure)}`, true, { cause: failure });
      }
      return response;
    }
  }

  /**
   * A presigned request to the object store, retried on network errors, timeouts and 5xx (waiting
   * per a 503's Retry-After); the answer is handed to `read` under the same clock, which each chunk
   * restarts. An upload's clock allows 1 s more per MiB sent.
   */
  async direct<T = void>(
    request: StoreRequest,
    o: { body?: Uint8Array; call?: CallOptions | undefined; download?: boolean },
    read: (response: Response, clock: Attempt) => Promise<T> = async (response) => {
      await response.arrayBuffer();
      return undefined as T;
    },
  ): Promise<T> {
    const { attempts } = this;
    const signal = o.call?.signal;
    signal?.throwIfAborted();
    const send = o.download ? this.downloadFetch : this.apiFetch;
    const ms = o.call?.timeoutMs ?? this.timeoutMs;
    const limit = ms > 0 ? ms + Math.ceil((o.body?.byteLength ?? 0) / MIB) * 1000 : 0;
    const what = `object store ${request.method}`;
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      const clock = startAttempt(signal, limit, what);
      let wait: number | undefined;
      try {
        try {
          const answer = send(request.url, {
            method: request.method,
            headers: { ...request.headers },
            body: o.body,
            signal: clock.signal,
          });
          response = await race(answer, clock.signal, discard);
        } catch (error) {
          failure = failureOf(error, clock, signal);
          if (signal?.aborted) throw failure;
        }
        wait = pauseMs(attempt, response);
        if (response && (response.ok || response.status < 500 || attempt >= attempts || wait === undefined)) {
          if (!response.ok) {
            const text = await race(response.text(), clock.signal);
            const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? `HTTP ${response.status}`;
            throw tagged(
              new BackendError(`object store refused the ${request.method}: ${code}`, response.status >= 500),
              response,
            );
          }
          return await read(response, clock);
        }
        await discard(response);
      } catch (error) {
        throw failureOf(error, clock, signal);
      } finally {
        clock.end();
      }
      if (!response && attempt >= attempts) {
        if (failure instanceof RequestTimeoutError) throw failure;
        throw new BackendError(`object store request failed: ${String(failure)}`, true, { cause: failure });
      }
      await sleep(wait ?? 0, signal);
    }
  }

  /** A JSON document too large for an answer (a value, a list item), read from where it is stored. */
  async readStored<T>(download: StoreRequest, o: CallOptions | undefined): Promise<T> {
    const bytes = await this.direct(download, { call: o }, async (answer, clock) => {
      const chunks: Uint8Array[] = [];
      for await (const chunk of chunksOf(answer, clock)) chunks.push(chunk);
      return Buffer.concat(chunks);
    });
    return JSON.parse(bytes.toString('utf8')) as T;
  }
}
