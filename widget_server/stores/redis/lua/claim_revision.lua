-- A regenerate or edit (widget_server/revisions.py; stores/redis/revisions.py claim_revision):
-- the request-id claim of claim.lua, then stores/base.py revision_refusal in the same script
-- (the target is the newest exchange whose ARGV[7] field is ARGV[8]; it may be replaced only
-- if no later exchange's answer is listed, i.e. neither failed, cancelled nor gone, and once
-- its own answer has ended), then the new exchange (ARGV[2]; a regenerate copies the target's
-- user message id and text).
-- It reads the states of the conversation's answers (msg:{mid}, built from ARGV[9]) without
-- declaring them in KEYS, which one Redis server allows; like append.lua, whose keys already
-- span hash slots (the global compaction set), it is not for a Redis Cluster.
-- KEYS: conv, exchanges, requests, msg, lease
-- ARGV: request_id, exchange_json, fingerprint, ttl, lease_ms, owner, target field
--       ('assistant_message_id' | 'user_message_id'), target id, message key prefix
-- Returns {'unknown'}, {'conflict', exchange JSON} or {'existing', exchange JSON} as claim.lua
-- does, {'refused', 'not_found' | 'not_last' | 'not_finished'}, or {'created', the new
-- exchange JSON}.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local existing = redis.call('HGET', KEYS[3], ARGV[1])
if existing then
  local fingerprint = cjson.decode(existing)['fingerprint']
  if fingerprint ~= ARGV[3] then return {'conflict', existing} end
  return {'existing', existing}
end
local exchanges = redis.call('LRANGE', KEYS[2], 0, -1)
local target, index
for i = #exchanges, 1, -1 do
  local exchange = cjson.decode(exchanges[i])
  if exchange[ARGV[7]] == ARGV[8] then target = exchange; index = i; break end
end
if not target then return {'refused', 'not_found'} end
local function state(exchange) return redis.call('HGET', ARGV[9] .. exchange['assistant_message_id'], 'state') end
local target_state = state(target)
if not target_state then return {'refused', 'not_found'} end
for i = index + 1, #exchanges do
  local later = state(cjson.decode(exchanges[i]))
  if later and later ~= 'failed' and later ~= 'cancelled' then return {'refused', 'not_last'} end
end
if target_state ~= 'completed' and target_state ~= 'failed' and target_state ~= 'cancelled' then
  return {'refused', 'not_finished'}
end
local new = cjson.decode(ARGV[2])
if ARGV[7] == 'assistant_message_id' then
  new['user_message_id'] = target['user_message_id']
  new['user_text'] = target['user_text']
end
new['attachments'] = target['attachments']  -- an edit keeps the turn's files (Revision.replacing)
new['context'] = target['context']  -- and the host page's context
new['replaces'] = target['assistant_message_id']
local encoded = cjson.encode(new)
redis.call('RPUSH', KEYS[2], encoded)
redis.call('HSET', KEYS[3], ARGV[1], encoded)
-- The conversation's retention (create_conversation.lua) goes to its answer's record too, which
-- append.lua renews its keys by; ARGV[4] for a record stored before it existed.
local ttl = redis.call('HGET', KEYS[1], 'retention') or ARGV[4]
redis.call('HSET', KEYS[4], 'conversation_id', new['conversation_id'], 'state', 'accepted', 'last_seq', 0,
  'retention', ttl)
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
redis.call('SET', KEYS[5], ARGV[6], 'PX', ARGV[5])
return {'created', encoded}
