-- A conversation read, and every key of it renewed (stores/redis/conversations.py
-- get_conversation). One round trip: a use of a conversation renews every key of it
-- (tests/test_api_feedback.py), and an HMGET then one EXPIRE per key were seven round trips
-- per authorised request, 9% of a worker's CPU at N=2,000 (bench/load.py redis-2w, py-spy).
-- KEYS: conv, then the conversation's other keys (stores/redis/core.py
--       CONVERSATION_KEY_SUFFIXES)
-- ARGV: ttl, for a record without its own `retention` (stored before it existed)
-- Returns {token_hash, created_at, subject, name, email, consent_sha256, consented_at,
-- retention} (false for each field the record does not have: an anonymous conversation has no
-- owner, one made without a consent step no consent), or nil for an unknown conversation.
local values = redis.call('HMGET', KEYS[1], 'token_hash', 'created_at', 'subject', 'name', 'email',
  'consent_sha256', 'consented_at', 'retention')
if not values[1] then return nil end
local ttl = values[8] or ARGV[1]
for i = 1, #KEYS do redis.call('EXPIRE', KEYS[i], ttl) end
return values
