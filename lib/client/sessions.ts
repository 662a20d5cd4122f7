/**
 * The client's calls on a session as a whole: its keys, whether it exists, deleting it (or every
 * session), listing the sessions, and its lock (acquire, renew, release).
 */

import { ProtocolError, SessionNotFoundError } from '../contract/errors.js';
import type { Lease, LockHolder } from '../contract/lock.js';
import type { KeyPage, ListKeysOptions, SessionPage, WriteOptions } from '../contract/types.js';
import { paths } from '../protocol/paths.js';
import { SESSION_NOT_FOUND } from '../protocol/problems.js';
import { HEADER_NAMES, schemas } from '../protocol/schemas.js';
import type { KnownLists } from './lists.js';
import { bodyOf, fail, fence, leaseOf, type Requests, tagged } from './requests.js';
import type { AcquireLockOptions, CallOptions, LeaseRef } from './types.js';

const leaseHeaders = (lease: LeaseRef) => ({
  [HEADER_NAMES.lockOwner]: lease.owner,
  [HEADER_NAMES.fencingToken]: String(lease.token),
});

/** The session and lock calls of the client. */
export class Sessions {
  constructor(
    private readonly requests: Requests,
    private readonly known: KnownLists,
  ) {}

  async listKeys(sessionId: string, o: ListKeysOptions & CallOptions = {}): Promise<KeyPage> {
    const response = await this.requests.call('GET', paths.keys(sessionId), {
      query: { prefix: o.prefix, startAfter: o.startAfter, limit: o.limit, cursor: o.cursor },
      call: o,
    });
    if (response.status === 404) {
      // The route's 404 is an absent session; a server without the route answers another one.
      const error: unknown = await fail(response).catch((e: unknown) => e);
      if (error instanceof ProtocolError && error.message === SESSION_NOT_FOUND)
        throw tagged(new SessionNotFoundError(sessionId), error);
      throw error;
    }
    if (response.status !== 200) return fail(response);
    const page = await bodyOf(response, schemas.KeyPage, 'listKeys');
    return {
      values: page.values.map((v) => ({ ...v, lastModified: new Date(v.lastModified) })),
      lists: page.lists.map((l) => ({ ...l, lastModified: new Date(l.lastModified) })),
      ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}),
    } satisfies KeyPage;
  }

  async exists(sessionId: string, o?: CallOptions): Promise<boolean> {
    const response = await this.requests.call('HEAD', paths.session(sessionId), { call: o });
    if (response.status === 404) return false;
    if (response.status !== 200) return fail(response);
    return true;
  }

  async delete(sessionId: string, o?: WriteOptions & CallOptions): Promise<void> {
    const response = await this.requests.call('DELETE', paths.session(sessionId), {
      headers: fence(o),
      call: o,
    });
    this.known.forgetSession(sessionId);
    if (response.status !== 204) await fail(response);
  }

  async deleteAllSessions(o?: CallOptions): Promise<void> {
    const response = await this.requests.call('DELETE', paths.sessions(), {
      query: { all: 'true' },
      call: o,
    });
    this.known.forgetAll();
    if (response.status !== 204) await fail(response);
  }

  async listSessionIds(o: { limit?: number; cursor?: string } & CallOptions = {}): Promise<SessionPage> {
    const response = await this.requests.call('GET', paths.sessions(), {
      query: { limit: o.limit, cursor: o.cursor },
      call: o,
    });
    if (response.status !== 200) return fail(response);
    const page = await bodyOf(response, schemas.SessionPage, 'listSessionIds');
    return {
      sessions: page.sessions.map((x) => ({
        sessionId: x.sessionId,
        lastActivity: new Date(x.lastActivity),
      })),
      nextCursor: page.nextCursor,
    } satisfies SessionPage;
  }

  async getLock(sessionId: string, o?: CallOptions): Promise<LockHolder | undefined> {
    const response = await this.requests.call('GET', paths.lock(sessionId), { call: o });
    // 404: no lease holds it (a server older than the route answers 405, a failure).
    if (response.status === 404) return undefined;
    if (response.status !== 200) return fail(response);
    const holder = await bodyOf(response, schemas.LockHolder, 'getLock');
    return { owner: holder.owner, token: holder.token, expiresAt: new Date(holder.expiresAt) };
  }

  async acquireLock(sessionId: string, o: AcquireLockOptions = {}): Promise<Lease> {
    const response = await this.requests.call('POST', paths.lock(sessionId), {
      body: { leaseMs: o.leaseMs, waitMs: o.waitMs, owner: o.owner },
      call: o,
      extraMs: o.waitMs ?? 0,
    });
    if (response.status !== 200) return fail(response);
    return leaseOf(await bodyOf(response, schemas.Lease, 'acquireLock'));
  }

  async renewLock(
    sessionId: string,
    lease: LeaseRef,
    o: { leaseMs?: number } & CallOptions = {},
  ): Promise<Lease> {
    const response = await this.requests.call('PUT', paths.lock(sessionId), {
      body: { leaseMs: o.leaseMs },
      headers: leaseHeaders(lease),
      call: o,
    });
    if (response.status !== 200) return fail(response);
    return leaseOf(await bodyOf(response, schemas.Lease, 'renewLock'));
  }

  async releaseLock(sessionId: string, lease: LeaseRef, o?: CallOptions): Promise<void> {
    const response = await this.requests.call('DELETE', paths.lock(sessionId), {
      headers: leaseHeaders(lease),
      call: o,
    });
    if (response.status !== 204) await fail(response);
  }
}
