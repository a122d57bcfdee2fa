-- math library, deterministic random numbers, os/io bits, and the collector
print(math.pi, math.huge, -math.huge, math.maxinteger)
print(math.floor(3.7), math.ceil(3.2), math.floor(-3.5), math.ceil(-3.5), math.abs(-4), math.abs(math.mininteger))
print(math.sqrt(2), math.exp(1), math.log(100, 10), math.log(8, 2), math.log(2.718281828459045))
print(math.sin(math.pi / 6), math.cos(0), math.tan(math.pi / 4), math.asin(1), math.acos(0), math.atan(1, 1))
print(math.fmod(7, 3), math.fmod(-7, 3), math.modf(3.75), math.modf(-2.5))
print(math.max(3, 9, 1), math.min(3, 9, 1), math.max(1.5, 2), math.ult(1, -1), math.tointeger(5.0), math.tointeger(5.5))
print(string.format("%.10f %.10f", math.sqrt(10), 1 / 3))
math.randomseed(42)
local r = {}
for i = 1, 10 do r[i] = math.random(1, 1000) end
print(table.concat(r, " "))
math.randomseed(42)
local again = math.random(1, 1000)
print(again == r[1], math.random(5) <= 5, math.random() < 1)
math.randomseed(7, 11)
local fl = math.random()
print(string.format("%.12f", fl), math.random(0) ~= nil)
-- numeric algorithms
local function isprime(n)
  if n < 2 then return false end
  for d = 2, math.floor(math.sqrt(n)) do if n % d == 0 then return false end end
  return true
end
local primes = {}
for n = 1, 200 do if isprime(n) then primes[#primes + 1] = n end end
print(#primes, primes[#primes], table.concat(primes, ",", 1, 10))
local function gcd(a, b) while b ~= 0 do a, b = b, a % b end return a end
print(gcd(1071, 462), gcd(2 ^ 40 // 1, 6 ^ 10 // 1))
-- newton's method, series
local x = 1.0
for _ = 1, 20 do x = x - (x * x - 2) / (2 * x) end
local s = 0
for k = 0, 100000 do s = s + (-1) ^ k / (2 * k + 1) end
print(string.format("%.15f %.10f", x, 4 * s))
-- integer overflow wraps
print(math.maxinteger * 2, math.mininteger - 1, 1 << 63, (1 << 63) - 1)
-- os and io (deterministic parts only)
print(type(os.time()), type(os.clock()), os.getenv("E2E_SURELY_UNSET_VARIABLE"))
print(os.date("!%Y-%m-%d %H:%M:%S", 86400 * 365), os.time({ year = 2000, month = 1, day = 1, hour = 12 }) ~= nil)
io.write("io.write ", 1, " ", 2.5, "\n")
local tmp = os.tmpname()
local f = assert(io.open(tmp, "w"))
for i = 1, 100 do f:write(i, "\n") end
f:close()
local lines, sum = 0, 0
for l in io.lines(tmp) do lines = lines + 1; sum = sum + tonumber(l) end
f = io.open(tmp, "r")
local all = f:read("a")
f:seek("set", 0)
local first = f:read("n")
f:close()
os.remove(tmp)
print(lines, sum, #all, first, io.type(f), io.open("/nonexistent/file") == nil)
-- garbage collector
collectgarbage("collect")
local before = collectgarbage("count")
local keep = {}
for i = 1, 20000 do keep[i] = { i, tostring(i), { i } } end
local during = collectgarbage("count")
keep = nil
collectgarbage("collect")
collectgarbage("collect")
local after = collectgarbage("count")
print("heap grew", during > before, "and shrank", after < during)
print(collectgarbage("isrunning"), collectgarbage("step", 0) ~= nil)
print(collectgarbage("incremental"), collectgarbage("generational"), collectgarbage("incremental"))
-- finalizers run in order on collection
local order = {}
for i = 1, 5 do setmetatable({}, { __gc = function() order[#order + 1] = i end }) end
collectgarbage()
collectgarbage()
table.sort(order)
print("finalized", table.concat(order, ","))
-- lots of short-lived strings and tables in generational mode
collectgarbage("generational")
local acc = 0
for i = 1, 50000 do
  local t = { tostring(i), i * 2 }
  acc = acc + #t[1] + t[2] % 3
end
collectgarbage("incremental")
print("acc", acc)
