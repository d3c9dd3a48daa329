-- A hand-off transaction committed (handoff/redis_store.py): the compare-and-set of every
-- hand-off transition. It compares the version of every record the transaction read and,
-- only if none changed, writes the records, appends the events and changes the inbox's index.
-- KEYS: the records read (as many as ARGV[3]'s records), then one events key per log, then
--   the inbox's index, unreplied and meta keys
-- ARGV: ttl seconds (the inbox's keys'), the logs' bound (MAXLEN), the change as JSON:
--   {"records": [[expected version, "keep"|"set"|"del", value JSON, ttl seconds]],
--    "logs": [["add", [[seq, event JSON], …], ttl seconds] | ["del", [], 0]],
--   (each record's and log's ttl is its conversation's retention: redis_store.py),
--    "inbox": [[left message ids removed], [[id, score], …] added, [ids replied to]]},
--   PUBLISH or SPUBLISH (each new log entry is published as `<seq> <event JSON>`: redis_tail.py),
--   the inbox's bound, the score below which its entries have expired
-- Returns 0 (a record changed since it was read: nothing applied), or {1, ids the inbox let
-- go}: their records are deleted by the caller (a script names the keys it writes in KEYS).
local change = cjson.decode(ARGV[3])
local records = change['records']
for i, record in ipairs(records) do
  local version = tonumber(redis.call('HGET', KEYS[i], 'v') or '0')
  if version ~= record[1] then return 0 end
end
for i, record in ipairs(records) do
  if record[2] == 'set' then
    redis.call('HSET', KEYS[i], 'v', record[1] + 1, 'd', record[3])
    redis.call('EXPIRE', KEYS[i], record[4])
  elseif record[2] == 'del' then
    redis.call('DEL', KEYS[i])
  end
end
for j, log in ipairs(change['logs']) do
  local key = KEYS[#records + j]
  if log[1] == 'del' then
    redis.call('DEL', key)
  else
    for _, event in ipairs(log[2]) do
      redis.call('XADD', key, 'MAXLEN', ARGV[2], event[1] .. '-1', 'e', event[2])
      redis.call(ARGV[4], key, event[1] .. ' ' .. event[2])  -- heard by readers (stores/redis_tail.py)
    end
    redis.call('EXPIRE', key, log[3])
  end
end
local inbox = change['inbox']
local index, unreplied, meta = KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS]
for _, id in ipairs(inbox[1]) do
  redis.call('ZREM', index, id)
  redis.call('ZREM', unreplied, id)
end
local gone = {}
if #inbox[2] > 0 then
  for _, entry in ipairs(inbox[2]) do
    redis.call('ZADD', index, entry[2], entry[1])
    redis.call('ZADD', unreplied, entry[2], entry[1])
  end
  gone = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. ARGV[6])
  local over = redis.call('ZCARD', index) - #gone - tonumber(ARGV[5])
  if over > 0 then
    for _, id in ipairs(redis.call('ZRANGE', index, #gone, #gone + over - 1)) do gone[#gone + 1] = id end
  end
  for _, id in ipairs(gone) do
    redis.call('ZREM', index, id)
    redis.call('ZREM', unreplied, id)
  end
  if #gone > 0 then redis.call('HINCRBY', meta, 'expired', #gone) end
  for _, key in ipairs({index, unreplied, meta}) do redis.call('EXPIRE', key, ARGV[1]) end
end
for _, id in ipairs(inbox[3]) do redis.call('ZREM', unreplied, id) end
local applied = {1}
for _, id in ipairs(gone) do applied[#applied + 1] = id end
return applied
