-- An action proposed by the answer (stores/redis/actions.py add_action): appends
-- `action.proposed` (the proposal's fields spliced in as they are) to the message's log and
-- stores the action, only while the message is running.
-- KEYS: msg, events, actions list, action
-- ARGV: proposal_json (an object), maxlen, ttl, message_id, conversation_id, name, PUBLISH or
--       SPUBLISH
-- Returns the event JSON, or nil when the message is not running.
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return nil end
local seq = redis.call('HINCRBY', KEYS[1], 'last_seq', 1)
local encoded = '{"kind":"action.proposed","message_id":"' .. ARGV[4] .. '","seq":' .. seq .. ',' .. string.sub(ARGV[1], 2)
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], seq .. '-1', 'e', encoded)
redis.call(ARGV[7], KEYS[2], seq .. ' ' .. encoded)
redis.call('RPUSH', KEYS[3], ARGV[1])
-- The answer's retention (claim.lua) is the action's too, kept in its record for its later
-- writes (claim_action.lua, finish_action.lua).
local ttl = redis.call('HGET', KEYS[1], 'retention') or ARGV[3]
redis.call('HSET', KEYS[4], 'conversation_id', ARGV[5], 'message_id', ARGV[4], 'name', ARGV[6],
  'proposal', ARGV[1], 'status', 'proposed', 'key', '', 'retention', ttl)
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
return encoded
