-- A message's record and its text so far, in one round trip (stores/redis/reading.py message).
-- KEYS: msg, text
-- ARGV: none
-- Returns {state, last_seq, text, conversation_id, error JSON ('' for none), sources JSON
-- ('' for none)}, or nil for an unknown message.
local values = redis.call('HMGET', KEYS[1], 'state', 'last_seq', 'conversation_id', 'error', 'sources')
if not values[1] then return nil end
return {values[1], values[2], redis.call('GET', KEYS[2]) or '', values[3], values[4] or '', values[5] or ''}
