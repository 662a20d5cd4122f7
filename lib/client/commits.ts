/**
 * The client's calls that read or change several keys at once: a snapshot, a commit (lease-less,
 * or a turn's with its lease), and beginning a turn (the lease, then the snapshot). What they read
 * and write of lists is remembered as the list calls remember it.
 */

import type * as z from 'zod/mini';
import { EMPTY_HASH } from '../contract/hash.js';
import type { CommitRequest, CommitResult, Snapshot, SnapshotRequest } from '../contract/types.js';
import { paths } from '../protocol/paths.js';
import { schemas } from '../protocol/schemas.js';
import type { KnownLists } from './lists.js';
import { randomId } from './random-id.js';
import { bodyOf, callOf, fail, leaseOf, type Requests } from './requests.js';
import { Turn, type TurnCommitResult } from './turn.js';
import type { BeginTurnOptions, CallOptions } from './types.js';
import type { Values } from './values.js';

/** The snapshot, commit and turn calls of the client. */
export class Commits {
  constructor(
    private readonly requests: Requests,
    private readonly known: KnownLists,
    private readonly values: Values,
  ) {}

  /** A snapshot answer as the client answers it (download times as Dates; what it read remembered). */
  private snapshotOf(sessionId: string, answer: z.output<typeof schemas.Snapshot>): Snapshot {
    for (const l of answer.lists) if (!('corrupt' in l)) this.known.remember(sessionId, l.key, l);
    return {
      exists: answer.exists,
      values: answer.values.map((v) => ('download' in v ? { ...v, expiresAt: new Date(v.expiresAt) } : v)),
      lists: answer.lists,
      ...(answer.nextCursor !== undefined ? { nextCursor: answer.nextCursor } : {}),
    };
  }

  async snapshot(sessionId: string, request: SnapshotRequest, o?: CallOptions): Promise<Snapshot> {
    const response = await this.requests.call('POST', paths.snapshot(sessionId), {
      body: { values: request.values, lists: request.lists, valuePage: request.valuePage },
      // A read: a lost answer is asked again.
      idempotent: true,
      call: o,
    });
    if (response.status !== 200) return fail(response);
    return this.snapshotOf(sessionId, await bodyOf(response, schemas.Snapshot, 'snapshot'));
  }

  /** Sends one commit body (a turn's, with its lease, or a lease-less one), retried by its id. */
  private async sendCommit(
    sessionId: string,
    body: Record<string, unknown>,
    o: CallOptions | undefined,
  ): Promise<TurnCommitResult> {
    const answer = await this.requests.call('POST', paths.commits(sessionId), {
      body,
      // The commit id names this commit: a retry of one that landed answers it complete.
      idempotent: true,
      call: o,
    });
    if (answer.status !== 200) {
      const lists = (body.lists ?? []) as Array<{ key: string }>;
      if (answer.status === 409 || answer.status === 412)
        for (const l of lists) this.known.forget(sessionId, l.key);
      return fail(answer);
    }
    const result = await bodyOf(answer, schemas.CommitResult, 'commit');
    for (const l of result.lists) this.known.remember(sessionId, l.key, l);
    return {
      commitId: result.commitId,
      values: result.values.map((v) =>
        v.etag === undefined
          ? { key: v.key }
          : { key: v.key, etag: v.etag, ...(v.revision ? { revision: v.revision } : {}) },
      ),
      lists: result.lists,
      ...(result.lease ? { lease: 'released' in result.lease ? result.lease : leaseOf(result.lease) } : {}),
    } satisfies TurnCommitResult;
  }

  async commit(sessionId: string, request: CommitRequest, o?: CallOptions): Promise<CommitResult> {
    const { lease: _lease, ...result } = await this.sendCommit(
      sessionId,
      {
        commitId: request.commitId,
        token: request.token,
        values: request.values,
        lists: request.lists,
      },
      o,
    );
    return result satisfies CommitResult;
  }

  async beginTurn(sessionId: string, o: BeginTurnOptions): Promise<Turn> {
    const response = await this.requests.call('POST', paths.turns(sessionId), {
      body: {
        leaseMs: o.leaseMs,
        waitMs: o.waitMs,
        owner: o.owner,
        values: o.values,
        lists: o.lists,
        valuePage: o.valuePage,
      },
      call: o,
      extraMs: o.waitMs ?? 0,
    });
    if (response.status !== 201) return fail(response);
    const { lease, ...snapshot } = await bodyOf(response, schemas.Turn, 'beginTurn');
    const read = this.snapshotOf(sessionId, snapshot);
    // An absent session has no data: every key the turn asked for is absent, every list empty.
    const seen = read.exists
      ? read
      : {
          exists: false,
          values: (o.values ?? []).map((key) => ({ key, absent: true as const })),
          lists: (o.lists ?? []).map(({ key }) => ({
            key,
            items: [],
            count: 0,
            hash: EMPTY_HASH,
            offset: 0,
            baseHash: EMPTY_HASH,
          })),
        };
    return new Turn(sessionId, leaseOf(lease), seen, {
      commitId: () => randomId(),
      read: (key) => this.values.getVersioned(sessionId, key, callOf(o)).then((v) => v?.value),
      send: (body) => this.sendCommit(sessionId, body, callOf(o)),
    });
  }
}
