-- A conversation added to its subject's list, or its last activity moved later
-- (stores/redis/conversations.py): one key, the subject's own (a slot of its own on a cluster:
-- keyspace.py Keyspace.subject), so the list is changed by this single-key script only.
-- KEYS: the subject's list (a sorted set: conversation id scored by its last activity, unix s)
-- ARGV: conversation id, when (unix seconds), ttl, the most entries kept, mode (`add` for a new
--       conversation; `touch` changes only an entry that is there, so a conversation deleted
--       meanwhile is not listed again)
-- Returns 1 if the list names the conversation now, else 0.
if ARGV[5] == 'touch' then
  local current = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not current then return 0 end
  if tonumber(current) >= tonumber(ARGV[2]) then
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    return 1
  end
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
-- Only the newest entries are ever listed: the oldest beyond the bound go.
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[4]) + 1))
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
