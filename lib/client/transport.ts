/**
 * The client's clocks and waits: a per-attempt timeout that also relays the caller's `AbortSignal`,
 * waits between retries that an abort cuts short, and `Retry-After` read as seconds or an HTTP date.
 */
import { BackendError } from '../contract/errors.js';
import { BACKOFF, backoffMs } from '../util/backoff.js';

/**
 * Longest `Retry-After` the client waits for itself; a longer one is not retried here, and the
 * caller gets the error (a retryable one) to wait as it sees fit.
 */
export const MAX_RETRY_AFTER_MS = 10_000;

/**
 * An attempt found no answer within its time (`timeoutMs`, or for a transfer, no bytes for that
 * long). Retryable: an idempotent call (and an append, which carries its `Idempotency-Key`) has
 * already been sent again within the client's attempts before this is raised.
 */
export class RequestTimeoutError extends BackendError {
  override name = 'RequestTimeoutError';
  constructor(
    /** What timed out, e.g. `GET /v1/sessions/s/state/k`. */
    readonly request: string,
    readonly timeoutMs: number,
  ) {
    super(`${request}: no answer within ${timeoutMs} ms`, true);
  }
}

/** The clock of one attempt: aborted when the call is aborted or the attempt times out. */
export interface Attempt {
  readonly signal: AbortSignal;
  readonly timedOut: boolean;
  /** Starts the clock again (a chunk of the body arrived). */
  touch(): void;
  /** Stops the clock and the relay of the call's signal. */
  end(): void;
}

/** An attempt of `what`, timing out after `ms` without progress (none when `ms` is 0 or not finite). */
export function startAttempt(outer: AbortSignal | undefined, ms: number, what: string): Attempt {
  const controller = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const relay = () => controller.abort(outer?.reason);
  const arm = () => {
    if (timer !== undefined) clearTimeout(timer);
    if (!(ms > 0 && Number.isFinite(ms)) || controller.signal.aborted) return;
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new RequestTimeoutError(what, ms));
    }, ms);
  };
  if (outer?.aborted) relay();
  else outer?.addEventListener('abort', relay, { once: true });
  arm();
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    touch: arm,
    end() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      outer?.removeEventListener('abort', relay);
    },
  };
}

/**
 * `promise`, or the signal's reason as soon as it is aborted (even when what `promise` waits for
 * ignores the signal); `discard` cleans up a value that arrives after the abort.
 */
export function race<T>(
  promise: Promise<T>,
  signal: AbortSignal,
  discard?: (value: T) => unknown,
): Promise<T> {
  const late = () => {
    promise.then(
      (value) => discard?.(value),
      () => {},
    );
  };
  if (signal.aborted) {
    late();
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      late();
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Waits `ms`; rejects with the signal's reason as soon as it is aborted. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (!signal) return new Promise((r) => setTimeout(r, ms));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The wait a `Retry-After` asks for (delay-seconds or an HTTP date), or undefined when it asks none. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait before attempt `attempt + 1`: what the answer's `Retry-After` asks for (a 429, a 503 or
 * a 409 `contended`), never less, plus up to a fifth of it (jitter), or undefined when it asks for
 * more than `MAX_RETRY_AFTER_MS` (no retry); else jittered exponential backoff.
 */
export function pauseMs(attempt: number, response?: Response, honoured = false): number | undefined {
  const asked =
    response && (honoured || response.status === 429 || response.status === 503)
      ? retryAfterMs(response.headers.get('retry-after'))
      : undefined;
  if (asked !== undefined) return asked > MAX_RETRY_AFTER_MS ? undefined : asked * (1 + Math.random() / 5);
  return backoffMs(BACKOFF.transient, attempt);
}

/** Statuses whose answers have no body. */
export const NULL_BODY = new Set([101, 204, 205, 304]);

/** What a direct request is sent with: a fetch, or the Node entry's raw download. */
export type DirectFetch = (
  url: string,
  init: {
    method?: string;
    headers?: Readonly<Record<string, string>>;
    body?: Uint8Array | undefined;
    signal?: AbortSignal;
  },
) => Promise<Response>;
