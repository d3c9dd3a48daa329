-- Hand-off records read (handoff/redis_store.py). One script, sent in batches
-- (stores/script_batches.py): every new question reads its conversation's record (is a
-- person answering?), and as a cluster pipeline of HMGETs that was 4% of a worker's CPU while
-- 2,000 questions arrived at once (bench/load.py, py-spy).
-- KEYS: records
-- ARGV: none
-- Returns, for each record, {version, record JSON} (nil, nil for a record not there).
local found = {}
for i, key in ipairs(KEYS) do found[i] = redis.call('HMGET', key, 'v', 'd') end
return found
