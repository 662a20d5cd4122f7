/** Driver wrappers for store tests: one counts requests and bytes, one fails a chosen request. */
import { ObjectStoreError } from '../../lib/drivers/errors.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';

const METHODS = ['get', 'head', 'put', 'delete', 'deleteMany', 'list', 'copy'] as const;
type Method = (typeof METHODS)[number];

/** A driver that counts every request by method, and the bytes `put` sends. */
export interface CountingDriver extends ObjectStoreDriver {
  readonly calls: Record<Method, number>;
  bytesPut: number;
  /** Puts of each object name, in order. */
  readonly puts: string[];
  reset(): void;
  total(): number;
}

export function counting(inner: ObjectStoreDriver): CountingDriver {
  const calls = Object.fromEntries(METHODS.map((m) => [m, 0])) as Record<Method, number>;
  const wrapper = {
    ...inner,
    name: inner.name,
    capabilities: inner.capabilities,
    calls,
    bytesPut: 0,
    puts: [] as string[],
    reset() {
      for (const m of METHODS) calls[m] = 0;
      wrapper.bytesPut = 0;
      wrapper.puts.length = 0;
    },
    total: () => METHODS.reduce((sum, m) => sum + calls[m], 0),
  } as CountingDriver;
  for (const m of METHODS) {
    (wrapper as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => {
      calls[m]++;
      if (m === 'put') {
        const body = args[1] as Uint8Array | string;
        wrapper.bytesPut += typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
        wrapper.puts.push(args[0] as string);
      }
      return (inner[m] as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
    };
  }
  return wrapper;
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
    ...inner,
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
    (wrapper as unknown as Record<string, unknown>)[m] = async (...args: unknown[]) => {
      const call = () => (inner[m] as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
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
