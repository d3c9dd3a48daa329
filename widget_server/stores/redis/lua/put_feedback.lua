-- Feedback on an answer, one record per message (stores/redis/feedback.py put_feedback).
-- Never creates feedback for a conversation that is gone.
-- KEYS: conv, feedback
-- ARGV: message_id, record_json, ttl
-- Returns {'unknown'} | {'created'} | {'replaced', the previous record's JSON}.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local previous = redis.call('HGET', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], redis.call('HGET', KEYS[1], 'retention') or ARGV[3])  -- the conversation's
if previous then return {'replaced', previous} end
return {'created'}
