-- A webhook delivery queued (webhooks/redis_queue.py push): O(1).
-- KEYS: the lane's list, the ready set (lane -> when due, ms), the leased set (lane -> lease end, ms)
-- ARGV: the lane's name, the item (JSON), now (ms), the lane's ttl (seconds: WEBHOOK_RETRY_FOR
--   and an hour, so an item no sender ever takes does not outlive its retries by long)
-- Returns the lane's length.
local length = redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if not redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  -- NX: a lane waiting out a retry's backoff keeps its due time (its head goes first).
  redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1])
end
return length
