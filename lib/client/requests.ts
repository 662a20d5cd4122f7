/**
 * How the client sends: an API call (its token and JSON body; sent again when that is safe, and
 * whenever it is answered `contended`; its answer read whole within the attempt), and a presigned
 * request to the object store (sent again on network errors, timeouts and 5xx). And how an answer
 * becomes what the protocol says it is: its body validated with the protocol's schema, or the typed
 * error its problem names, carrying the answer's status, request id, problem code and problem. The
 * headers the writes share (the fencing token, the conditions of a save) are built here too. Every
 * retry is a debug line for the client's `logger`: the request, the attempt, what went wrong, the
 * wait; never a header (the token), a body or a signed URL's query.
 */

import type * as z from 'zod/mini';
import { DEFAULTS } from '../contract/defaults.js';
import { BackendError, type ProblemDetails, ProtocolError, type StoreError } from '../contract/errors.js';
import type { Lease } from '../contract/lock.js';
import { isRevision } from '../contract/revisions.js';
import type { SaveOptions, WriteOptions } from '../contract/types.js';
import { isFinalProblem, type ProblemCode, problemCodeOf, problemError } from '../protocol/problems.js';
import { HEADER_NAMES, REQUEST_ID_HEADER, REVISION_HEADER, type schemas } from '../protocol/schemas.js';
import { concatBytes, utf8Text } from '../util/bytes.js';
import { MIB } from '../util/units.js';
import { type ClientSettings, settingsOf } from './settings.js';
import {
  type Attempt,
  type DirectFetch,
  NULL_BODY,
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

/** Whether a value is an answer (a fetch `Response`, of any realm or library). */
const isAnswer = (value: unknown): value is Response =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Response).status === 'number' &&
  typeof (value as Response).headers?.get === 'function';

/**
 * `error`, carrying the status and request id of the answer it comes from (or what another error
 * of that answer carries, or a page's request id).
 */
export function tagged<E extends StoreError>(
  error: E,
  from: Response | StoreError | { requestId?: string | undefined },
): E {
  // An answer by its shape: a given fetch may answer with another realm's (or library's) Response.
  if (isAnswer(from)) {
    const id = requestIdOf(from);
    if (id !== undefined) error.requestId = id;
    error.status ??= from.status;
    return error;
  }
  if (from.requestId !== undefined) error.requestId = from.requestId;
  if ('status' in from && from.status !== undefined) error.status ??= from.status;
  if ('code' in from && from.code !== undefined) error.code ??= from.code;
  if ('problem' in from && from.problem !== undefined) error.problem ??= from.problem;
  return error;
}

/** An RFC 9457 problem, as an answer's body is one: an object with a `type` or a `title`. */
const problemOf = (body: unknown): ProblemDetails | undefined =>
  typeof body === 'object' &&
  body !== null &&
  !Array.isArray(body) &&
  (typeof (body as ProblemDetails).type === 'string' || typeof (body as ProblemDetails).title === 'string')
    ? (body as ProblemDetails)
    : undefined;

/** `error`, carrying its answer's status and request id, and its problem (and code) when the body is one. */
function withProblem<E extends StoreError>(error: E, response: Response, body: unknown): E {
  tagged(error, response);
  const problem = problemOf(body);
  if (problem) {
    error.problem = problem;
    if (typeof problem.code === 'string') error.code = problem.code;
  }
  return error;
}

/** `error` for an answer whose body was not read: tagged, with the answer's problem when it has one. */
export async function answered<E extends StoreError>(error: E, response: Response): Promise<E> {
  let body: unknown;
  try {
    body = await response.clone().json();
  } catch {
    body = undefined;
  }
  return withProblem(error, response, body);
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
  const body: unknown = await response.json().catch(() => undefined);
  throw withProblem(problemError(response.status, body, requestIdOf(response)), response, body);
}

/**
 * Whether fetch hid a redirect: a browser answers a 303 to `redirect: 'manual'` with an opaque
 * redirect (status 0, no headers, no body), so a large value's location in that answer is out of
 * reach (the client then asks a snapshot, whose body names it).
 */
export const hiddenRedirect = (response: Response): boolean =>
  response.type === 'opaqueredirect' || response.status === 0;

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

/** The headers of a save's conditions: its token, `ifVersion`, `ifAbsent` and `ifRevision`. */
export const conditions = (o: SaveOptions): Record<string, string> => ({
  ...fence(o),
  ...(o.ifVersion !== undefined ? { [HEADER_NAMES.ifMatch]: `"${o.ifVersion}"` } : {}),
  ...(o.ifAbsent ? { [HEADER_NAMES.ifNoneMatch]: '*' } : {}),
  ...(o.ifRevision !== undefined ? { [HEADER_NAMES.ifRevision]: String(o.ifRevision) } : {}),
});

/** The version and revision a value's answer carries in ETag and Agent-State-Revision (else a `ProtocolError`). */
export function versionOf(response: Response, what: string): { version: string; revision: number } {
  const version = /^"([^"]*)"$/.exec(response.headers.get('etag') ?? '')?.[1];
  const revision = Number(response.headers.get(REVISION_HEADER) ?? '');
  if (version === undefined)
    throw tagged(
      new ProtocolError(`${what}: the ${response.status} answer has no strong ETag`, response.status),
      response,
    );
  if (!isRevision(revision))
    throw tagged(
      new ProtocolError(`${what}: the ${response.status} answer has no ${REVISION_HEADER}`, response.status),
      response,
    );
  return { version, revision };
}

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

/** What a failed attempt was, for a debug line. */
function whatWentWrong(response: Response | undefined, failure: unknown, code: string | undefined): string {
  if (response) {
    const id = requestIdOf(response);
    return `answered ${response.status}${code ? ` ${code}` : ''}${id ? ` (request id ${id})` : ''}`;
  }
  if (failure instanceof RequestTimeoutError) return `timed out after ${failure.timeoutMs} ms`;
  const cause = (failure as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  const message = failure instanceof Error ? failure.message : String(failure);
  return `failed: ${message}${typeof cause === 'string' ? ` (${cause})` : ''}`;
}

/**
 * What every part of the client shares: where the API is, its token, the fetches, the attempts and
 * the timeouts, the User-Agent and the logger; and the two ways of sending, to the API and
 * straight to the object store.
 */
export class Requests {
  /** Largest request body the API takes; a larger value is uploaded directly and committed. */
  readonly bodyLimit: number;
  private readonly settings: ClientSettings;
  private readonly attempts: number;
  private readonly timeoutMs: number;
  private readonly apiFetch: typeof fetch;
  private readonly downloadFetch: DirectFetch;
  private readonly rawDownloads: boolean;

  /**
   * `rawFetch`, when the runtime has one (the Node entry's node:http(s) GET), takes the direct
   * downloads of a client given no `fetch`: it hands over the bytes as stored, never decoded.
   */
  constructor(options: HttpClientOptions | undefined, rawFetch?: DirectFetch) {
    this.settings = settingsOf(options);
    this.attempts = options?.attempts ?? 4;
    // Called as a function, never as a method of this object (a browser's fetch needs its global).
    this.apiFetch = options?.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.rawDownloads = options?.fetch === undefined && rawFetch !== undefined;
    this.downloadFetch = (this.rawDownloads ? rawFetch : undefined) ?? this.apiFetch;
    this.bodyLimit = options?.bodyLimitBytes ?? DEFAULTS.bodyLimitBytes;
    this.timeoutMs = options?.timeoutMs ?? 30_000;
  }

  /**
   * Whether direct downloads go through a fetch, which decodes a body served with its
   * Content-Encoding (the raw download hands over the bytes as stored).
   */
  get downloadsThroughFetch(): boolean {
    return !this.rawDownloads;
  }

  /** The headers every request carries: the User-Agent, where the runtime lets a script set it. */
  private withAgent(headers: Readonly<Record<string, string>>): Record<string, string> {
    const agent = this.settings.userAgent;
    return agent === undefined || 'user-agent' in headers
      ? { ...headers }
      : { ...headers, 'user-agent': agent };
  }

  /** A debug line for the logger, when there is one (never with a header, a body or a URL's query). */
  private debug(line: string): void {
    try {
      this.settings.logger?.debug(`agent-state-store: ${line}`);
    } catch {
      // A logger that throws must not fail the call.
    }
  }

  /**
   * An API call: sent again (after the answer's `Retry-After` or a jittered backoff) on a network
   * error, a timeout or a 429/5xx when a retry is safe, and on any `contended` answer; the answer
   * is read whole within its attempt. `path` is built with the protocol's `paths`, which check ids
   * as the library checks them (an id with a lone surrogate cannot even be encoded).
   */
  async call(method: string, path: string, init: CallInit = {}): Promise<Response> {
    const { settings, attempts } = this;
    const signal = init.call?.signal;
    signal?.throwIfAborted();
    const query = Object.entries(init.query ?? {}).filter(([, v]) => v !== undefined);
    const url = `${settings.baseUrl}${path}${query.length > 0 ? `?${new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)]))}` : ''}`;
    const token =
      typeof settings.token !== 'function'
        ? settings.token
        : signal
          ? await race(Promise.resolve(settings.token()), signal)
          : await settings.token();
    const headers = this.withAgent(init.headers ?? {});
    if (token) headers.authorization = `Bearer ${token}`;
    if (settings.user !== undefined) headers[HEADER_NAMES.user] = settings.user;
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
          this.debug(
            `${method} ${path}: attempt ${attempt} of ${attempts} ${whatWentWrong(response, failure, code)}; retrying in ${Math.round(wait)} ms`,
          );
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
    const headers = this.withAgent(request.headers);
    for (let attempt = 1; ; attempt++) {
      let response: Response | undefined;
      let failure: unknown;
      const clock = startAttempt(signal, limit, what);
      let wait: number | undefined;
      try {
        try {
          const answer = send(request.url, {
            method: request.method,
            headers,
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
            const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
            const error = tagged(
              new BackendError(
                `object store refused the ${request.method}: ${code ?? `HTTP ${response.status}`}`,
                response.status >= 500,
              ),
              response,
            );
            if (code !== undefined) error.code = code;
            throw error;
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
      this.debug(
        `${what} ${hostOf(request.url)}: attempt ${attempt} of ${attempts} ${whatWentWrong(response, failure, undefined)}; retrying in ${Math.round(wait ?? 0)} ms`,
      );
      await sleep(wait ?? 0, signal);
    }
  }

  /** A JSON document too large for an answer (a value, a list item), read from where it is stored. */
  async readStored<T>(download: StoreRequest, o: CallOptions | undefined): Promise<T> {
    const bytes = await this.direct(download, { call: o }, async (answer, clock) => {
      const chunks: Uint8Array[] = [];
      for await (const chunk of chunksOf(answer, clock)) chunks.push(chunk);
      return concatBytes(chunks);
    });
    return JSON.parse(utf8Text(bytes)) as T;
  }
}

/** The host of a URL, for a debug line (a presigned URL's path and query stay out of the log). */
const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return '(unparsable URL)';
  }
};
