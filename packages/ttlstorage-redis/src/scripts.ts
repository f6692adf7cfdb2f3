// The Lua scripts of the driver: every operation is one script, run atomically by the server.
//
// Layout under the storage's key prefix P (binary-safe keys; pKey is at most 1024 bytes):
// - P "p" u16be(len pKey) pKey           a sorted set per partition key: its cCols, all scored 0,
//                                         so ZRANGEBYLEX walks them in byte order;
// - <that key> "|" cCols                  a hash per record: v (value), x (expiry, ms since the
//                                         Unix epoch by the server's clock; 0 = never), and for a
//                                         fenced write h, l (its epoch, high and low 32 bits) and
//                                         s (its stamp, F2);
// - P "f" scope                           a hash per fence scope: h, l (the raised epoch);
// - P "x"                                 the expiry index: a sorted set of the record keys that
//                                         have a TTL, scored by expiry (what the sweep walks).
// The length before pKey makes every record key differ from every partition key.
import { createHash } from "node:crypto";

/** A script: its text and the SHA-1 the server knows it by. @internal */
export interface Script {
	readonly name: string;
	readonly text: string;
	readonly sha: string;
}

function script(name: string, flags: string, body: string): Script {
	const text = `#!lua${flags === "" ? "" : ` flags=${flags}`}\n${NOW}\n${body.trim()}\n`;
	return { name, text, sha: createHash("sha1").update(text).digest("hex") };
}

// The now of every expiry comparison, in ms, once per script: ARGV[1] when the storage runs on a
// test clock, else the server's clock (TIME; Redis 7 replicates a script's effects, not the
// script, so a script may read the time and then write).
const NOW = `local function clock(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local now = clock(ARGV[1])
local function digits(n) return string.format('%.0f', n) end`;

/** KEYS: record. ARGV: now. The live value, or nil. */
export const GET: Script = script(
	"get",
	"no-writes",
	`
local r = redis.call('HMGET', KEYS[1], 'v', 'x')
if not r[1] then return false end
local x = tonumber(r[2])
if x ~= 0 and now >= x then return false end
return r[1]`,
);

/** KEYS: record. ARGV: now. Remaining whole seconds rounded up, 0 (no TTL), or nil. */
export const QUERY_TTL: Script = script(
	"ttl",
	"no-writes",
	`
local r = redis.call('HMGET', KEYS[1], 'v', 'x')
if not r[1] then return false end
local x = tonumber(r[2])
if x == 0 then return 0 end
if now >= x then return false end
return math.ceil((x - now) / 1000)`,
);

/**
 * KEYS: the partition's sorted set. ARGV: now, min, max (ZRANGEBYLEX bounds), limit.
 * `{scanned, last scanned cCols, {cCols, value, ...live records}}`.
 */
export const READ: Script = script(
	"read",
	"no-writes",
	`
local ms = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, tonumber(ARGV[4]))
local out = {}
for _, m in ipairs(ms) do
  local r = redis.call('HMGET', KEYS[1] .. '|' .. m, 'v', 'x')
  if r[1] then
    local x = tonumber(r[2])
    if x == 0 or now < x then
      out[#out + 1] = m
      out[#out + 1] = r[1]
    end
  end
end
return {#ms, ms[#ms] or '', out}`,
);

/** Arguments per item of {@link WRITE}. */
const WRITE_ITEM_ARGS = 9;

/**
 * Every write: one item (insertIfNotExists, compareAndSwap, compareAndDelete, put) or a batch
 * (putBatch, putBatchIf), all or nothing.
 *
 * KEYS: the expiry index, the m fence keys, then per item its partition's sorted set and record.
 * ARGV: now, m, n, then per item: op (P put, I insert if absent, C swap if equal, D delete if
 * equal), cCols, value, ttl ms, fence index (1..m, 0 = unfenced), epoch high, epoch low, stamp,
 * expected value.
 *
 * `{-1, h, l}`: a fence superseded (the stored epoch), nothing written; `{0}`: a condition
 * failed, nothing written; `{1}`: written.
 *
 * Nothing is written before every check passed: the fences, then the conditions (against the
 * records as they were before the call), and the types of every key it will write (a key of
 * another type fails the script there, before any write). Then the writes, in item order.
 */
export const WRITE: Script = script(
	"write",
	"",
	`
local m = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local xkey = KEYS[1]
local items = {}
for i = 1, n do
  local b = 4 + (i - 1) * ${WRITE_ITEM_ARGS}
  items[i] = {
    op = ARGV[b], c = ARGV[b + 1], v = ARGV[b + 2], ttl = tonumber(ARGV[b + 3]),
    f = tonumber(ARGV[b + 4]), h = ARGV[b + 5], l = ARGV[b + 6], s = ARGV[b + 7], e = ARGV[b + 8],
    z = KEYS[1 + m + 2 * i - 1], k = KEYS[1 + m + 2 * i],
  }
end
for _, it in ipairs(items) do
  if it.f > 0 then
    local cur = redis.call('HMGET', KEYS[1 + it.f], 'h', 'l')
    local ch, cl = tonumber(cur[1] or '0'), tonumber(cur[2] or '0')
    local h, l = tonumber(it.h), tonumber(it.l)
    if ch > h or (ch == h and cl > l) then return {-1, cur[1] or '0', cur[2] or '0'} end
  end
end
local function state(it)
  local r = redis.call('HMGET', it.k, 'v', 'x', 'h', 'l', 's')
  local x = tonumber(r[2] or '0')
  local live = r[1] ~= false and (x == 0 or now < x)
  local older = false
  if it.f > 0 and live and r[3] then
    local sh, sl, ss = tonumber(r[3]), tonumber(r[4]), tonumber(r[5])
    local h, l, s = tonumber(it.h), tonumber(it.l), tonumber(it.s)
    older = sh > h or (sh == h and (sl > l or (sl == l and ss > s)))
  end
  return live, r[1], older
end
redis.call('ZSCORE', xkey, '')
for _, it in ipairs(items) do
  redis.call('ZSCORE', it.z, it.c)
  local live, v, older = state(it)
  if it.op == 'I' then
    if live then return {0} end
  elseif it.op == 'C' or it.op == 'D' then
    if not live or v ~= it.e or older then return {0} end
  end
end
for _, it in ipairs(items) do
  if it.op == 'D' then
    redis.call('DEL', it.k)
    redis.call('ZREM', it.z, it.c)
    redis.call('ZREM', xkey, it.k)
  else
    local skip = false
    if it.op == 'P' and it.f > 0 then
      local _, _, older = state(it)
      skip = older
    end
    if not skip then
      local x = 0
      if it.ttl > 0 then x = now + it.ttl end
      redis.call('DEL', it.k)
      if it.f > 0 then
        redis.call('HSET', it.k, 'v', it.v, 'x', digits(x), 'h', it.h, 'l', it.l, 's', it.s)
      else
        redis.call('HSET', it.k, 'v', it.v, 'x', digits(x))
      end
      redis.call('ZADD', it.z, 0, it.c)
      if x > 0 then redis.call('ZADD', xkey, x, it.k) else redis.call('ZREM', xkey, it.k) end
    end
  end
end
return {1}`,
);

/**
 * KEYS: the fence. ARGV: now, epoch high, epoch low ('' and '': one above the stored epoch).
 * `{1, h, l}`: raised to that epoch; `{-1, h, l}`: a higher epoch is stored; `{-2, h, l}`: the
 * stored epoch is the largest there is.
 */
export const RAISE: Script = script(
	"raise",
	"",
	`
local cur = redis.call('HMGET', KEYS[1], 'h', 'l')
local ch, cl = tonumber(cur[1] or '0'), tonumber(cur[2] or '0')
if ARGV[2] == '' then
  local h, l = ch, cl + 1
  if l == 4294967296 then h, l = h + 1, 0 end
  if h >= 2147483648 then return {-2, cur[1] or '0', cur[2] or '0'} end
  redis.call('HSET', KEYS[1], 'h', digits(h), 'l', digits(l))
  return {1, digits(h), digits(l)}
end
local h, l = tonumber(ARGV[2]), tonumber(ARGV[3])
if ch > h or (ch == h and cl > l) then return {-1, cur[1] or '0', cur[2] or '0'} end
redis.call('HSET', KEYS[1], 'h', ARGV[2], 'l', ARGV[3])
return {1, ARGV[2], ARGV[3]}`,
);

/**
 * KEYS: the expiry index. ARGV: now, limit, length of the key prefix in bytes. Deletes up to
 * `limit` records expired now (re-checked on the record itself), with their sorted-set members.
 * `{scanned, deleted}`.
 */
export const SWEEP: Script = script(
	"sweep",
	"",
	`
local L = tonumber(ARGV[3])
local ks = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', digits(now), 'LIMIT', 0, tonumber(ARGV[2]))
local deleted = 0
for _, k in ipairs(ks) do
  local x = tonumber(redis.call('HGET', k, 'x') or '0')
  if x ~= 0 and now < x then
    redis.call('ZADD', KEYS[1], x, k)
  elseif x == 0 and redis.call('EXISTS', k) == 1 then
    redis.call('ZREM', KEYS[1], k)
  else
    local len = string.byte(k, L + 2) * 256 + string.byte(k, L + 3)
    redis.call('DEL', k)
    redis.call('ZREM', string.sub(k, 1, L + 3 + len), string.sub(k, L + 5 + len))
    redis.call('ZREM', KEYS[1], k)
    deleted = deleted + 1
  end
end
return {#ks, deleted}`,
);
