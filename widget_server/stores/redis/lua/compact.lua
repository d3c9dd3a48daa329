-- An ended log, compacted (stores/redis/compaction.py): a new stream of its newest (terminal)
-- entry alone, with the same expiry.
-- KEYS: events
-- ARGV: none
-- Returns 1, or 0 for a log that is gone.
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last == 0 then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('XADD', KEYS[1], last[1][1], unpack(last[1][2]))
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
