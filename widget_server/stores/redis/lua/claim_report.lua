-- A client's report of a message, counted once per message (stores/redis/reading.py
-- claim_report).
-- KEYS: msg
-- ARGV: none
-- Returns 1 for the message's first report, else 0 (the field lives and expires with the
-- message).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'reported', 1)
