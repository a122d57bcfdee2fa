-- closures, varargs, recursion, goto, integer/float semantics
local function counter()
  local n = 0
  return function(step) n = n + (step or 1); return n end, function() return n end
end
local inc, get = counter()
inc(); inc(5); inc()
print(get())
local fns = {}
for i = 1, 5 do fns[i] = function() return i * 10 end end
local out = {}
for i = 1, 5 do out[i] = fns[i]() end
print(table.concat(out, " "))
-- shared upvalues
local function pair()
  local v = 0
  return function() v = v + 1 return v end, function() v = v * 10 return v end
end
local p1, p2 = pair()
print(p1(), p2(), p1(), p2())
-- varargs
local function va(...)
  local n = select("#", ...)
  local t = { ... }
  return n, #t, (select(2, ...)), select(-1, ...)
end
print(va(1, nil, 3))
print(va("a"))
local function sum(...)
  local s = 0
  for _, v in ipairs({ ... }) do s = s + v end
  return s
end
print(sum(1, 2, 3, 4, 5), sum())
-- recursion and tail calls
local function fact(n) if n <= 1 then return 1 end return n * fact(n - 1) end
local function loop(n, acc) if n == 0 then return acc end return loop(n - 1, acc + n) end
print(fact(20), loop(100000, 0))
local function ack(m, n)
  if m == 0 then return n + 1 end
  if n == 0 then return ack(m - 1, 1) end
  return ack(m - 1, ack(m, n - 1))
end
print(ack(2, 3), ack(3, 3))
-- memoize with closures
local function memo(f)
  local cache = {}
  return function(n)
    local v = cache[n]
    if v == nil then v = f(n); cache[n] = v end
    return v
  end
end
local fib
fib = memo(function(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end)
print(fib(80))
-- goto
local i = 1
::top::
if i <= 3 then io.write("g", i, " "); i = i + 1; goto top end
print()
for j = 1, 3 do
  for k = 1, 3 do
    if k == 2 then goto continue end
    io.write(j, k, " ")
    ::continue::
  end
end
print()
-- integers and floats
print(7 // 2, 7.0 // 2, -7 // 2, 7 % -3, -7 % 3, 7.5 % 2, 2^53, 1 / 0, -1 / 0, math.huge)
print(math.maxinteger, math.mininteger, math.maxinteger + 1 == math.mininteger, 3 | 5, 3 & 5, 3 ~ 5, ~0, 1 << 62, 256 >> 4)
print(1 == 1.0, math.type(1), math.type(1.0), math.type("1"), 10 / 2, 3 * 1.0, "10" + 5, "3" * "4")
print(string.format("%.14g", 0.1 + 0.2), 100000000000000, 1e15, 2^24, -0.0 == 0.0)
-- numeric for with float step
local acc = {}
for x = 1, 2, 0.25 do acc[#acc + 1] = x end
print(table.concat(acc, " "))
for x = 10, 1, -3 do io.write(x, " ") end
print()
-- string coercions in concat
print(1 .. 2, 1.5 .. "", -0.0 .. "")
-- load with env
local env = { print = print, x = 5 }
local chunk = load("x = x * 2; return x", "chunk", "t", env)
print(chunk(), env.x)
print(load("return ...")(1, 2, 3))
local parts = { "return ", "1 + ", "2" }
local idx = 0
print(load(function() idx = idx + 1; return parts[idx] end)())
