-- A new conversation's record (stores/redis/conversations.py create_conversation), as a
-- script so that concurrent creations go in batches (stores/script_batches.py): a cluster's
-- pipeline of the HSET and the EXPIRE was redis-py's heaviest per-command path left per
-- question.
-- KEYS: conv
-- ARGV: token_hash, created_at, ttl (the conversation's retention, kept in its record as
--       `retention`: every later renewal of its keys reads it there; docs/privacy.md), and for
--       an identified visitor (widget_server/identity/) subject, name, email (absent for an
--       anonymous one)
-- Returns 1.
redis.call('HSET', KEYS[1], 'token_hash', ARGV[1], 'created_at', ARGV[2], 'retention', ARGV[3])
if ARGV[4] and ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'subject', ARGV[4], 'name', ARGV[5], 'email', ARGV[6])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
