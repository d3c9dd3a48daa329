-- An action's execution ended (stores/redis/actions.py finish_action), written only by the
-- claim that runs it.
-- KEYS: action
-- ARGV: idempotency key, status, result_json, error_json, ttl
-- Returns 1, or 0 (nothing written) if the action is not executing under that key.
if redis.call('HGET', KEYS[1], 'status') ~= 'executing' or redis.call('HGET', KEYS[1], 'key') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'result', ARGV[3], 'error', ARGV[4])
redis.call('EXPIRE', KEYS[1], redis.call('HGET', KEYS[1], 'retention') or ARGV[5])
return 1
