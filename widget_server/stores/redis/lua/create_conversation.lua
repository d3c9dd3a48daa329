-- A new conversation's record (stores/redis/conversations.py create_conversation), as a
-- script so that concurrent creations go in batches (stores/script_batches.py): a cluster's
-- pipeline of the HSET and the EXPIRE was redis-py's heaviest per-command path left per
-- question.
-- KEYS: conv
-- ARGV: token_hash, created_at, ttl
-- Returns 1.
redis.call('HSET', KEYS[1], 'token_hash', ARGV[1], 'created_at', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
