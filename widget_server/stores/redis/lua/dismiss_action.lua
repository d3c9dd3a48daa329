-- An action dismissed (stores/redis/actions.py dismiss_action), unless its execution was
-- claimed first.
-- KEYS: action
-- ARGV: none
-- Returns the outcome: 'dismissed' (now or before), 'confirmed', or nil for an unknown action.
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return nil end
if status == 'proposed' then redis.call('HSET', KEYS[1], 'status', 'dismissed'); status = 'dismissed' end
if status == 'dismissed' then return 'dismissed' end
return 'confirmed'
