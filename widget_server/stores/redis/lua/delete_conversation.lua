-- A conversation deleted (stores/redis/feedback.py delete_conversation), every key of it at
-- once: its messages are every exchange it ever claimed (the requests hash holds them all, a
-- replaced answer's too); their keys are named here, from those lists, because nobody can
-- know them before reading the lists, and reading and deleting in one script is what makes
-- the delete happen at once.
-- KEYS: conv, the set of ended logs waiting to be compacted
-- ARGV: the key prefix, the conversation's key suffixes and each message's (space-separated:
--       stores/redis/core.py CONVERSATION_KEY_SUFFIXES, MESSAGE_KEY_SUFFIXES)
-- Returns {1, subject} (subject "" for an anonymous conversation: its owner's list is
-- another slot's key, which the caller changes after), or 0 for a conversation that does not exist.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local conv = KEYS[1]
local subject = redis.call('HGET', conv, 'subject') or ''
local messages = {}
for _, raw in ipairs(redis.call('LRANGE', conv .. ':exchanges', 0, -1)) do
  messages[cjson.decode(raw)['assistant_message_id']] = true
end
for _, raw in ipairs(redis.call('HVALS', conv .. ':requests')) do
  messages[cjson.decode(raw)['assistant_message_id']] = true
end
for message_id, _ in pairs(messages) do
  local msg = ARGV[1] .. 'msg:' .. message_id
  for _, raw in ipairs(redis.call('LRANGE', msg .. ':actions', 0, -1)) do
    redis.call('DEL', ARGV[1] .. 'action:' .. cjson.decode(raw)['action_id'])
  end
  for suffix in string.gmatch(ARGV[3], '%S+') do redis.call('DEL', msg .. suffix) end
  redis.call('DEL', msg)
  redis.call('ZREM', KEYS[2], message_id)
end
for suffix in string.gmatch(ARGV[2], '%S+') do redis.call('DEL', conv .. suffix) end
redis.call('DEL', conv)
return {1, subject}
