/**
 * The once-per-process check that the backend honours the write conditions its driver declares.
 * Every guarantee of the store rests on create-only and conditional writes; a proxy that drops
 * `If-None-Match` / `If-Match`, or an OSS bucket with versioning (which ignores
 * `x-oss-forbid-overwrite`), would acknowledge racing writes and lose all but one, silently.
 *
 * Before the first write of a process, one probe object `<prefix>~probe/<random id>` (under no user;
 * tagged `kind=state`, so lifecycle removes a leftover) is created, then each declared guarantee is
 * asked to refuse a write it must refuse: a second create-only write, (with conditional overwrite)
 * an `If-Match` with a wrong etag, and (with position append) a second append at position 0 to a
 * second probe object `<…>.append`, created by an append at position 0. Then the probe objects are
 * removed. Concurrent first writes share the probe. A failure that proves nothing (5xx, network,
 * refused credentials) fails that write and the next write probes again; only an acknowledged write
 * that had to be refused marks the backend unsafe, for the life of the process: every later write is
 * refused with `BackendUnsafeError`, nothing is acknowledged. Cost: at most 2 requests per declared
 * guarantee plus one delete per probe object. Driver calls (and requests) per backend:
 * - S3, Ceph RGW: 4 (create, second create-only write, wrong If-Match, delete);
 * - OSS: 6 (create, second forbid-overwrite write, append at 0, second append at 0, 2 deletes);
 * - fs, memory: 7 (all three guarantees: create, 3 writes that must fail, the creating append,
 *   2 deletes).
 */
import { randomBytes } from 'node:crypto';
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { DriverCapabilities, ObjectStoreDriver } from '../drivers/types.js';
import { backendError } from './context.js';
import { BackendError, BackendUnsafeError } from './errors.js';

/** A guarantee a driver may declare, and the write the backend must refuse if it holds. */
interface Guarantee {
  readonly name: string;
  readonly declared: (capabilities: DriverCapabilities) => boolean;
  /**
   * The step's own probe object (`<probe key><suffix>`), which `prepare` creates, instead of the
   * shared one (created create-only before every step).
   */
  readonly own?: {
    readonly suffix: string;
    readonly prepare: (driver: ObjectStoreDriver, key: string, body: string) => Promise<unknown>;
  };
  /** A write against the existing probe object `key` that the backend must refuse. */
  readonly mustFail: (driver: ObjectStoreDriver, key: string, body: string) => Promise<unknown>;
}

const PUT_OPTIONS = { contentType: 'application/json', tags: { kind: 'state' } } as const;
/** The position-append step: the creating append and the one that must be refused are the same call. */
const appendAtZero = (driver: ObjectStoreDriver, key: string, body: string) =>
  driver.append(key, body, { ...PUT_OPTIONS, position: 0 });
/** A well-formed etag no object has: 32 hex digits, as an MD5 etag. */
const WRONG_ETAG = '0'.repeat(32);

/** What the store relies on, in the order probed (the probe object is created create-only first). */
export const GUARANTEES: readonly Guarantee[] = [
  {
    name: 'create-only writes (If-None-Match: * / x-oss-forbid-overwrite)',
    declared: (c) => c.createOnly,
    mustFail: (driver, key, body) => driver.put(key, body, { ...PUT_OPTIONS, ifNoneMatch: '*' }),
  },
  {
    name: 'conditional overwrite (If-Match)',
    declared: (c) => c.conditionalOverwrite,
    mustFail: (driver, key, body) => driver.put(key, body, { ...PUT_OPTIONS, ifMatch: WRONG_ETAG }),
  },
  {
    name: 'position append (AppendObject at a position that is not the length)',
    declared: (c) => c.positionAppend,
    own: { suffix: '.append', prepare: appendAtZero },
    mustFail: appendAtZero,
  },
];

/**
 * The driver methods that neither change what is stored nor sign a change for someone else to make;
 * every other method waits for the probe (so a method added to the interface is guarded by default).
 */
const READS = new Set<string>([
  'name',
  'capabilities',
  'get',
  'head',
  'list',
  'listParts',
  'presignGet',
  'close',
] satisfies (keyof ObjectStoreDriver)[]);

/** A driver whose writes wait for the probe; `verify()` runs it now (the local server, at start). */
export interface VerifiedDriver extends ObjectStoreDriver {
  /** Resolves once the backend is verified; rejects with `BackendUnsafeError` or the probe's failure. */
  verify(): Promise<void>;
}

export interface VerifyOptions {
  /** The store's prefix; the probe object lives at `<prefix>~probe/<random id>`. */
  readonly prefix: string;
  /** Called once, when the backend is found unsafe (log it at ERROR). */
  readonly onUnsafe?: (error: BackendUnsafeError) => void;
}

/** Runs the probe once against `driver`: resolves when every declared guarantee held. */
export async function probeGuarantees(driver: ObjectStoreDriver, prefix: string): Promise<void> {
  const key = `${prefix}~probe/${randomBytes(12).toString('hex')}`;
  const body = '{"probe":true}';
  let broken: string | undefined;
  /** Every probe object written (or perhaps written), deleted at the end, the shared one last. */
  const written = [key];
  try {
    const createOnly = driver.capabilities.createOnly ? { ifNoneMatch: '*' as const } : {};
    await driver.put(key, body, { ...PUT_OPTIONS, ...createOnly });
    for (const guarantee of GUARANTEES) {
      if (!guarantee.declared(driver.capabilities)) continue;
      let target = key;
      if (guarantee.own) {
        target = `${key}${guarantee.own.suffix}`;
        written.unshift(target);
        // Its failure proves nothing either way (even a refusal: the object is new): it fails the probe.
        await guarantee.own.prepare(driver, target, body);
      }
      try {
        await guarantee.mustFail(driver, target, body);
        broken = guarantee.name;
        break;
      } catch (error) {
        if (!(error instanceof ObjectConditionFailedError)) throw error;
      }
    }
  } finally {
    for (const object of written) await driver.delete(object).catch(() => undefined);
  }
  if (broken) throw new BackendUnsafeError(driver.name, broken);
}

/**
 * Wraps a driver so that its first write waits for the probe (one per wrapper: make it once per
 * process), and every write after an unsafe verdict is refused. Reads pass straight through.
 */
export function verifiedDriver(driver: ObjectStoreDriver, options: VerifyOptions): VerifiedDriver {
  let verdict: Promise<void> | undefined;
  const verify = (): Promise<void> => {
    verdict ??= probeGuarantees(driver, options.prefix).catch((error: unknown) => {
      if (error instanceof BackendUnsafeError) {
        options.onUnsafe?.(error);
        throw error;
      }
      verdict = undefined; // proved nothing: the next write probes again
      const failure = backendError(error);
      // Whatever the probe met, the write it guards was not made: a retry may succeed.
      throw failure instanceof BackendError && failure.retryable
        ? failure
        : new BackendError(`the backend probe failed: ${failure.message}`, true, { cause: error });
    });
    return verdict;
  };
  return new Proxy(driver, {
    get(target, property, receiver) {
      if (property === 'verify') return verify;
      const value = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || READS.has(property) || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await verify();
        return value.apply(target, args);
      };
    },
  }) as VerifiedDriver;
}
