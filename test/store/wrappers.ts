/** Driver wrappers for store tests: one counts requests and bytes, one fails a chosen request. */
import { ObjectStoreError } from '../../lib/drivers/errors.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';

const METHODS = ['get', 'head', 'put', 'append', 'delete', 'deleteMany', 'list', 'copy'] as const;
type Method = (typeof METHODS)[number];
type Call = (...args: unknown[]) => Promise<unknown>;
/** A driver's method by name (undefined when it has none: `append` on a driver without it). */
const method = (driver: object, m: Method) => (driver as Record<string, Call | undefined>)[m];

/** Every method of a driver (a class instance keeps them on its prototype), bound to it. */
function methodsOf(inner: ObjectStoreDriver): ObjectStoreDriver {
  const out: Record<string, unknown> = { name: inner.name, capabilities: inner.capabilities };
  for (let o: object | null = inner; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) {
      const value = (inner as unknown as Record<string, unknown>)[name];
      if (name !== 'constructor' && !(name in out) && typeof value === 'function')
        out[name] = value.bind(inner);
    }
  }
  return out as unknown as ObjectStoreDriver;
}

/** A driver that counts every request by method, and the bytes `put` and `append` send. */
export interface CountingDriver extends ObjectStoreDriver {
  readonly calls: Record<Method, number>;
  bytesPut: number;
  /** Bytes of the bodies `get` returned. */
  bytesGot: number;
  /** Puts of each object name, in order. */
  readonly puts: string[];
  reset(): void;
  total(): number;
}

export function counting(inner: ObjectStoreDriver): CountingDriver {
  const calls = Object.fromEntries(METHODS.map((m) => [m, 0])) as Record<Method, number>;
  const wrapper = {
    ...methodsOf(inner),
    calls,
    bytesPut: 0,
    bytesGot: 0,
    puts: [] as string[],
    reset() {
      for (const m of METHODS) calls[m] = 0;
      wrapper.bytesPut = 0;
      wrapper.bytesGot = 0;
      wrapper.puts.length = 0;
    },
    total: () => METHODS.reduce((sum, m) => sum + calls[m], 0),
  } as CountingDriver;
  for (const m of METHODS) {
    if (typeof method(inner, m) !== 'function') continue;
    (wrapper as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => {
      calls[m]++;
      if (m === 'put' || m === 'append') {
        // Bytes written: a PUT's body, or what an append adds.
        const body = args[1] as Uint8Array | string;
        wrapper.bytesPut += typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
        if (m === 'put') wrapper.puts.push(args[0] as string);
      }
      const result = (method(inner, m) as Call).apply(inner, args);
      if (m !== 'get') return result;
      return result.then((object) => {
        wrapper.bytesGot += (object as { body: Uint8Array }).body.byteLength;
        return object;
      });
    };
  }
  return wrapper;
}

/** Counts round trips: a call is in wave 1 + the highest wave of the calls that ended before it began. */
export function roundTrips(
  inner: ObjectStoreDriver,
): CountingDriver & { waves(): number; resetWaves(): void } {
  const driver = counting(inner);
  let ended = 0;
  let max = 0;
  const wrapped = { ...driver } as CountingDriver & { waves(): number; resetWaves(): void };
  for (const m of METHODS) {
    if (typeof method(driver, m) !== 'function') continue;
    (wrapped as unknown as Record<string, unknown>)[m] = async (...args: unknown[]) => {
      const wave = ended + 1;
      max = Math.max(max, wave);
      try {
        return await (method(driver, m) as Call)(...args);
      } finally {
        ended = Math.max(ended, wave);
      }
    };
  }
  Object.defineProperty(wrapped, 'calls', { get: () => driver.calls });
  Object.defineProperty(wrapped, 'bytesPut', { get: () => driver.bytesPut });
  Object.defineProperty(wrapped, 'bytesGot', { get: () => driver.bytesGot });
  wrapped.reset = () => driver.reset();
  wrapped.total = () => driver.total();
  wrapped.waves = () => max;
  wrapped.resetWaves = () => {
    ended = 0;
    max = 0;
  };
  return wrapped;
}

/** What one measured call of a budget test cost, counted at a `roundTrips` driver. */
export interface Cost<T> {
  readonly result: T;
  readonly requests: number;
  /** GET and HEAD. */
  readonly gets: number;
  /** PUT, append and COPY: what writes an object. */
  readonly writes: number;
  /** What S3 bills as a PUT: PUT, COPY, LIST and multi-object DELETE. */
  readonly putClass: number;
  readonly lists: number;
  readonly trips: number;
  readonly bytesPut: number;
  readonly bytesGot: number;
}

/** Measures one call at a time on `driver`: its requests by kind, round trips and bytes. */
export function measurer(driver: ReturnType<typeof roundTrips>) {
  return async <T>(fn: () => Promise<T>): Promise<Cost<T>> => {
    driver.reset();
    driver.resetWaves();
    const result = await fn();
    const c = driver.calls;
    return {
      result,
      requests: driver.total(),
      gets: c.get + c.head,
      writes: c.put + c.append + c.copy,
      putClass: c.put + c.copy + c.list + c.deleteMany,
      lists: c.list,
      trips: driver.waves(),
      bytesPut: driver.bytesPut,
      bytesGot: driver.bytesGot,
    };
  };
}

/**
 * Fails every put / append whose object name contains `pattern` while armed (not retryable); with
 * `once`, only the first such write, then disarms.
 */
export function withFaults(inner: ObjectStoreDriver) {
  const state = { pattern: undefined as string | undefined, once: false, fired: 0 };
  const driver = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      if (name !== 'put' && name !== 'append') return value.bind(target);
      return async (key: string, ...rest: unknown[]) => {
        if (state.pattern !== undefined && key.includes(state.pattern)) {
          state.fired++;
          if (state.once) state.pattern = undefined;
          throw new ObjectStoreError(`injected fault on ${String(name)} ${key}`, inner.name);
        }
        return value.call(target, key, ...rest);
      };
    },
  });
  return { driver, state };
}

/** A driver whose n-th request (from `arm`) fails, either before reaching the backend or after it acted. */
export interface FaultyDriver extends ObjectStoreDriver {
  /** Fail request number `n` (1-based) from now on; `after`: the backend acts, then the caller sees an error. */
  arm(n: number, after: boolean): void;
  disarm(): void;
  /** Requests seen since `arm`. */
  readonly seen: number;
  /** Whether the armed fault fired. */
  readonly fired: boolean;
}

export function faulty(inner: ObjectStoreDriver): FaultyDriver {
  let target = 0;
  let after = false;
  let seen = 0;
  let fired = false;
  const wrapper = {
    ...methodsOf(inner),
    arm(n: number, a: boolean) {
      target = n;
      after = a;
      seen = 0;
      fired = false;
    },
    disarm() {
      target = 0;
    },
    get seen() {
      return seen;
    },
    get fired() {
      return fired;
    },
  } as FaultyDriver;
  for (const m of METHODS) {
    if (typeof method(inner, m) !== 'function') continue;
    (wrapper as unknown as Record<string, unknown>)[m] = async (...args: unknown[]) => {
      const call = () => (method(inner, m) as Call).apply(inner, args);
      if (target === 0) return call();
      seen++;
      if (seen !== target) return call();
      fired = true;
      const fault = new ObjectStoreError(`injected fault on ${m} #${seen}`, inner.name, { retryable: true });
      if (!after) throw fault;
      await call().catch(() => undefined);
      throw fault;
    };
  }
  return wrapper;
}

/** A 1 KB list item (1,024 bytes of JSON), as the budget tables count them. */
export const kbItem = (i: number) => ({
  role: i % 2 ? 'assistant' : 'user',
  n: i,
  content: 'x'.repeat(986 - String(i).length),
});
/** Items `from` to `to` (exclusive) of `kbItem`. */
export const kbItems = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => kbItem(from + i));
