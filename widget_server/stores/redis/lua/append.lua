-- One event appended to a message's log with its state transition (stores/redis/event_log.py):
-- terminal states are compare-and-set, so the first ending wins, whichever process sends it.
-- KEYS: msg, text, events, actions (the message's proposals, spliced into `complete`), lease,
--       the set of ended logs waiting to be compacted
-- ARGV: op (start|text|progress|complete|fail|cancel|lost), payload_json, text (op text: the
--       delta; op complete: the sources' JSON array, '' for none, spliced into the event as it
--       is and kept in the message's record), maxlen, ttl, message_id, when to compact an ended
--       log (unix ms; 0: now), PUBLISH or SPUBLISH (stores/redis_tail.py publish_command)
-- Returns the event JSON, or nil when the transition is refused. `lost` is a
-- `fail` allowed only once the lease has expired. An ending compacts the log to
-- its terminal entry at once (XADD MAXLEN 1), or records when to (compact_due).
-- The new entry is published on the log's channel as `<seq> <event JSON>` (redis_tail.py).
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return nil end
local op = ARGV[1]
local allowed
if op == 'start' then allowed = (state == 'accepted')
elseif op == 'text' or op == 'complete' or op == 'progress' then allowed = (state == 'running')
else allowed = (state == 'accepted' or state == 'running') end
if op == 'lost' then allowed = allowed and redis.call('EXISTS', KEYS[5]) == 0 end
if not allowed then return nil end
local seq = redis.call('HINCRBY', KEYS[1], 'last_seq', 1)
local encoded
if op == 'start' or op == 'text' or op == 'progress' then
  -- The payload's fields as they are, with seq and message_id spliced in: no cjson decode
  -- and encode per delta (ids are URL-safe characters only: protocol.py new_id).
  encoded = string.sub(ARGV[2], 1, -2) .. ',"seq":' .. seq .. ',"message_id":"' .. ARGV[6] .. '"}'
  if op == 'start' then redis.call('HSET', KEYS[1], 'state', 'running')
  elseif op == 'text' and redis.call('APPEND', KEYS[2], ARGV[3]) == #ARGV[3] then
    -- the first delta made the text: it expires too, with the answer's retention (claim.lua)
    redis.call('EXPIRE', KEYS[2], redis.call('HGET', KEYS[1], 'retention') or ARGV[5])
  end
else
  local event = cjson.decode(ARGV[2])
  event['seq'] = seq
  event['message_id'] = ARGV[6]
  if op == 'complete' then redis.call('HSET', KEYS[1], 'state', 'completed')
  else
    -- length in code points: count the bytes that do not continue a UTF-8 sequence
    local text = redis.call('GET', KEYS[2]) or ''
    event['length'] = select(2, string.gsub(text, '[^\128-\191]', ''))
    if op == 'fail' or op == 'lost' then
      redis.call('HSET', KEYS[1], 'state', 'failed', 'error', cjson.encode(event['error']))
    else
      redis.call('HSET', KEYS[1], 'state', 'cancelled')
    end
  end
  encoded = cjson.encode(event)
  if op == 'complete' and KEYS[4] then
    -- the proposals, as stored (raw JSON, not re-encoded by cjson)
    local actions = redis.call('LRANGE', KEYS[4], 0, -1)
    if #actions > 0 then
      encoded = string.sub(encoded, 1, -2) .. ',"actions":[' .. table.concat(actions, ',') .. ']}'
    end
  end
  if op == 'complete' and ARGV[3] ~= '' then
    encoded = string.sub(encoded, 1, -2) .. ',"sources":' .. ARGV[3] .. '}'
    redis.call('HSET', KEYS[1], 'sources', ARGV[3])
  end
end
local ending = op ~= 'start' and op ~= 'text' and op ~= 'progress'
if ending then
  -- the text stops growing: rewrite it, so it holds no room APPEND reserved
  local text = redis.call('GET', KEYS[2])
  if text then redis.call('SET', KEYS[2], text) end
  -- compacted now: a new stream of the terminal entry alone (a trimmed one keeps its node's room)
  if ARGV[7] == '0' then redis.call('DEL', KEYS[3]) end
end
redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[4], seq .. '-1', 'e', encoded)
redis.call(ARGV[8], KEYS[3], seq .. ' ' .. encoded)
-- Every key expires a TTL after its last use (the actions list too, if any; never the lease).
-- A delta renews them only once a minute: four EXPIREs per delta were most of its commands.
-- ARGV[5] is the shorter of the two retentions, so a delta of an answer kept longer renews
-- nothing (its start did); the renewal reads the answer's own retention (claim.lua).
if op ~= 'text' or redis.call('TTL', KEYS[1]) < ARGV[5] - 60 then
  local ttl = redis.call('HGET', KEYS[1], 'retention') or ARGV[5]
  for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ttl) end
end
if ending then
  redis.call('DEL', KEYS[5])  -- ended: nobody owns it
  if ARGV[7] ~= '0' then redis.call('ZADD', KEYS[6], ARGV[7], ARGV[6]) end
end
return encoded
