-- An attachment deleted (attachments/redis_store.py delete): its meta, its idempotency key,
-- its bytes, and its share of the conversation's budget.
-- KEYS: meta hash, bytes hash
-- ARGV: attachment_id, CHUNK_BYTES
-- Returns 1, or 0 if unknown.
local raw = redis.call('HGET', KEYS[1], 'm:' .. ARGV[1])
if not raw then return 0 end
local meta = cjson.decode(raw)
redis.call('HDEL', KEYS[1], 'm:' .. ARGV[1])
if meta['idempotency_key'] ~= '' then redis.call('HDEL', KEYS[1], 'k:' .. meta['idempotency_key']) end
redis.call('HINCRBY', KEYS[1], 'used', -meta['size'])
for index = 0, math.ceil(meta['size'] / tonumber(ARGV[2])) - 1 do
  redis.call('HDEL', KEYS[2], ARGV[1] .. ':' .. index)
end
return 1
