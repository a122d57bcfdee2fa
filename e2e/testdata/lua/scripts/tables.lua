-- tables: arrays, hashes, sorting, metatables, inheritance
local function keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return table.concat(ks, ",")
end
local t = {}
for i = 1, 100 do t[i] = i * i end
print(#t, t[1], t[50], t[100])
table.insert(t, 1, 0)
table.insert(t, 10001)
print(#t, t[1], t[2], t[#t], table.remove(t), table.remove(t, 1), #t)
print(table.concat({ 1, 2, 3, "x", 4.5 }, "-"), table.concat({}, ","), table.concat({ "a", "b", "c" }, ",", 2, 3))
print(table.unpack({ 1, 2, 3 }), select("#", table.unpack({ 1, nil, 3 }, 1, 3)), table.pack(1, nil, 3).n)
local moved = table.move({ 1, 2, 3, 4, 5 }, 2, 4, 1)
print(table.concat(moved, ","))
-- hash part
local h = { alpha = 1, beta = 2, [3.5] = "f", [true] = "yes" }
h.gamma = 3
h.beta = nil
print(keys(h))
-- many keys, deletion during traversal
local big = {}
for i = 1, 5000 do big["k" .. i] = i end
local n, sum = 0, 0
for k, v in pairs(big) do
  n = n + 1
  sum = sum + v
  if v % 2 == 0 then big[k] = nil end
end
local left = 0
for _ in pairs(big) do left = left + 1 end
print(n, sum, left)
-- sorting with comparators
local recs = {}
local seed = 12345
local function rnd(m) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % m end
for i = 1, 300 do recs[i] = { id = i, score = rnd(1000), name = "n" .. rnd(50) } end
table.sort(recs, function(a, b)
  if a.score ~= b.score then return a.score > b.score end
  return a.id < b.id
end)
local top = {}
for i = 1, 10 do top[i] = recs[i].id .. ":" .. recs[i].score end
print(table.concat(top, " "))
-- metatables
local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({ x = x, y = y }, Vec) end
function Vec.__add(a, b) return Vec.new(a.x + b.x, a.y + b.y) end
function Vec.__mul(a, s) return Vec.new(a.x * s, a.y * s) end
function Vec.__eq(a, b) return a.x == b.x and a.y == b.y end
function Vec.__lt(a, b) return a:len2() < b:len2() end
function Vec.__le(a, b) return a:len2() <= b:len2() end
function Vec.__tostring(a) return "(" .. a.x .. "," .. a.y .. ")" end
function Vec.__len(a) return 2 end
function Vec.__call(a, k) return a[k] end
function Vec.__concat(a, b) return tostring(a) .. tostring(b) end
function Vec:len2() return self.x * self.x + self.y * self.y end
local a, b = Vec.new(1, 2), Vec.new(3, 4)
print(tostring(a + b), tostring(a * 3), a == Vec.new(1, 2), a < b, b <= a, #a, a("y"), a .. b)
-- inheritance
local Animal = {}
Animal.__index = Animal
function Animal.new(name, sound) return setmetatable({ name = name, sound = sound }, Animal) end
function Animal:speak() return self.name .. " says " .. self.sound end
local Dog = setmetatable({}, { __index = Animal })
Dog.__index = Dog
function Dog.new(name) local d = Animal.new(name, "woof"); return setmetatable(d, Dog) end
function Dog:fetch() return self.name .. " fetches" end
local d = Dog.new("rex")
print(d:speak(), d:fetch(), getmetatable(d) == Dog, rawget(d, "speak"))
-- __index/__newindex functions, proxies, rawset/rawequal
local log = {}
local store = {}
local proxy = setmetatable({}, {
  __index = function(_, k) log[#log + 1] = "get " .. k; return store[k] end,
  __newindex = function(_, k, v) log[#log + 1] = "set " .. k; rawset(store, k, v) end,
})
proxy.a = 1
proxy.b = proxy.a + 1
print(proxy.b, rawget(proxy, "a"), table.concat(log, ";"), rawequal(proxy, proxy), rawlen({ 1, 2 }))
-- weak tables
local weak = setmetatable({}, { __mode = "k" })
do
  local key = {}
  weak[key] = "x"
  weak[{}] = "y"
end
collectgarbage()
collectgarbage()
local wn = 0
for _ in pairs(weak) do wn = wn + 1 end
print("weak entries after gc", wn)
-- next / ipairs stopping at nil
local holes = { 1, 2, nil, 4 }
local cnt = 0
for _ in ipairs(holes) do cnt = cnt + 1 end
print(cnt, next({}), type(next({ 5 })))
-- matrix
local M = {}
for i = 1, 20 do M[i] = {}; for j = 1, 20 do M[i][j] = (i * j) % 7 end end
local P = {}
for i = 1, 20 do
  P[i] = {}
  for j = 1, 20 do
    local s = 0
    for k = 1, 20 do s = s + M[i][k] * M[k][j] end
    P[i][j] = s
  end
end
local tr = 0
for i = 1, 20 do tr = tr + P[i][i] end
print("trace", tr, P[3][17], P[20][1])
