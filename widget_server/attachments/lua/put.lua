-- An attachment stored (attachments/redis_store.py put): checks that the conversation still
-- exists, looks up the idempotency key, checks the byte budget and writes, in one step, so two
-- uploads racing for the last bytes of a budget cannot both pass, on any host.
-- KEYS: conv, meta hash, bytes hash
-- ARGV: attachment_id, meta_json, size, budget, idempotency key ('' for none), then the chunks
-- Returns {'created'} | {'existing', meta_json} | {'budget', used} | {'gone'}.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
if ARGV[5] ~= '' then
  local known = redis.call('HGET', KEYS[2], 'k:' .. ARGV[5])
  if known then
    local meta = redis.call('HGET', KEYS[2], 'm:' .. known)
    if meta then return {'existing', meta} end
  end
end
local used = tonumber(redis.call('HGET', KEYS[2], 'used') or '0')
if used + tonumber(ARGV[3]) > tonumber(ARGV[4]) then return {'budget', tostring(used)} end
for index = 6, #ARGV do redis.call('HSET', KEYS[3], ARGV[1] .. ':' .. (index - 6), ARGV[index]) end
redis.call('HSET', KEYS[2], 'm:' .. ARGV[1], ARGV[2], 'used', used + tonumber(ARGV[3]))
if ARGV[5] ~= '' then redis.call('HSET', KEYS[2], 'k:' .. ARGV[5], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return {'created'}
