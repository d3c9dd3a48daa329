-- A generating process renews its answer's lease (stores/redis/leases.py keep_runs). The lease
-- is renewed only while the message is accepted or running: a renewal must never bring back
-- the lease of an answer that ended, or of one whose conversation was deleted meanwhile (no
-- key of it may remain).
-- KEYS: msg, lease
-- ARGV: owner, lease_ms
-- Returns the message's state (nil for a message that is gone).
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'accepted' or state == 'running' then redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2]) end
return state
