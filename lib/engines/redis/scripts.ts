/**
 * The Redis engine's server-side scripts (docs/backends.md, "Redis"): every mutation of a session
 * is one of them, run atomically by Redis on the session's keys, which share one hash tag (one slot,
 * so a Cluster runs them too). Each script gets the session's meta key as KEYS[1] (it routes the
 * call), the session's key base and a JSON request as ARGV[1..2], and bodies or items after them,
 * as sent (never decoded, so they read back byte for byte).
 *
 * Redis Lua has no SHA-256: Node computes the chain hashes (lib/contract/hash.ts) and the scripts
 * compare and store them. The fencing and idempotency rules are the write path's (docs/DESIGN.md,
 * "The write path"), evaluated here against the tokens the keys record and, when the lock is the
 * Redis lock, against the session's lock key itself.
 */

/** The functions every script shares: the clock, the request, key names, fencing, records, expiry. */
const PRELUDE = `
local M = KEYS[1]
local B = ARGV[1]
local req = cjson.decode(ARGV[2])
local t = redis.call('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A ttl of 0 is the memory session's, which never expires: its keys carry no deadline.
local function expire_at(name, exp) if (req.ttl or 0) > 0 then redis.call('PEXPIREAT', name, exp) end end
local EMPTY = '${'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}'
local K = B .. 'k'
local CS = B .. 'cs'
local WS = B .. 'ws'
local LOCK = B .. 'lock'
local function V(key) return B .. 'v:' .. key end
local function L(key) return B .. 'l:' .. key end
local function HL(key) return B .. 'hl:' .. key end
local function H(key) return B .. 'h:' .. key end
local function W(key) return B .. 'w:' .. key end
local function WO(key) return B .. 'wo:' .. key end
local function AR(key) return B .. 'ar:' .. key end
local function A(id, key) return B .. 'a:' .. id .. ':' .. key end
local function AH(id, key) return B .. 'ah:' .. id .. ':' .. key end
local function C(id) return B .. 'c:' .. id end
local function int(n) return string.format('%d', n) end
local function num(s, default) local n = tonumber(s) if n == nil then return default end return n end

-- Pushes ARGV[from..to] (or a table's from..to) onto a list, in chunks that unpack can take.
local function push(list, source, from, to)
  local i = from
  while i <= to do
    local j = math.min(i + 999, to)
    local chunk = {}
    for x = i, j do chunk[#chunk + 1] = source[x] end
    redis.call('RPUSH', list, unpack(chunk))
    i = j + 1
  end
end
-- The 64-hex hashes of a concatenation, as a table.
local function hexes(s)
  local out = {}
  for i = 1, #s, 64 do out[#out + 1] = string.sub(s, i, i + 63) end
  return out
end

-- Fencing: nil when the write may go on, else the token that fences it (-1: the lock did not
-- grant this token to a live lease).
local function fenced(recorded)
  local tok = req.tok
  if tok == nil then return nil end
  local seen = num(redis.call('HGET', M, 'tok'), -1)
  for _, r in ipairs(recorded) do if r > seen then seen = r end end
  if seen > tok then return seen end
  local gt, live
  if req.auth == 'lock' then
    local l = redis.call('HMGET', LOCK, 'token', 'owner', 'exp')
    gt = num(l[1], nil)
    live = l[2] ~= false and num(l[3], 0) >= NOW
  elseif req.auth == 'given' then
    gt = req.gt
    live = req.gl
  else
    return nil
  end
  if gt ~= nil and gt > tok then return gt end
  if gt == nil or gt ~= tok or not live then return -1 end
  return nil
end
local function raise_token()
  if req.tok == nil then return end
  if num(redis.call('HGET', M, 'tok'), -1) < req.tok then redis.call('HSET', M, 'tok', int(req.tok)) end
end

-- The session: its incarnation and version counter, created by its first write.
local function begin_session()
  if redis.call('HSETNX', M, 'inc', req.inc) == 1 then
    redis.call('HSET', M, 'lr', '0')
    return 1
  end
  return 0
end
local function new_version()
  local seq = redis.call('HINCRBY', M, 'seq', 1)
  return redis.call('HGET', M, 'inc') .. '.' .. int(seq)
end

-- Every key of one session key name (values, lists, records, archives).
local function owned(key, out)
  for _, name in ipairs({ V(key), L(key), HL(key), H(key) }) do out[#out + 1] = name end
  for _, a in ipairs(redis.call('LRANGE', AR(key), 0, -1)) do
    local id = cjson.decode(a).archiveId
    out[#out + 1] = A(id, key)
    out[#out + 1] = AH(id, key)
  end
  out[#out + 1] = AR(key)
  return out
end
local function all_owned()
  local out = {}
  for _, key in ipairs(redis.call('ZRANGE', K, 0, -1)) do owned(key, out) end
  for _, id in ipairs(redis.call('SMEMBERS', CS)) do out[#out + 1] = C(id) end
  for _, key in ipairs(redis.call('SMEMBERS', WS)) do out[#out + 1] = W(key); out[#out + 1] = WO(key) end
  return out
end

-- Expiry: every key of the session carries the same deadline, moved at most once per keep-alive
-- interval (the meta's lr); keys written in between get the current deadline.
local function touch(written)
  local lr = num(redis.call('HGET', M, 'lr'), 0)
  if NOW - lr >= req.keep then
    local exp = NOW + req.ttl
    redis.call('HSET', M, 'lr', int(NOW), 'exp', int(exp))
    for _, name in ipairs({ M, K, CS, WS }) do expire_at(name, exp) end
    for _, name in ipairs(all_owned()) do expire_at(name, exp) end
    return 1
  end
  local exp = num(redis.call('HGET', M, 'exp'), NOW + req.ttl)
  for _, name in ipairs(written) do expire_at(name, exp) end
  return 0
end

-- A list's state.
local function list_state(key)
  local h = redis.call('HMGET', H(key), 'n', 'hash', 'tok')
  return { exists = h[1] ~= false, n = num(h[1], 0), hash = h[2] or EMPTY, tok = num(h[3], -1) }
end
-- The record of a named list write among the list's last 1,000 (kept when the list is deleted):
-- 'same' with its answer, 'reused' (the name with another body), or nil. A record id is 8 hex
-- digits of the name, then 8 of the body's digest.
local function recorded(key, wid)
  if wid == nil then return nil end
  local r = redis.call('HGET', W(key), string.sub(wid, 1, 8))
  if not r then return nil end
  local id, action, n, hash = string.match(r, '^(%S+) (%S+) (%S+) (%S+)$')
  if id == wid then return { 'same', action, n, hash } end
  return { 'reused' }
end
local function record(key, wid, action, n, hash)
  if wid == nil then return end
  local name = string.sub(wid, 1, 8)
  redis.call('HSET', W(key), name, wid .. ' ' .. action .. ' ' .. int(n) .. ' ' .. hash)
  redis.call('RPUSH', WO(key), name)
  if redis.call('LLEN', WO(key)) > 1000 then redis.call('HDEL', W(key), redis.call('LPOP', WO(key))) end
  redis.call('SADD', WS, key)
  local exp = num(redis.call('HGET', M, 'exp'), NOW + req.ttl)
  for _, k in ipairs({ W(key), WO(key), WS }) do expire_at(k, exp) end
end
local function set_list(key, n, hash)
  local f = { 'n', int(n), 'hash', hash, 'mt', int(NOW) }
  if req.tok ~= nil then f[#f + 1] = 'tok'; f[#f + 1] = int(req.tok) end
  redis.call('HSET', H(key), unpack(f))
  redis.call('ZADD', K, 0, key)
end
-- Archives a whole list (RENAME: O(1)) and answers nothing.
local function archive_whole(key, st)
  if st.n == 0 then return end
  local id = int(redis.call('HINCRBY', M, 'aseq', 1))
  redis.call('RENAME', L(key), A(id, key))
  redis.call('RENAME', HL(key), AH(id, key))
  redis.call('RPUSH', AR(key), cjson.encode({ archiveId = id, count = st.n, hash = st.hash, archivedAt = NOW, offset = 0 }))
end
local function append_items(key, st, source, from, to, hashes)
  local count = to - from + 1
  if count <= 0 then return st.hash end
  push(L(key), source, from, to)
  push(HL(key), hashes, 1, #hashes)
  return 'sha256:' .. hashes[#hashes]
end
-- Replaces a list by items (unchanged, appended to, or archived and rewritten): its action and hash.
local function replace_list(key, st, source, from, to, prefix)
  local len = to - from + 1
  if st.n <= len and (st.n == 0 or prefix[st.n + 1] == string.sub(st.hash, 8)) then
    if st.n == len then
      if not st.exists and len == 0 then set_list(key, 0, EMPTY) return 'created', EMPTY end
      return 'unchanged', st.hash
    end
    local rest = {}
    for i = st.n + 2, len + 1 do rest[#rest + 1] = prefix[i] end
    local hash = append_items(key, st, source, from + st.n, to, rest)
    set_list(key, len, hash)
    return (st.n == 0 and 'created' or 'appended'), hash
  end
  archive_whole(key, st)
  redis.call('DEL', L(key), HL(key))
  local all = {}
  for i = 2, len + 1 do all[#all + 1] = prefix[i] end
  local hash = len == 0 and EMPTY or append_items(key, st, source, from, to, all)
  set_list(key, len, hash)
  return 'rewritten', hash
end
-- Keeps the first count items, archiving the others (their chain hashes from Node): the new hash.
local function truncate_list(key, st, count, ahashes)
  local id = int(redis.call('HINCRBY', M, 'aseq', 1))
  local removed = redis.call('LRANGE', L(key), count, -1)
  push(A(id, key), removed, 1, #removed)
  push(AH(id, key), ahashes, 1, #ahashes)
  redis.call('RPUSH', AR(key), cjson.encode({ archiveId = id, count = #removed, hash = 'sha256:' .. ahashes[#ahashes], archivedAt = NOW, offset = count }))
  local hash = EMPTY
  if count == 0 then
    redis.call('DEL', L(key), HL(key))
  else
    redis.call('LTRIM', L(key), 0, count - 1)
    redis.call('LTRIM', HL(key), 0, count - 1)
    hash = 'sha256:' .. redis.call('LINDEX', HL(key), count - 1)
  end
  set_list(key, count, hash)
  return hash
end
-- A key with neither a value nor a list leaves the index; the session's last one empties it (it no
-- longer exists; its next write refreshes it and lists it again).
local function forget_if_gone(key)
  if redis.call('EXISTS', V(key)) == 0 and redis.call('EXISTS', H(key)) == 0 then
    redis.call('ZREM', K, key)
    if redis.call('EXISTS', K) == 0 then redis.call('HSET', M, 'lr', '0') end
  end
end
local function list_keys(key) local n = {} owned(key, n) return n end
`;

/** save: one value, conditional on its version or absence, fenced. */
const SAVE = `
local key = req.key
local cur = redis.call('HMGET', V(key), 'ver', 'tok', 'rev')
local f = fenced({ num(cur[2], -1) })
if f then return { 'fenced', int(f) } end
if req.ifa and cur[1] then return { 'pre', cur[1], cur[3] } end
if req.ifv ~= nil and cur[1] ~= req.ifv then return { 'pre', cur[1], cur[3] } end
if req.ifr ~= nil and num(cur[3], 0) ~= req.ifr then return { 'pre', cur[1], cur[3] } end
local created = begin_session()
raise_token()
local ver = new_version()
local rev = redis.call('HINCRBY', V(key), 'rev', 1)
local f2 = { 'b', ARGV[3], 'ver', ver, 'mt', int(NOW) }
if req.tok ~= nil then f2[#f2 + 1] = 'tok'; f2[#f2 + 1] = int(req.tok) end
redis.call('HSET', V(key), unpack(f2))
redis.call('HDEL', V(key), 'cid', 'dig')
redis.call('ZADD', K, 0, key)
local refreshed = touch({ V(key), K })
return { 'ok', ver, rev, created + refreshed }
`;

/** deleteKey: one value, fenced. */
const DELETE_KEY = `
local key = req.key
local f = fenced({ num(redis.call('HGET', V(key), 'tok'), -1) })
if f then return { 'fenced', int(f) } end
if redis.call('EXISTS', K) == 0 then return { 'ok', 0 } end
raise_token()
redis.call('DEL', V(key))
forget_if_gone(key)
return { 'ok', 1 - redis.call('EXISTS', K) }
`;

/** append: items at the end the caller expects (count, and hash when given), fenced, named. */
const APPEND = `
local key = req.key
local st = list_state(key)
local r = recorded(key, req.wid)
if r and r[1] == 'reused' then return { 'reused' } end
if r then return { 'ok', r[2], r[3], r[4], 0 } end
local f = fenced({ st.tok })
if f then return { 'fenced', int(f) } end
local hashes = hexes(req.hs)
-- The same items already at the expected count (their chain hash says so): a replay.
if st.n == req.ec + #ARGV - 2 and st.hash == 'sha256:' .. hashes[#hashes] then return { 'ok', 'unchanged', st.n, st.hash, 0 } end
if st.n ~= req.ec or (req.eh ~= nil and st.hash ~= req.eh) then return { 'conflict', st.n, st.hash } end
if st.hash ~= req.bh then return { 'stale', st.n, st.hash } end
local created = begin_session()
raise_token()
local hash = append_items(key, st, ARGV, 3, #ARGV, hashes)
local n = st.n + #ARGV - 2
local action = st.exists and 'appended' or 'created'
set_list(key, n, hash)
record(key, req.wid, action, n, hash)
local refreshed = touch({ L(key), HL(key), H(key), K })
return { 'ok', action, n, hash, created + refreshed }
`;

/** saveList: the whole list (unchanged, appended to or rewritten), conditional on ifHash, fenced. */
const SAVE_LIST = `
local key = req.key
local st = list_state(key)
if req.ifh ~= nil and st.hash ~= req.ifh then return { 'lpre', st.hash } end
-- No items over no list: nothing to create.
if not st.exists and #ARGV == 2 then return { 'ok', 'unchanged', 0, EMPTY, 0 } end
local f = fenced({ st.tok })
if f then return { 'fenced', int(f) } end
local prefix = hexes(req.ph)
-- The list as it is already: nothing to write.
if st.exists and st.n == #ARGV - 2 and prefix[st.n + 1] == string.sub(st.hash, 8) then
  return { 'ok', 'unchanged', st.n, st.hash, 0 }
end
local created = begin_session()
raise_token()
local action, hash = replace_list(key, st, ARGV, 3, #ARGV, prefix)
local refreshed = touch(list_keys(key))
return { 'ok', action, #ARGV - 2, hash, created + refreshed }
`;

/** truncate: keeps the first count items if the list has the expected hash, archiving the rest. */
const TRUNCATE = `
local key = req.key
local st = list_state(key)
local r = recorded(key, req.wid)
if r and r[1] == 'reused' then return { 'reused' } end
if r then return { 'ok', r[2], r[3], r[4], 0 } end
local f = fenced({ st.tok })
if f then return { 'fenced', int(f) } end
if st.hash ~= req.eh then return { 'lpre', st.hash } end
if req.count > st.n then return { 'short', st.n } end
if req.count == st.n then return { 'ok', 'unchanged', st.n, st.hash, 0 } end
if st.hash ~= req.pre then return { 'stale', st.n, st.hash } end
raise_token()
local hash = truncate_list(key, st, req.count, hexes(req.ah))
record(key, req.wid, 'truncated', req.count, hash)
local refreshed = touch(list_keys(key))
return { 'ok', 'truncated', req.count, hash, refreshed }
`;

/** deleteList: archives the list, then removes it; fenced. */
const DELETE_LIST = `
local key = req.key
local st = list_state(key)
local f = fenced({ st.tok })
if f then return { 'fenced', int(f) } end
if not st.exists then return { 'ok', 0 } end
raise_token()
archive_whole(key, st)
redis.call('DEL', L(key), HL(key), H(key))
forget_if_gone(key)
touch({ AR(key) })
return { 'ok', 1 - redis.call('EXISTS', K) }
`;

/** delete: the whole session; a token write leaves its token in the meta (a tombstone). */
const DELETE_SESSION = `
local f = fenced({})
if f then return { 'fenced', int(f) } end
local names = all_owned()
for i = 1, #names, 500 do
  local chunk = {}
  for j = i, math.min(i + 499, #names) do chunk[#chunk + 1] = names[j] end
  redis.call('DEL', unpack(chunk))
end
redis.call('DEL', K, CS, WS)
local tok = num(redis.call('HGET', M, 'tok'), -1)
if req.tok ~= nil and req.tok > tok then tok = req.tok end
redis.call('DEL', M)
if tok >= 0 then
  redis.call('HSET', M, 'tok', int(tok))
  if req.ttl > 0 then redis.call('PEXPIRE', M, req.ttl) end
end
return { 'ok' }
`;

/**
 * commit: a whole turn, atomic across its keys. A recorded commit id answers its record (another
 * body: mismatch); a stale token writes nothing; every precondition is checked before any write.
 * ARGV from 3: the values' bodies, then each list's items, in the request's order.
 */
const COMMIT = `
local rec = redis.call('HMGET', C(req.cid), 'dig', 'res')
-- With req.release (an owner): the lease of that owner and the commit's token is released after
-- the commit (or its replay), recording the commit in it, as the lock's release does.
local function release()
  if not req.release then return end
  local l = redis.call('HMGET', LOCK, 'owner', 'token', 'exp')
  if l[1] == req.release and num(l[2], -1) == req.tok and num(l[3], 0) >= NOW then
    redis.call('HDEL', LOCK, 'owner')
    redis.call('HSET', LOCK, 'exp', '0', 'cid', req.cid, 'dig', req.dig)
  end
end
if rec[1] then
  if rec[1] ~= req.dig then return { 'mismatch' } end
  release()
  return { 'replay', rec[2] }
end
local vals, lists = req.values, req.lists
local tokens = {}
local vcur = {}
local vrev = {}
for i, v in ipairs(vals) do
  local cur = redis.call('HMGET', V(v.k), 'ver', 'tok', 'rev')
  vcur[i] = cur[1]
  vrev[i] = cur[3]
  tokens[#tokens + 1] = num(cur[2], -1)
end
local lst = {}
for i, l in ipairs(lists) do
  lst[i] = list_state(l.k)
  tokens[#tokens + 1] = lst[i].tok
end
local f = fenced(tokens)
if f then return { 'fenced', int(f) } end
local failures = {}
for i, v in ipairs(vals) do
  if (v.ifa and vcur[i]) or (v.ifv ~= nil and vcur[i] ~= v.ifv) or (v.ifr ~= nil and num(vrev[i], 0) ~= v.ifr) then
    failures[#failures + 1] = {
      kind = 'value', key = v.k, reason = 'version',
      currentVersion = vcur[i] or cjson.null,
      currentRevision = vrev[i] and tonumber(vrev[i]) or cjson.null,
    }
  end
end
for i, l in ipairs(lists) do
  local st = lst[i]
  local reason = nil
  if l.op == 'a' then
    if st.n ~= l.ec then reason = 'count' elseif st.hash ~= l.eh then reason = 'hash' end
  elseif l.op == 'r' then
    if l.eh ~= nil and st.hash ~= l.eh then reason = 'hash' end
  else
    if st.hash ~= l.eh then reason = 'hash' elseif l.tc > st.n then reason = 'count' end
  end
  if reason then
    failures[#failures + 1] = { kind = 'list', key = l.k, reason = reason, count = st.n, hash = st.hash }
  end
end
if #failures > 0 then return { 'pre', cjson.encode(failures) } end
for i, l in ipairs(lists) do
  if l.op == 't' and l.tc < lst[i].n and lst[i].hash ~= l.pre then return { 'stale' } end
end
local created = begin_session()
raise_token()
local out = {}
local written = { K, CS, C(req.cid) }
local at = 3
for i, v in ipairs(vals) do
  if v.op == 'd' then
    redis.call('DEL', V(v.k))
    forget_if_gone(v.k)
    out[#out + 1] = ''
  else
    local ver = new_version()
    local rev = redis.call('HINCRBY', V(v.k), 'rev', 1)
    local fv = { 'b', ARGV[at], 'ver', ver, 'mt', int(NOW), 'cid', req.cid, 'dig', req.dig }
    if req.tok ~= nil then fv[#fv + 1] = 'tok'; fv[#fv + 1] = int(req.tok) end
    redis.call('HSET', V(v.k), unpack(fv))
    redis.call('ZADD', K, 0, v.k)
    written[#written + 1] = V(v.k)
    at = at + 1
    out[#out + 1] = ver .. ' ' .. int(rev)
  end
end
for i, l in ipairs(lists) do
  local st = lst[i]
  local action, n, hash
  if l.op == 'a' then
    hash = append_items(l.k, st, ARGV, at, at + l.n - 1, hexes(l.hs))
    n = st.n + l.n
    action = st.exists and 'appended' or 'created'
    set_list(l.k, n, hash)
  elseif l.op == 'r' then
    action, hash = replace_list(l.k, st, ARGV, at, at + l.n - 1, hexes(l.ph))
    n = l.n
  elseif l.tc == st.n then
    action, n, hash = 'unchanged', st.n, st.hash
  else
    hash = truncate_list(l.k, st, l.tc, hexes(l.ah))
    action, n = 'truncated', l.tc
  end
  at = at + l.n
  for _, name in ipairs(list_keys(l.k)) do written[#written + 1] = name end
  out[#out + 1] = action .. ' ' .. int(n) .. ' ' .. hash
end
local res = table.concat(out, '\\n')
redis.call('HSET', C(req.cid), 'dig', req.dig, 'res', res)
redis.call('SADD', CS, req.cid)
local refreshed = touch(written)
release()
return { 'ok', res, created + refreshed, 1 - redis.call('EXISTS', K) }
`;

// ---- reads (scripts too, so that each is one round trip) ---------------------------------------

/** A page of a list: count, hash, offset, base hash, then the items. */
const READ_LIST = `
local function page(key, offset, limit, last)
  local h = redis.call('HMGET', H(key), 'n', 'hash')
  local n = num(h[1], 0)
  local hash = h[2] or EMPTY
  local from, to
  if last ~= nil then
    from = math.max(0, n - last); to = n - 1
  else
    from = math.min(offset or 0, n)
    to = limit == nil and n - 1 or math.min(n - 1, from + limit - 1)
  end
  local base = EMPTY
  if from > 0 then base = 'sha256:' .. redis.call('LINDEX', HL(key), from - 1) end
  local items = {}
  if to >= from then items = redis.call('LRANGE', L(key), from, to) end
  return n, hash, from, base, items
end
`;

const GET_LIST = `${READ_LIST}
local n, hash, from, base, items = page(req.key, req.offset, req.limit, req.last)
local out = { n, hash, from, base }
for _, item in ipairs(items) do out[#out + 1] = item end
return out
`;

/** A list's count, hash, its hash at req.at, and the items from req.from on (what a truncate archives). */
const PEEK_LIST = `
local st = list_state(req.key)
local at = false
if req.at == 0 then at = EMPTY elseif req.at ~= nil and req.at <= st.n then at = 'sha256:' .. redis.call('LINDEX', HL(req.key), req.at - 1) end
local out = { st.n, st.hash, at }
if req.from < st.n then
  for _, item in ipairs(redis.call('LRANGE', L(req.key), req.from, -1)) do out[#out + 1] = item end
end
return out
`;

/** Keys of the session from a bound on (BYLEX: UTF-8 byte order), at most limit + 1. */
const RANGE = `
local function range(prefix, after, limit)
  local from = after and ('(' .. after) or ('[' .. prefix)
  if after and after < prefix then from = '[' .. prefix end
  local to = prefix == '' and '+' or ('(' .. prefix .. '\\255')
  return redis.call('ZRANGE', K, from, to, 'BYLEX', 'LIMIT', 0, limit + 1)
end
`;

/** snapshot: exists, the values, the lists' pages, the value page (after `out`'s first `from` entries). */
const SNAPSHOT_OF = `${READ_LIST}${RANGE}
local function snapshot(out)
out[#out + 1] = redis.call('EXISTS', K)
if out[#out] == 0 then return out end
for _, key in ipairs(req.values) do
  local v = redis.call('HMGET', V(key), 'ver', 'b', 'rev')
  out[#out + 1] = v[1]
  out[#out + 1] = v[2]
  out[#out + 1] = v[3]
end
for _, l in ipairs(req.lists) do
  local n, hash, from, base, items = page(l.key, nil, nil, l.last)
  out[#out + 1] = n; out[#out + 1] = hash; out[#out + 1] = from; out[#out + 1] = base; out[#out + 1] = #items
  for _, item in ipairs(items) do out[#out + 1] = item end
end
if req.page then
  local keys = range(req.page.prefix, req.page.after, req.page.limit)
  out[#out + 1] = #keys
  for _, key in ipairs(keys) do
    local v = redis.call('HMGET', V(key), 'ver', 'b', 'rev')
    out[#out + 1] = key; out[#out + 1] = v[1]; out[#out + 1] = v[2]; out[#out + 1] = v[3]
  end
end
return out
end
`;

const SNAPSHOT = `${SNAPSHOT_OF}
return snapshot({})
`;

/**
 * A turn's beginning: the lease (as the Redis lock's acquire: lib/engines/redis/lock.ts), then the
 * snapshot, in one script. Held by another: 'held', owner, expiry.
 */
const BEGIN_TURN = `${SNAPSHOT_OF}
local l = redis.call('HMGET', LOCK, 'owner', 'token', 'exp')
local owner, token, exp = l[1], num(l[2], 0), num(l[3], 0)
local lease = req.lease
local grant = token
if owner ~= false and exp >= NOW then
  if not (lease.explicit and owner == lease.owner) then return { 'held', owner, int(exp) } end
else
  grant = math.max(token + 1, NOW)
end
redis.call('HSET', LOCK, 'owner', lease.owner, 'token', int(grant), 'exp', int(NOW + lease.ms), 'lease', int(lease.ms))
redis.call('PEXPIRE', LOCK, lease.ms + req.ttl)
return snapshot({ 'ok', int(grant), int(NOW + lease.ms) })
`;

/** listKeys: exists, then per key: key, value version, size, mtime, revision, list count, hash, mtime. */
const LIST_KEYS = `${RANGE}
if redis.call('EXISTS', K) == 0 then return { 0 } end
local out = { 1 }
for _, key in ipairs(range(req.prefix, req.after, req.limit)) do
  local v = redis.call('HMGET', V(key), 'ver', 'mt', 'rev')
  local h = redis.call('HMGET', H(key), 'n', 'hash', 'mt')
  out[#out + 1] = key
  out[#out + 1] = v[1]; out[#out + 1] = redis.call('HSTRLEN', V(key), 'b'); out[#out + 1] = v[2]; out[#out + 1] = v[3]
  out[#out + 1] = h[1]; out[#out + 1] = h[2]; out[#out + 1] = h[3]
end
return out
`;

/** A page of an archive: as GET_LIST, on the archive's keys (nothing when there is none). */
const GET_ARCHIVE = `
local meta
for _, a in ipairs(redis.call('LRANGE', AR(req.key), 0, -1)) do
  local m = cjson.decode(a)
  if tostring(m.archiveId) == req.id then meta = m end
end
if not meta then return { 0 } end
local n = meta.count
-- Offloaded to the blob store (OFFLOAD_ARCHIVE): Node reads and pages it there.
if meta.blob then return { 2, n, meta.hash, meta.blob } end
local from, to
if req.last ~= nil then from = math.max(0, n - req.last); to = n - 1
else from = math.min(req.offset or 0, n); to = req.limit == nil and n - 1 or math.min(n - 1, from + req.limit - 1) end
local base = EMPTY
if from > 0 then base = 'sha256:' .. redis.call('LINDEX', AH(req.id, req.key), from - 1) end
local out = { 1, n, meta.hash, from, base }
if to >= from then
  for _, item in ipairs(redis.call('LRANGE', A(req.id, req.key), from, to)) do out[#out + 1] = item end
end
return out
`;

/**
 * Refers an archive to its copy in the blob store (written first, create-only, content-named) and
 * drops its items from RAM: 1, or 0 when the archive is gone or refers to a blob already.
 */
const OFFLOAD_ARCHIVE = `
local all = redis.call('LRANGE', AR(req.key), 0, -1)
for i, a in ipairs(all) do
  local m = cjson.decode(a)
  if tostring(m.archiveId) == req.id and not m.blob then
    m.blob = req.blob
    redis.call('LSET', AR(req.key), i - 1, cjson.encode(m))
    redis.call('DEL', A(req.id, req.key), AH(req.id, req.key))
    return 1
  end
end
return 0
`;

/** The user's session listing (the user's own slot): a page by session id, expired ones dropped. */
export const LIST_SESSIONS = `
local S, ACT = KEYS[1], KEYS[2]
local req = cjson.decode(ARGV[1])
local t = redis.call('TIME')
local NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local from = req.after and ('(' .. req.after) or '-'
local ids = redis.call('ZRANGE', S, from, '+', 'BYLEX', 'LIMIT', 0, req.limit)
local out = { #ids }
if #ids == 0 then return out end
local scores = redis.call('ZMSCORE', ACT, unpack(ids))
for i, id in ipairs(ids) do
  local at = tonumber(scores[i] or '0')
  if at < NOW - req.ttl then
    redis.call('ZREM', S, id)
    redis.call('ZREM', ACT, id)
  else
    out[#out + 1] = id
    out[#out + 1] = string.format('%d', at)
  end
end
return out
`;

/** Records a session's activity in its user's listing (the user's slot; sent beside a write). */
export const TOUCH_USER = `
redis.call('ZADD', KEYS[1], 0, ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
`;

/** The session scripts, by the command name each is defined as. */
export const SESSION_SCRIPTS = {
  assSave: SAVE,
  assDeleteKey: DELETE_KEY,
  assAppend: APPEND,
  assSaveList: SAVE_LIST,
  assTruncate: TRUNCATE,
  assDeleteList: DELETE_LIST,
  assDeleteSession: DELETE_SESSION,
  assCommit: COMMIT,
  assGetList: GET_LIST,
  assPeekList: PEEK_LIST,
  assSnapshot: SNAPSHOT,
  assBeginTurn: BEGIN_TURN,
  assListKeys: LIST_KEYS,
  assGetArchive: GET_ARCHIVE,
  assOffloadArchive: OFFLOAD_ARCHIVE,
} as const;

/** The full source of a session script. */
export const sessionScript = (body: string): string => `${PRELUDE}\n${body}`;
