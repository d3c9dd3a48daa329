-- The claimed head of a lane settled (webhooks/redis_queue.py done and retry), only by the
-- lease's holder: a sender whose lease ran out and was taken over changes nothing.
-- KEYS: the lane's list, the ready set, the leased set, the leases hash, the attempts hash
-- ARGV: the lane's name, the holder's token, 'done' or 'retry', when the lane is due next (ms:
--   now for 'done', the backoff's end for 'retry')
-- Returns 1, or 0 when the lease was lost.
local lane = ARGV[1]
if redis.call('HGET', KEYS[4], lane) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[4], lane)
redis.call('ZREM', KEYS[3], lane)
if ARGV[3] == 'done' then
  redis.call('LPOP', KEYS[1])
  redis.call('HDEL', KEYS[5], lane)
  if redis.call('LLEN', KEYS[1]) > 0 then
    redis.call('ZADD', KEYS[2], ARGV[4], lane)
  end
else
  redis.call('HINCRBY', KEYS[5], lane, 1)
  redis.call('ZADD', KEYS[2], ARGV[4], lane)
end
return 1
