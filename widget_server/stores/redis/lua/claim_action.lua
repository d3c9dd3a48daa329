-- An action's execution claimed (stores/redis/actions.py claim_action): one compare-and-set,
-- proposed → executing, recording the idempotency key, so however many confirms race, on
-- however many workers, exactly one runs it.
-- KEYS: action
-- ARGV: idempotency key, ttl
-- Returns the outcome: 'claimed' (this call runs it), 'dismissed', 'same' (claimed before with
-- this key), 'other' (claimed with another key), or nil for an unknown action.
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return nil end
redis.call('EXPIRE', KEYS[1], redis.call('HGET', KEYS[1], 'retention') or ARGV[2])
if status == 'proposed' then
  redis.call('HSET', KEYS[1], 'status', 'executing', 'key', ARGV[1])
  return 'claimed'
end
if status == 'dismissed' then return 'dismissed' end
if redis.call('HGET', KEYS[1], 'key') == ARGV[1] then return 'same' end
return 'other'
