-- A new question's request-id claim (stores/redis/conversations.py claim_request): its
-- exchange appended to the conversation, its answer's message created `accepted`, and the
-- message's lease taken by the generating process, in one step (so no instant exists at which
-- the new message looks orphaned).
-- KEYS: conv, exchanges, requests, msg, lease
-- ARGV: request_id, exchange_json, fingerprint, ttl, lease_ms, owner
-- Returns {'unknown'} for a conversation that does not exist; for a request id claimed
-- before, {'conflict', its exchange JSON} if its fingerprint differs, else {'existing', its
-- exchange JSON}; else {'created', the new exchange JSON, the conversation's exchanges}.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local existing = redis.call('HGET', KEYS[3], ARGV[1])
if existing then
  local fingerprint = cjson.decode(existing)['fingerprint']
  if fingerprint ~= ARGV[3] then return {'conflict', existing} end
  return {'existing', existing}
end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
local conversation = cjson.decode(ARGV[2])
-- The conversation's retention (create_conversation.lua) goes to its answer's record too, which
-- append.lua renews its keys by; ARGV[4] for a record stored before it existed.
local ttl = redis.call('HGET', KEYS[1], 'retention') or ARGV[4]
redis.call('HSET', KEYS[4], 'conversation_id', conversation['conversation_id'], 'state', 'accepted', 'last_seq', 0,
  'retention', ttl)
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[5])
-- With the conversation's exchanges, the new one last: the backend's history is read from
-- them, without another round trip.
return {'created', ARGV[2], redis.call('LRANGE', KEYS[2], 0, -1)}
