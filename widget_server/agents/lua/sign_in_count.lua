-- One sign-in attempt counted, or refused while an earlier failure's wait runs
-- (agents/sign_in_delay.py RedisSignInDelays). A count is forgotten by the server's clock as
-- in the process (`last`), and by Redis's own expiry.
-- KEYS: the client's count, then the name's (or the device's): hashes {attempts, until, last}.
-- ARGV: now, FREE_ATTEMPTS, the first delay, each key's cap, FORGET_AFTER: all times in ms.
-- Returns {the longest wait still running (0: none), then each key's attempts if counted}.
local now = tonumber(ARGV[1])
local forget = tonumber(ARGV[4 + #KEYS])
local wait = 0
for _, key in ipairs(KEYS) do
  local found = redis.call('HMGET', key, 'until', 'last')
  if found[2] and tonumber(found[2]) + forget <= now then
    redis.call('DEL', key)
  elseif found[1] and tonumber(found[1]) - now > wait then
    wait = tonumber(found[1]) - now
  end
end
if wait > 0 then return {wait} end
local free, first = tonumber(ARGV[2]), tonumber(ARGV[3])
local counted = {0}
for i, key in ipairs(KEYS) do
  local attempts = redis.call('HINCRBY', key, 'attempts', 1)
  local delay = 0
  if attempts >= free then
    delay = math.min(tonumber(ARGV[3 + i]), first * 2 ^ math.min(attempts - free, 64))
  end
  redis.call('HSET', key, 'until', string.format('%d', now + delay), 'last', string.format('%d', now))
  redis.call('PEXPIRE', key, forget)
  counted[i + 1] = attempts
end
return counted
