-- A page of the left messages' inbox (handoff/redis_store.py), the expired entries let go
-- first.
-- KEYS: the inbox's index, unreplied and meta keys
-- ARGV: the score below which entries have expired, the exclusive upper bound of the page's
--       scores (`(<score>` or `+inf`), its size
-- Returns {the page as [id, score, …] newest first, unreplied count, expired count, ids let
-- go now}.
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
if #gone > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[1])
  redis.call('HINCRBY', KEYS[3], 'expired', #gone)
end
local page = {}
if tonumber(ARGV[3]) > 0 then
  page = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[2], '-inf', 'WITHSCORES', 'LIMIT', 0, ARGV[3])
end
return {page, redis.call('ZCARD', KEYS[2]), tonumber(redis.call('HGET', KEYS[3], 'expired') or '0'), gone}
