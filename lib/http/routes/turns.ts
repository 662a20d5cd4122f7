/**
 * A whole agent turn in two calls: a snapshot of the keys a turn reads,
 * begin (the lease, then the snapshot), and commit (every change, then the lease released or
 * renewed). The store does the reads and writes (lib/store/commits.ts); the lock is the lock
 * route's (lock.ts).
 */
import type * as z from 'zod/mini';
import { LockLostError, ValidationError } from '../../contract/errors.js';
import { commitDigest } from '../../contract/hash.js';
import { checkSnapshot } from '../../contract/turns.js';
import type { SessionStore, Snapshot, SnapshotRequest, TurnsOnOneEngine } from '../../contract/types.js';
import { PATHS } from '../../protocol/paths.js';
import { schemas } from '../../protocol/schemas.js';
import { leaseJson } from './lock.js';
import { fitPage, json, type RouteContext, route, WRITE_PROBLEMS } from './route.js';

type SnapshotAnswer = z.output<typeof schemas.Snapshot>;
type ValueEntry = SnapshotAnswer['values'][number];
type ListEntry = SnapshotAnswer['lists'][number];

/** Bytes of JSON of `value`. */
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/**
 * The snapshot as an answer that fits `limit` bytes: values first (the largest become a presigned
 * `download`, largest first, until the values leave room for the lists' counts and hashes), then
 * per list, in the order asked, the most recent items that fit what is left (with their `offset`).
 * A damaged key is `{ key, corrupt: true }` in its place: it never fails the whole answer.
 */
async function fitted(
  user: SessionStore,
  sessionId: string,
  snapshot: Snapshot,
  limit: number,
): Promise<SnapshotAnswer> {
  if (!snapshot.exists) return { exists: false, values: [], lists: [] };
  const values: ValueEntry[] = snapshot.values.map((v) =>
    'download' in v ? { ...v, expiresAt: v.expiresAt.toISOString() } : v,
  );
  // The lists without their items: what every answer carries whatever the items.
  const bare = snapshot.lists.map((l) => ('corrupt' in l ? l : { ...l, items: [] }));
  const frame = bytes({ exists: true, values: [], lists: bare }) + 64;
  let size = frame + values.reduce((n, v) => n + bytes(v) + 1, 0);
  const order = values
    .map((v, i) => ({ i, n: 'value' in v ? bytes(v) : 0 }))
    .filter((x) => x.n > 0)
    .sort((a, b) => b.n - a.n);
  for (const { i, n } of order) {
    if (size <= limit) break;
    const entry = values[i] as ValueEntry & { key: string };
    const located = await user.locateValue(sessionId, entry.key);
    const replacement: ValueEntry = located
      ? {
          key: entry.key,
          etag: located.version,
          revision: located.revision,
          size: located.size,
          download: located.download,
          expiresAt: located.expiresAt.toISOString(),
        }
      : { key: entry.key, absent: true }; // deleted meanwhile
    size += bytes(replacement) - n;
    values[i] = replacement;
  }
  let room = Math.max(0, limit - size);
  const lists: ListEntry[] = snapshot.lists.map((l) => {
    if ('corrupt' in l) return l;
    const { key, ...page } = l;
    const cut = fitPage(page, room + 128, 'new');
    room = Math.max(0, room - (bytes(cut.items) - 2));
    return {
      key,
      items: cut.items,
      count: cut.count,
      hash: cut.hash,
      offset: cut.offset,
      baseHash: cut.baseHash,
    };
  });
  return {
    exists: true,
    values,
    lists,
    ...(snapshot.nextCursor !== undefined ? { nextCursor: snapshot.nextCursor } : {}),
  };
}

/** The keys of a snapshot request, as the store takes them. */
const keysOf = (body: SnapshotRequest): SnapshotRequest => ({
  ...(body.values ? { values: body.values } : {}),
  ...(body.lists
    ? { lists: body.lists.map((l) => (l.last === undefined ? { key: l.key } : { key: l.key, last: l.last })) }
    : {}),
  ...(body.valuePage ? { valuePage: body.valuePage } : {}),
});

const lockKey = (c: RouteContext<'/{sessionId}'>) => ({ userId: c.userId, sessionId: c.params.sessionId });

const SNAPSHOT_NOTES =
  'Values answer `{key, value, etag}`, or `{key, absent: true}`; lists `{key, items, offset, baseHash, count, hash}` (an absent list is empty). An answer over the answer limit carries, per list, the most recent items that fit, from `offset` (read the rest with getList), and a value too large as `{key, etag, size, download, expiresAt}`: a presigned URL to read it from the object store. A damaged key is `{key, corrupt: true}` in its place; the others are answered. A backend that cannot presign answers a value too large for the answer 501 `unsupported`, as getValue does. At most 100 keys (values and lists together); unknown members, more keys, or the same key twice in one kind: 400.';

export const TURN_ROUTES = [
  route({
    method: 'POST',
    pattern: PATHS.snapshot,
    operationId: 'readSnapshot',
    tag: 'turns',
    summary: 'Read values and lists of a session in one call',
    description: `Reads the values and lists named in the body in parallel, with one read of the session marker. An absent session, another user's included, answers 200 \`exists: false\` and no data. ${SNAPSHOT_NOTES}`,
    auth: true,
    body: schemas.SnapshotRequest,
    answers: { 200: { body: schemas.Snapshot, description: 'the snapshot' } },
    problems: ['unsupported'],
    handle: async (c) => {
      const { sessionId } = c.params;
      const snapshot = await c.user.snapshot(sessionId, keysOf(c.body));
      return json(200, await fitted(c.user, sessionId, snapshot, c.limit));
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.turns,
    operationId: 'beginTurn',
    tag: 'turns',
    summary: 'Begin a turn: take the lease, then read the snapshot',
    description: `Grants a lease as acquireLock does (\`leaseMs\`, \`waitMs\`, \`owner\`; 409 \`lock-held\` with \`holder\`, \`expiresAt\` and Retry-After when another owner holds it), then reads the snapshot of the keys named: 201 \`{lease, exists, values, lists}\`. It does not create the session. Send the lease's \`token\` with the commit. ${SNAPSHOT_NOTES}`,
    auth: true,
    body: schemas.TurnRequest,
    answers: { 201: { body: schemas.Turn, description: 'the lease and the snapshot' } },
    problems: ['lock-held', 'unsupported'],
    handle: async (c) => {
      const { leaseMs, waitMs, owner } = c.body;
      const request = keysOf(c.body);
      // Refused before the lease is taken: a bad request holds no lock.
      checkSnapshot(request);
      const key = lockKey(c);
      const options = {
        leaseMs,
        ...(waitMs !== undefined ? { waitMs } : {}),
        ...(owner !== undefined ? { owner } : {}),
      };
      // An engine whose lock is its own takes the lease and reads the snapshot in one round trip.
      const both = (c.user as Partial<TurnsOnOneEngine>).beginTurn?.(c.params.sessionId, options, request);
      const begun = both ? await both : undefined;
      const lease = begun?.lease ?? (await c.deps.lock.acquire(key, options));
      try {
        if (begun) {
          const answer = await fitted(c.user, c.params.sessionId, begun.snapshot, c.limit - 256);
          return json(201, { lease: leaseJson(lease), ...answer });
        }
        const snapshot = await c.user.snapshot(c.params.sessionId, request);
        const answer = await fitted(c.user, c.params.sessionId, snapshot, c.limit - 256);
        return json(201, { lease: leaseJson(lease), ...answer });
      } catch (error) {
        // No snapshot, no turn: the lease is given back (best effort; it expires anyway).
        await c.deps.lock.release(key, lease.owner, lease.token).catch(() => {});
        throw error;
      }
    },
  }),
  route({
    method: 'POST',
    pattern: PATHS.commits,
    operationId: 'commitTurn',
    tag: 'turns',
    summary: "Commit a turn's changes (values, then lists), then release or renew the lease",
    description:
      "Applies every change of the body: values (`{key, value, ifVersion? | ifAbsent?}` or `{key, delete: true}`) before lists (`{key, append, expectedCount, expectedHash}`, `{key, replace, expectedHash?}`, `{key, truncate, expectedHash}`). Every precondition (versions, expected counts and hashes, the `token`) is checked before the first write: if one fails, nothing is written and the answer names each failing key in `failures` (409 `commit-conflict` when a list's count moved on, else 412 `precondition-failed`); a stale `token`, or one the lock did not grant to a live lease, is 409 `fenced`, nothing written. Each key's write is atomic; keys are not atomic with each other (no cross-key transaction): a commit without a lease whose condition fails at write time is 409 `commit-partial` with `applied` and `failed`. A retry with the same `commitId` skips the keys that record it and re-applies the others only where their condition still holds (unconditional values and deletes are at-least-once); the same `commitId` with another body is 409 `commit-mismatch`.\n\n`lease` needs `token` (400 otherwise): `{owner, release: true}` releases the lease after the writes succeeded (a lease already released, by an earlier attempt of this commit, is not an error: the answer says `released`), `{owner, renewMs}` renews it (409 `lock-lost` when it is not held: the writes are done). At most 100 keys and 1,000 list items.",
    auth: true,
    body: schemas.CommitRequest,
    answers: { 200: { body: schemas.CommitResult, description: 'committed' } },
    problems: [
      'precondition-failed',
      'commit-conflict',
      'commit-partial',
      'commit-mismatch',
      'precondition-unsupported',
      'fenced',
      'lock-lost',
      ...WRITE_PROBLEMS,
    ],
    handle: async (c) => {
      const { lease, ...request } = c.body;
      if (lease && request.token === undefined) throw new ValidationError('lease', 'requires token');
      // An engine whose lock is its own commits and releases in one round trip (the release
      // recording the commit's identity, as below).
      const both =
        lease && 'release' in lease
          ? (c.user as Partial<TurnsOnOneEngine>).commitAndRelease?.(c.params.sessionId, request, lease.owner)
          : undefined;
      if (both && lease) return json(200, { ...(await both), lease: { owner: lease.owner, released: true } });
      const result = await c.user.commit(c.params.sessionId, request);
      const key = lockKey(c);
      const { token } = request;
      // The lease records the commit's identity (the store checks it there on a retry).
      const commit = { commitId: request.commitId, digest: commitDigest(request) };
      if (token === undefined) return json(200, result);
      if (!lease) {
        await c.deps.lock.recordCommit(key, token, commit);
        return json(200, result);
      }
      if ('release' in lease) {
        try {
          await c.deps.lock.release(key, lease.owner, token, { commit });
        } catch (error) {
          // Another owner holds it now: this lease is not held either way, and the writes are done.
          if (!(error instanceof LockLostError)) throw error;
        }
        return json(200, { ...result, lease: { owner: lease.owner, released: true } });
      }
      const renewed = await c.deps.lock.renew(key, lease.owner, token, { leaseMs: lease.renewMs, commit });
      return json(200, { ...result, lease: leaseJson(renewed) });
    },
  }),
];
