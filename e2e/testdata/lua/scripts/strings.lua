-- strings: library functions, patterns, formatting, utf8
local s = "The quick brown fox jumps over the lazy dog"
print(#s, s:upper(), s:lower())
print(s:sub(5, 9), s:sub(-3), s:sub(-100, 3), s:rep(2, "|"))
print(s:find("fox"), s:find("o", 20, true), s:find("%s(%a+)%s"), s:match("(%a+) dog"))
local words = {}
for w in s:gmatch("%a+") do words[#words + 1] = w end
print(#words, table.concat(words, ","))
print((s:gsub("o", "0")), select(2, s:gsub("%w+", "")))
print(s:gsub("(%w+) (%w+)", "%2 %1", 2))
print(("hello world"):gsub("o", { o = "OO" }), ("abc"):gsub("%w", function(c) return c:byte() .. "." end))
print(("key=val; k2=v2"):match("(%w+)=(%w+)"), ("  trim me  "):match("^%s*(.-)%s*$"))
print(string.byte("ABC", 1, -1), string.char(72, 105), ("%d"):rep(3, ","))
print(string.format("%5d|%-5d|%05d|%x|%X|%o|%e|%.3f|%g|%q", 42, 42, 42, 255, 255, 8, 12345.678, math.pi, 1e20, "a\nb\"c\0"))
print(string.format("%10s|%-10s|%.2s|%c%c%c|%%|%a", "right", "left", "cut", 76, 117, 97, 1.0))
print(string.format("%i %u %5.1f %-8.3e", -7, 7, 2.25, 0.000123))
print(("x"):rep(0), ("ab"):rep(3), ("abc"):reverse(), ("%a"):len())
print(tostring(12), tostring(1.5), tostring(-0.0), tostring(1e100), tostring(2^63), math.tointeger(3.0))
print(tonumber("0x10"), tonumber("  12  "), tonumber("1e2"), tonumber("z", 36), tonumber("777", 8), tonumber("nope"))
print(string.pack and #string.pack("i4i8d", 1, 2, 3.0), string.unpack("<i4", string.pack("<i4", -2)))
local packed = string.pack(">I2 s1 z", 513, "hey", "zero")
print(#packed, string.unpack(">I2 s1 z", packed))
print(utf8.char(72, 228, 8364, 128512), utf8.len("häll€"), utf8.codepoint("€", 1))
for p, c in utf8.codes("aé€") do io.write(p, ":", c, " ") end
print()
-- long string building
local parts = {}
for i = 1, 2000 do parts[i] = string.format("%04d", i * 7 % 10000) end
local big = table.concat(parts)
print(#big, big:sub(1, 20), big:sub(-20))
local count = 0
for _ in big:gmatch("7") do count = count + 1 end
print("sevens", count)
-- string comparison and sorting
local names = { "delta", "Alpha", "charlie", "bravo", "Echo", "alpha" }
table.sort(names)
print(table.concat(names, " "))
table.sort(names, function(a, b) return a:lower() < b:lower() or (a:lower() == b:lower() and a < b) end)
print(table.concat(names, " "))
-- frontier patterns and balanced match
print(("THE (quick) fox"):find("%f[%a]%a+%f[%A]"), ("f(a(b)c)d"):match("%b()"))
print(("hello"):byte(-1), ("\65\066\x43\u{44}"))
