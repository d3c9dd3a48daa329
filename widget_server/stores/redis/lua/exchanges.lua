-- A conversation's exchanges (stores/redis/conversations.py exchanges): an LRANGE as a
-- script, so concurrent reads go in batches (stores/script_batches.py).
-- KEYS: exchanges
-- ARGV: none
-- Returns the conversation's exchanges (JSON), in order.
return redis.call('LRANGE', KEYS[1], 0, -1)
