-- A sender claims the lane due first (webhooks/redis_queue.py claim). Lanes whose lease ran out
-- (their sender died or stalled) are due again first: at least once, never lost.
-- KEYS: the ready set (lane -> when due, ms), the leased set (lane -> lease end, ms),
--   the leases hash (lane -> holder's token), the attempts hash (lane -> attempts of its head)
-- ARGV: now (ms), the lease's length (ms), the claiming sender's token
-- Returns nil (nothing due), or {lane, attempts of its head}; the caller reads the head itself
-- (LINDEX), since a script names the keys it touches in KEYS.
local now = tonumber(ARGV[1])
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 32)
for _, lane in ipairs(lapsed) do
  redis.call('ZREM', KEYS[2], lane)
  redis.call('HDEL', KEYS[3], lane)
  redis.call('ZADD', KEYS[1], now, lane)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1)
if #due == 0 then return nil end
local lane = due[1]
redis.call('ZREM', KEYS[1], lane)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), lane)
redis.call('HSET', KEYS[3], lane, ARGV[3])
return {lane, tonumber(redis.call('HGET', KEYS[4], lane) or '0')}
