-- pcall, error, xpcall, error objects, to-be-closed variables, C API errors
local function strip(m) return (tostring(m):gsub("^[^:]*:%d+: ", "")) end
print(pcall(error, "plain"))
print(select("#", pcall(error, { code = 1 })), type(select(2, pcall(error, { code = 1 }))))
print(pcall(error, "lvl0", 0))
local ok, e = pcall(function() error("with position") end)
print(ok, strip(e))
ok, e = pcall(function() local t = nil; return t.x end)
print(ok, strip(e))
ok, e = pcall(function() return 1 + {} end)
print(ok, strip(e))
ok, e = pcall(function() return #5 end)
print(ok, strip(e))
ok, e = pcall(function() return ("x"):bad() end)
print(ok, strip(e))
ok, e = pcall(string.rep)
print(ok, strip(e))
ok, e = pcall(function() return 1 // 0 end)
print(ok, strip(e))
print(pcall(function() return 1.0 // 0 end))
-- xpcall with a handler and traceback
local function handler(m) return "handled: " .. strip(m) end
print(xpcall(function() error("deep") end, handler))
print(xpcall(function(a, b) return a + b end, handler, 3, 4))
local tb
xpcall(function() local function inner() error("tb") end inner() end, function(m)
  tb = debug.traceback(m, 1)
end)
print(tb ~= nil and #tb > 0, tb:match("tb") ~= nil)
-- nested pcall and rethrow
local trace = {}
local function level3() trace[#trace + 1] = "l3"; error({ where = "level3" }) end
local function level2()
  local ok2, err = pcall(level3)
  trace[#trace + 1] = "l2 caught " .. err.where
  err.where = err.where .. "+level2"
  error(err)
end
local function level1()
  local ok1, err = pcall(level2)
  trace[#trace + 1] = "l1 caught " .. err.where
  return err.where
end
print(level1(), table.concat(trace, "; "))
-- error with non-string values
for _, v in ipairs({ 42, true, 3.5 }) do
  local okv, ev = pcall(error, v)
  print(okv, type(ev), ev)
end
-- error objects with __tostring
local E = setmetatable({ msg = "custom" }, { __tostring = function(s) return "E<" .. s.msg .. ">" end })
local oke, ee = pcall(error, E)
print(oke, tostring(ee), ee == E)
-- assert
print(pcall(assert, false))
print(pcall(assert, nil, "assert message"))
print(select("#", assert(1, 2, 3)))
-- to-be-closed variables run on error and normal exit
local closed = {}
local function closer(name)
  return setmetatable({}, { __close = function(_, err) closed[#closed + 1] = name .. (err and (":" .. strip(err)) or "") end })
end
do
  local a <close> = closer("a")
  local b <close> = closer("b")
end
pcall(function()
  local c <close> = closer("c")
  error("oops")
end)
print(table.concat(closed, ","))
-- errors from C functions exposed by the driver
print(pcall(e2e.c_error, "from C"))
local okc, ec = pcall(e2e.c_error, "as table", true)
print(okc, type(ec), ec.msg, ec.code)
print(e2e.c_pcall(function(a, b) return a * b, a + b end, 6, 7))
print(e2e.c_pcall(function() error("inside c_pcall", 0) end))
-- userdata from C
local v = e2e.vec(10)
for i = 1, #v do v[i] = i * 1.5 end
print(tostring(v), #v, v:sum())
v:map(function(x, i) return x * i end)
print(v:sum(), pcall(function() return v[11] end))
local arr = { 5, 3, 9, 1, 7, 2 }
print(e2e.c_sort(arr), table.concat(arr, " "))
local c = e2e.c_counter(100)
print(c(), c(5), c())
print(e2e.ref_demo())
-- stack overflow is caught
local function rec(n) return rec(n + 1) + 1 end
local oks, es = pcall(rec, 1)
print(oks, strip(es):match("stack overflow") ~= nil)
-- string to number errors
print(pcall(function() return "abc" + 1 end))
