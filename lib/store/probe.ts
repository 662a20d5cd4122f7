/**
 * The once-per-process check that the backend honours the write conditions its driver declares,
 * atomically. Every guarantee of the store rests on create-only and conditional writes; a proxy
 * that drops `If-None-Match` / `If-Match`, one that checks them with a HEAD and then writes
 * unconditionally, or an OSS bucket with versioning (which ignores `x-oss-forbid-overwrite`), would
 * acknowledge racing writes and lose all but one, silently.
 *
 * Before the first write of a process, the probe writes objects of a random user's random session
 * under the store's prefix (`<prefix><24 hex>/<24 hex>/<8 hex>.json`, named as any session's value,
 * tagged `kind=state`, so lifecycle removes a leftover), so that a proxy cannot tell them from
 * real writes. On a backend across a network (S3, Ceph RGW, OSS) each declared guarantee is raced:
 * 4 concurrent create-only writes of one fresh object, of which exactly one may be acknowledged;
 * (with conditional overwrite) 4 concurrent `If-Match` writes with the winner's etag, exactly one;
 * (with position append) 4 concurrent appends at position 0 of a second fresh object, exactly one.
 * More than one acknowledged write proves the backend unsafe; none proves nothing (the losers'
 * refusals, or 5xx, are not judged: Ceph RGW answers some losers of an `If-Match` race with 500).
 * The in-process drivers (fs, memory: nothing between) are asked instead, one write at a time, to
 * refuse what they must refuse. Then the probe objects are removed. Concurrent first writes share
 * the probe. A failure that proves nothing (5xx, network, refused credentials) fails that write
 * and the next write probes again; only acknowledged writes that had to be refused mark the backend
 * unsafe, for the life of the process: every later write is refused with `BackendUnsafeError`.
 * What it proves: the conditions are evaluated atomically when 4 writers interleave; a non-atomic
 * backend is caught only when its racers interleave, which a gap between its check and its write
 * makes likely. Requests: S3 and Ceph RGW 9 (4 creates, 4 If-Match writes, a delete); OSS 10
 * (4 creates, 4 appends, 2 deletes); fs and memory 7 calls (create, 3 writes that must fail, the
 * creating append, 2 deletes). It adds about 2 round trips to the first write after a cold start.
 */

import { BackendError, BackendUnsafeError, MisconfiguredBackendError } from '../contract/errors.js';
import { ObjectConditionFailedError } from '../drivers/errors.js';
import type { DriverCapabilities, ObjectStoreDriver } from '../drivers/types.js';
import { backendError } from './context.js';
import { probeNames } from './layout.js';

/** A guarantee a driver may declare, and how it is raced (and, in process, asked to refuse). */
interface Guarantee {
  readonly name: string;
  readonly declared: (capabilities: DriverCapabilities) => boolean;
  /** Races on an object of its own (`<probe key>` of its own) instead of the shared one. */
  readonly own?: boolean;
  /** Its racers overwrite the existing object (a winner changes its etag). */
  readonly overwrites?: boolean;
  /**
   * One racer's write (racer `i` of `RACERS`); `etag`: the shared object's, after the create race.
   * In process, racer 0 runs alone against the existing object and must be refused.
   */
  readonly write: (
    driver: ObjectStoreDriver,
    key: string,
    i: number,
    etag: string,
  ) => Promise<{ etag: string }>;
}

/** How the probe writes its objects: as any session's value (JSON, tagged `kind=state`). */
export const PUT_OPTIONS = { contentType: 'application/json', tags: { kind: 'state' } } as const;
/** Writers in each race. */
const RACERS = 4;
const body = (i: number) => `{"probe":${i}}`;

/** What the store relies on, in the order probed. */
export const GUARANTEES: readonly Guarantee[] = [
  {
    name: 'create-only writes (If-None-Match: * / x-oss-forbid-overwrite)',
    declared: (c) => c.createOnly,
    write: (driver, key, i) => driver.put(key, body(i), { ...PUT_OPTIONS, ifNoneMatch: '*' }),
  },
  {
    name: 'conditional overwrite (If-Match)',
    declared: (c) => c.conditionalOverwrite,
    overwrites: true,
    write: (driver, key, i, etag) => driver.put(key, body(RACERS + i), { ...PUT_OPTIONS, ifMatch: etag }),
  },
  {
    name: 'position append (AppendObject at a position that is not the length)',
    declared: (c) => c.positionAppend,
    own: true,
    write: async (driver, key, i) => {
      await driver.append(key, body(i), { ...PUT_OPTIONS, position: 0 });
      return { etag: '' };
    },
  },
];

/** A well-formed etag no object has: 32 hex digits, as an MD5 etag. */
const WRONG_ETAG = '0'.repeat(32);

/** The object a guarantee is probed on: the shared one, or (`own`) a fresh one of the session, noted in `written`. */
function targetOf(guarantee: Guarantee, key: string, session: string, written: string[]): string {
  if (!guarantee.own) return key;
  const target = probeNames.value(session);
  written.unshift(target);
  return target;
}

/** Runs the probe once against `driver`: resolves when every declared guarantee held. */
export async function probeGuarantees(driver: ObjectStoreDriver, prefix: string): Promise<void> {
  const session = probeNames.session(prefix);
  const key = probeNames.value(session);
  const inProcess = driver.name === 'fs' || driver.name === 'memory';
  let broken: string | undefined;
  /** Every probe object written (or perhaps written), deleted at the end, the shared one last. */
  const written = [key];
  try {
    if (inProcess) broken = await askInProcess(driver, key, session, written);
    else {
      let etag = '';
      if (!driver.capabilities.createOnly) ({ etag } = await driver.put(key, body(-1), PUT_OPTIONS));
      for (const guarantee of GUARANTEES) {
        if (!guarantee.declared(driver.capabilities)) continue;
        const target = targetOf(guarantee, key, session, written);
        const settled = await Promise.allSettled(
          Array.from({ length: RACERS }, (_, i) => guarantee.write(driver, target, i, etag)),
        );
        const won = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        if (won.length > 1) {
          broken = guarantee.name;
          break;
        }
        // No write acknowledged (a winner's answer lost, or a 5xx the SDK retried into a refusal):
        // what the object holds now says whether one landed; if none did, nothing is proved.
        const now = won[0] ?? (await driver.head(target).catch(() => undefined));
        if (!now || (guarantee.overwrites && now.etag === etag)) {
          const failure = settled.find((r) => r.status === 'rejected');
          throw failure && !(failure.reason instanceof ObjectConditionFailedError)
            ? failure.reason
            : new BackendError(`the backend probe's race of ${guarantee.name} had no winner`, true);
        }
        if (!guarantee.own) etag = now.etag;
      }
    }
  } finally {
    for (const object of written) await driver.delete(object).catch(() => undefined);
  }
  if (broken) throw new BackendUnsafeError(driver.name, broken);
}

/**
 * In process, nothing lies between: each declared guarantee is asked once to refuse a write it
 * must refuse (a create-only write of an existing object, an `If-Match` with a wrong etag, an
 * append at position 0 of an appended object). Returns the guarantee broken, if any.
 */
async function askInProcess(
  driver: ObjectStoreDriver,
  key: string,
  session: string,
  written: string[],
): Promise<string | undefined> {
  const createOnly = driver.capabilities.createOnly ? { ifNoneMatch: '*' as const } : {};
  await driver.put(key, body(-1), { ...PUT_OPTIONS, ...createOnly });
  for (const guarantee of GUARANTEES) {
    if (!guarantee.declared(driver.capabilities)) continue;
    const target = targetOf(guarantee, key, session, written);
    // Its failure proves nothing either way (even a refusal: the object is new): it fails the probe.
    if (guarantee.own) await guarantee.write(driver, target, 0, WRONG_ETAG);
    try {
      await guarantee.write(driver, target, 0, WRONG_ETAG);
      return guarantee.name;
    } catch (error) {
      if (!(error instanceof ObjectConditionFailedError)) throw error;
    }
  }
  return undefined;
}

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

/**
 * What one run of the probe found: `verified` (every declared guarantee held), `unsafe` (a write it
 * had to refuse was acknowledged: every later write is refused), `inconclusive` (it proved nothing:
 * a 5xx, the network, refused credentials, a missing bucket; the next write probes again).
 */
export const PROBE_OUTCOMES = ['verified', 'unsafe', 'inconclusive'] as const;
export type ProbeOutcome = (typeof PROBE_OUTCOMES)[number];

export interface VerifyOptions {
  /** The store's prefix; the probe's objects live under it (`probeNames` in layout.ts). */
  readonly prefix: string;
  /** Called once, when the backend is found unsafe (log it at ERROR). */
  readonly onUnsafe?: (error: BackendUnsafeError) => void;
  /** Called at the end of each run of the probe, with what it found. */
  readonly onOutcome?: (outcome: ProbeOutcome) => void;
}

/**
 * Wraps a driver so that its first write waits for the probe (one per wrapper: make it once per
 * process), and every write after an unsafe verdict is refused. Reads pass straight through.
 */
export function verifiedDriver(driver: ObjectStoreDriver, options: VerifyOptions): VerifiedDriver {
  let verdict: Promise<void> | undefined;
  const verify = (): Promise<void> => {
    verdict ??= probeGuarantees(driver, options.prefix).then(
      () => options.onOutcome?.('verified'),
      (error: unknown) => {
        if (error instanceof BackendUnsafeError) {
          options.onUnsafe?.(error);
          options.onOutcome?.('unsafe');
          throw error;
        }
        verdict = undefined; // proved nothing: the next write probes again
        options.onOutcome?.('inconclusive');
        const failure = backendError(error);
        // Whatever the probe met, the write it guards was not made: a retry may succeed, unless the
        // deployment refuses it (a missing bucket, access denied: no retry helps until it is fixed).
        throw failure instanceof MisconfiguredBackendError ||
          (failure instanceof BackendError && failure.retryable)
          ? failure
          : new BackendError(`the backend probe failed: ${failure.message}`, true, { cause: error });
      },
    );
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
