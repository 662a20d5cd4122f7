/** Client of the S3 and OSS fronts' control APIs (see s3-front.ts, oss-front.ts), for the tests. */
import type { FaultRule } from './s3-front.js';

/** Control of one front, at its endpoint. */
export function frontControl(endpoint: string) {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${endpoint}/__front/${path}`, { method: 'POST', body: JSON.stringify(body) });
    if (res.status !== 204) throw new Error(`front control ${path}: ${res.status}`);
  };
  return {
    /** DeleteObjects will report these keys as AccessDenied and keep them. */
    failDeletes: (keys: string[]) => post('delete-failures', { match: keys }),
    /** Adds a fault rule. */
    fault: (rule: FaultRule) => post('faults', rule),
    /** How long a restore of an archived object takes. */
    restoreDelay: (ms: number) => post('restore-delay', { ms }),
    /**
     * S3 front: ignores these conditions on writes (default both), as a proxy dropping them would;
     * with `except`, not on keys containing it (a proxy that spares what looks like a probe).
     */
    ignoreConditions: (
      ignore: Array<'if-match' | 'if-none-match'> = ['if-match', 'if-none-match'],
      except?: string,
    ) => post('conditions', { ignore, ...(except !== undefined ? { except } : {}) }),
    /** S3 front: checks a PUT's condition with a HEAD, holds `holdMs`, then writes unconditionally. */
    nonAtomic: (holdMs: number) => post('non-atomic', { holdMs }),
    /** OSS front: a bucket with versioning `Enabled` or `Suspended` ignores x-oss-forbid-overwrite. */
    versioning: (status: 'Enabled' | 'Suspended' | 'Off') => post('versioning', { status }),
    /** OSS front: AppendObject appends at the end whatever position is asked (a backend ignoring it). */
    ignoreAppendPosition: (ignore = true) => post('append-position', { ignore }),
    /** Clears faults, delete failures, the request log and the modes above. */
    reset: () => post('reset', {}),
    /** What the front received since the last reset. */
    requests: async () =>
      (await (await fetch(`${endpoint}/__front/requests`)).json()) as Array<{
        method: string;
        path: string;
        bytes: number;
      }>,
  };
}
