/** The session lock: acquire, renew and release a lease (it never creates the session). */
import { PATHS } from '../../protocol/paths.js';
import { headers, schemas } from '../../protocol/schemas.js';
import { HttpProblem } from '../problems.js';
import { json, noContent, route } from './route.js';

export const leaseJson = (lease: { owner: string; token: number; expiresAt: Date; leaseMs: number }) => ({
  ...lease,
  expiresAt: lease.expiresAt.toISOString(),
});

export const LOCK_ROUTES = [
  route({
    method: 'GET',
    pattern: PATHS.lock,
    operationId: 'getLock',
    tag: 'lock',
    summary: 'Read who holds the session lock now (one consistent read of the lock)',
    description:
      'The live lease of the session: its `owner`, `expiresAt` and fencing `token`, read with one strongly consistent read of the lock. 404 `not-found` when no lease holds it (never acquired, released or expired), whether or not the session exists. It changes nothing.',
    auth: true,
    answers: { 200: schemas.LockHolder },
    problems: ['not-found'],
    handle: async (c) => {
      const { sessionId } = c.params;
      const holder = await c.deps.lock.holderOf({ userId: c.userId, sessionId });
      if (!holder) throw new HttpProblem('not-found', `no lease holds the lock of session ${sessionId}`);
      return json(200, {
        owner: holder.owner,
        expiresAt: holder.expiresAt.toISOString(),
        token: holder.token,
      });
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.lock,
    operationId: 'acquireLock',
    tag: 'lock',
    summary: 'Acquire the session lock (does not create the session)',
    description:
      'Grants a lease of `leaseMs` and a fencing token larger than any earlier one of this lock: send it as `Fencing-Token` with each write, so that a holder whose lease was lost cannot overwrite a newer one. An explicit `owner` may acquire again what it holds. With `waitMs`, waits that long at most for a held lock; still held, 409 `lock-held` with `holder`, `expiresAt`, and Retry-After (the seconds left of the lease). It does not create the session.',
    auth: true,
    body: schemas.LockRequest,
    emptyBody: {},
    answers: { 200: schemas.Lease },
    problems: ['lock-held'],
    handle: async (c) => {
      const lease = await c.deps.lock.acquire({ userId: c.userId, sessionId: c.params.sessionId }, c.body);
      return json(200, leaseJson(lease));
    },
  }),
  route({
    method: 'PUT',
    pattern: PATHS.lock,
    operationId: 'renewLock',
    tag: 'lock',
    summary: 'Renew the lease (Lock-Owner and Fencing-Token headers)',
    description:
      'Extends the lease named by `Lock-Owner` and `Fencing-Token` by `leaseMs` from now; 409 `lock-lost` when that lease is no longer held.',
    auth: true,
    body: schemas.RenewRequest,
    emptyBody: {},
    headers: headers.lease,
    answers: { 200: schemas.Lease },
    problems: ['lock-lost'],
    handle: async (c) => {
      const key = { userId: c.userId, sessionId: c.params.sessionId };
      const lease = await c.deps.lock.renew(key, c.headers.lockOwner, c.headers.fencingToken, c.body);
      return json(200, leaseJson(lease));
    },
  }),
  route({
    method: 'DELETE',
    pattern: PATHS.lock,
    operationId: 'releaseLock',
    tag: 'lock',
    summary: 'Release the lease (Lock-Owner and Fencing-Token headers)',
    description:
      'Releases the lease named by `Lock-Owner` and `Fencing-Token`. A lock already free or expired answers 204 too; 409 `lock-lost` when another owner holds it now.',
    auth: true,
    headers: headers.lease,
    answers: { 204: null },
    problems: ['lock-lost'],
    handle: async (c) => {
      const key = { userId: c.userId, sessionId: c.params.sessionId };
      await c.deps.lock.release(key, c.headers.lockOwner, c.headers.fencingToken);
      return noContent();
    },
  }),
];
