-- coroutines: generators, producer/consumer, wrap, status, yield across pcall
local function gen(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i, i * i) end
    return "done"
  end)
end
local g = gen(4)
for _ = 1, 5 do print(g()) end
local co = coroutine.create(function(a, b)
  print("start", a, b)
  local c = coroutine.yield(a + b)
  print("got", c)
  local d, e = coroutine.yield(c * 2)
  print("got", d, e)
  return "end", a + b + c + d + e
end)
print(coroutine.status(co))
print(coroutine.resume(co, 1, 2))
print(coroutine.status(co))
print(coroutine.resume(co, 10))
print(coroutine.resume(co, 3, 4))
print(coroutine.status(co), coroutine.resume(co))
-- errors inside coroutines
local bad = coroutine.create(function() local x = nil; return x.field end)
local ok, err = coroutine.resume(bad)
print(ok, (err:gsub("^.-:%d+: ", "")), coroutine.status(bad))
-- yield across pcall (allowed in 5.4)
local co2 = coroutine.create(function()
  local ok2, v = pcall(function()
    local y = coroutine.yield("inside pcall")
    if y == "boom" then error("exploded") end
    return y
  end)
  coroutine.yield(tostring(ok2) .. ":" .. tostring(v):gsub("^.-:%d+: ", ""))
  return "finished"
end)
print(coroutine.resume(co2))
print(coroutine.resume(co2, "boom"))
print(coroutine.resume(co2))
-- producer / consumer pipeline with filters
local function producer()
  return coroutine.create(function()
    for i = 1, 30 do coroutine.yield(i) end
  end)
end
local function filter(src, pred)
  return coroutine.create(function()
    while true do
      local ok3, v = coroutine.resume(src)
      if not v then return end
      if pred(v) then coroutine.yield(v) end
    end
  end)
end
local function map(src, f)
  return coroutine.create(function()
    while true do
      local _, v = coroutine.resume(src)
      if not v then return end
      coroutine.yield(f(v))
    end
  end)
end
local pipe = map(filter(producer(), function(v) return v % 3 == 0 end), function(v) return v * v end)
local got = {}
while true do
  local _, v = coroutine.resume(pipe)
  if not v then break end
  got[#got + 1] = v
end
print(table.concat(got, ","))
-- many coroutines alive at once
local cos = {}
for i = 1, 200 do
  cos[i] = coroutine.create(function(x)
    local s = 0
    while true do s = s + x; x = coroutine.yield(s) end
  end)
end
local total = 0
for round = 1, 5 do
  for i = 1, 200 do
    local _, v = coroutine.resume(cos[i], i * round)
    total = total + v
  end
end
print("total", total, coroutine.isyieldable(), select(2, coroutine.running()), type(coroutine.running()))
-- close
local cl = coroutine.create(function() coroutine.yield() end)
coroutine.resume(cl)
print(coroutine.close(cl), coroutine.status(cl))
-- permutations generator
local function permgen(a, n)
  n = n or #a
  if n <= 1 then coroutine.yield(a) else
    for i = 1, n do
      a[n], a[i] = a[i], a[n]
      permgen(a, n - 1)
      a[n], a[i] = a[i], a[n]
    end
  end
end
local count, acc = 0, {}
for p in coroutine.wrap(function() permgen({ "a", "b", "c", "d" }) end) do
  count = count + 1
  if count <= 5 then acc[#acc + 1] = table.concat(p) end
end
print(count, table.concat(acc, " "))
