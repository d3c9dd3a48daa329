-- A new conversation's record (stores/redis/conversations.py create_conversation), as a
-- script so that concurrent creations go in batches (stores/script_batches.py): a cluster's
-- pipeline of the HSET and the EXPIRE was redis-py's heaviest per-command path left per
-- question.
-- KEYS: conv
-- ARGV: token_hash, created_at, ttl (the conversation's retention, kept in its record as
--       `retention`: every later renewal of its keys reads it there; docs/privacy.md), then
--       optional field/value pairs kept with the record: an identified visitor's subject, name
--       and email (widget_server/identity/), the visitor's consent (consent_sha256,
--       consented_at)
-- Returns 1.
redis.call('HSET', KEYS[1], 'token_hash', ARGV[1], 'created_at', ARGV[2], 'retention', ARGV[3])
for i = 4, #ARGV - 1, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
