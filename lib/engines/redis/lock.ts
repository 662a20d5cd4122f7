/**
 * The Redis lock (LOCK_BACKEND=redis; docs/DESIGN.md, "Fencing"): one hash per session, in the
 * session's slot (`<prefix>{<user>/<session>}:lock`), changed by scripts. A token is
 * `max(counter + 1, server TIME in ms)`, computed inside the script, so tokens still grow after a
 * failover loses the counter. A Redis store on the same client checks tokens against this key
 * inside its own scripts (no read of the lock from Node).
 */
import { randomUUID } from 'node:crypto';
import { DEFAULTS } from '../../contract/defaults.js';
import { LockConflictError, LockLostError } from '../../contract/errors.js';
import { checkPrefix } from '../../contract/ids.js';
import {
  type AcquireOptions,
  type CommitIdentity,
  checkLeaseMs,
  checkOwner,
  checkToken,
  checkWaitMs,
  type Lease,
  type LockKey,
  lockName,
  type SessionLock,
  waitFor,
} from '../../contract/lock.js';
import { DAY_MS } from '../../util/units.js';
import { callScript, checkRedisServer, defineScripts, type RedisClient } from './client.js';
import { REDIS_LOCK_CLIENT } from './store.js';

const PRELUDE = `
local LOCK = KEYS[1]
local NOW = tonumber(ARGV[#ARGV])
if NOW == nil then
  local t = redis.call('TIME')
  NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n) return string.format('%d', n) end
local l = redis.call('HMGET', LOCK, 'owner', 'token', 'exp')
local owner, token, exp = l[1], tonumber(l[2] or '0'), tonumber(l[3] or '0')
local live = owner ~= false and exp >= NOW
local function set_commit(cid, dig)
  if cid and cid ~= '' then redis.call('HSET', LOCK, 'cid', cid, 'dig', dig) end
end
`;

/** ARGV: owner, explicit (1/0), leaseMs, keepMs (and, last in every script, the test clock or ''). */
const ACQUIRE = `${PRELUDE}
local me, explicit, lease, keep = ARGV[1], ARGV[2] == '1', tonumber(ARGV[3]), tonumber(ARGV[4])
if live then
  if not (explicit and owner == me) then return { 'held', owner, int(exp) } end
  redis.call('HSET', LOCK, 'exp', int(NOW + lease), 'lease', int(lease))
  redis.call('PEXPIRE', LOCK, lease + keep)
  return { 'ok', int(token), int(NOW + lease) }
end
local next = math.max(token + 1, NOW)
redis.call('HSET', LOCK, 'owner', me, 'token', int(next), 'exp', int(NOW + lease), 'lease', int(lease))
redis.call('PEXPIRE', LOCK, lease + keep)
return { 'ok', int(next), int(NOW + lease) }
`;

/** ARGV: owner, token, leaseMs, keepMs, commitId, digest. */
const RENEW = `${PRELUDE}
if owner ~= ARGV[1] or int(token) ~= ARGV[2] then return { 'lost' } end
local lease = tonumber(ARGV[3])
redis.call('HSET', LOCK, 'exp', int(NOW + lease), 'lease', int(lease))
redis.call('PEXPIRE', LOCK, lease + tonumber(ARGV[4]))
set_commit(ARGV[5], ARGV[6])
return { 'ok', int(token), int(NOW + lease) }
`;

/** ARGV: owner, token, commitId, digest. */
const RELEASE = `${PRELUDE}
if not live then return { 'ok' } end
if owner ~= ARGV[1] or int(token) ~= ARGV[2] then return { 'lost' } end
redis.call('HDEL', LOCK, 'owner')
redis.call('HSET', LOCK, 'exp', '0')
set_commit(ARGV[3], ARGV[4])
return { 'ok' }
`;

/** ARGV: token, commitId, digest. */
const RECORD = `${PRELUDE}
if live and int(token) == ARGV[1] then set_commit(ARGV[2], ARGV[3]) end
return { 'ok' }
`;

/** The lock as it is, beside the server's clock (a lease is judged by the clock that granted it). */
const READ = `${PRELUDE}
local c = redis.call('HMGET', LOCK, 'cid', 'dig')
return { owner, l[2], int(exp), c[1], c[2], int(NOW) }
`;

/** Options of the Redis lock. */
export interface RedisLockOptions {
  readonly client: RedisClient;
  /** The store's key prefix (the lock key shares the session's hash tag); default `agent-state/`. */
  readonly prefix?: string;
  /** Days a lock key outlives its last lease (its counter with it); default 30. */
  readonly retentionDays?: number;
  /** A clock instead of the server's TIME (tests); default the server's. */
  readonly now?: () => number;
}

/** Creates the Redis lock. */
export function createRedisLock(
  options: RedisLockOptions,
): SessionLock & { readonly [REDIS_LOCK_CLIENT]: RedisClient } {
  const { client } = options;
  const prefix = checkPrefix(options.prefix ?? DEFAULTS.prefix);
  const keepMs = Math.round((options.retentionDays ?? DEFAULTS.retentionDays) * DAY_MS);
  defineScripts(client, {
    assLockAcquire: { lua: ACQUIRE, keys: 1 },
    assLockRenew: { lua: RENEW, keys: 1 },
    assLockRelease: { lua: RELEASE, keys: 1 },
    assLockRecord: { lua: RECORD, keys: 1 },
    assLockRead: { lua: READ, keys: 1, readOnly: true },
  });
  // The session's hash tag, as the store writes it: lockName is `<user>/<session>`, encoded.
  const keyOf = (key: LockKey) => `${prefix}{${lockName(key)}}:lock`;
  const call = (name: string, key: LockKey, args: readonly string[]) =>
    callScript(client, name, [keyOf(key), ...args, options.now ? String(options.now()) : '']) as Promise<
      Array<string | null>
    >;
  const read = async (key: LockKey) => {
    const [owner, token, exp, cid, dig, now] = (await call('assLockRead', key, [])) as Array<string | null>;
    return {
      owner,
      token: token == null ? undefined : Number(token),
      exp: Number(exp ?? 0),
      cid,
      dig,
      now: Number(now),
    };
  };
  const commitArgs = (commit: CommitIdentity | undefined) => [commit?.commitId ?? '', commit?.digest ?? ''];
  return {
    [REDIS_LOCK_CLIENT]: client,
    async acquire(key, o: AcquireOptions = {}): Promise<Lease> {
      const leaseMs = checkLeaseMs(o.leaseMs);
      const waitMs = checkWaitMs(o.waitMs);
      const owner = o.owner === undefined ? randomUUID() : checkOwner(o.owner);
      return waitFor(
        async () => {
          const reply = await call('assLockAcquire', key, [
            owner,
            o.owner === undefined ? '0' : '1',
            String(leaseMs),
            String(keepMs),
          ]);
          if (reply[0] === 'held') throw new LockConflictError(String(reply[1]), new Date(Number(reply[2])));
          return { owner, token: Number(reply[1]), expiresAt: new Date(Number(reply[2])), leaseMs };
        },
        waitMs,
        options.now ?? Date.now,
      );
    },
    async renew(key, owner, token, o = {}) {
      checkOwner(owner);
      checkToken(token);
      const leaseMs = checkLeaseMs(o.leaseMs);
      const reply = await call('assLockRenew', key, [
        owner,
        String(token),
        String(leaseMs),
        String(keepMs),
        ...commitArgs(o.commit),
      ]);
      if (reply[0] !== 'ok') throw new LockLostError();
      return { owner, token, expiresAt: new Date(Number(reply[2])), leaseMs };
    },
    async release(key, owner, token, o = {}) {
      checkOwner(owner);
      checkToken(token);
      const reply = await call('assLockRelease', key, [owner, String(token), ...commitArgs(o.commit)]);
      if (reply[0] !== 'ok') throw new LockLostError('another owner holds the lock');
    },
    async recordCommit(key, token, commit) {
      checkToken(token);
      await call('assLockRecord', key, [String(token), ...commitArgs(commit)]);
    },
    async holderOf(key) {
      const r = await read(key);
      if (r.owner == null || r.token === undefined || r.exp < r.now) return undefined;
      return { owner: r.owner, token: r.token, expiresAt: new Date(r.exp) };
    },
    async grantOf(key) {
      const r = await read(key);
      if (r.token === undefined) return undefined;
      const live = r.owner != null && r.exp >= r.now;
      return {
        token: r.token,
        live,
        ...(r.cid && r.dig ? { commit: { commitId: r.cid, digest: r.dig } } : {}),
      };
    },
    async checkReady() {
      await checkRedisServer(client);
    },
  };
}
