-- wrk_mix.lua: drives wrk (or wrk2) with a loadgen .mix file, so both tools send the
-- same traffic. Usage:
--   wrk -t1 -c64 -d15s -s loadgen-scripts/wrk_mix.lua http://127.0.0.1:8080 -- FILE.mix [BEARER]
-- Format and placeholder rules: loadgen-scripts/README.md. Works with LuaJIT (Lua 5.1).
-- Parsing errors stop wrk with "FILE: line N: ...".

local DEFAULT_BEARER = "test-token-aaaaaaaaaaaaaaaaaaaa"
local SEQ_STRIDE = 1024

local thread_counter = 0

-- Runs in the main Lua state, once per thread before it starts.
function setup(thread)
   thread:set("tid", thread_counter)
   thread_counter = thread_counter + 1
end

local lines = {}      -- { weight, method, path = parts, body = parts or nil, fixed = string or nil }
local cum = {}
local total = 0
local headers = {}
local seq_counter = 0

local function fail(file, lineno, msg)
   error(string.format("%s: line %d: %s", file, lineno, msg), 0)
end

-- Splits a template into literal strings and placeholder tables.
local function compile(tmpl, file, lineno)
   local parts, dynamic = {}, false
   local i, lit_start = 1, 1
   local n = #tmpl
   while i <= n do
      if tmpl:sub(i, i + 4) == "{seq}" then
         if i > lit_start then parts[#parts + 1] = tmpl:sub(lit_start, i - 1) end
         parts[#parts + 1] = { kind = "seq" }
         dynamic = true
         i = i + 5
         lit_start = i
      elseif tmpl:sub(i, i + 5) == "{rand:" then
         local close = tmpl:find("}", i, true)
         if not close then fail(file, lineno, "unterminated {rand:LO:HI}") end
         local lo, hi = tmpl:sub(i + 6, close - 1):match("^(%d+):(%d+)$")
         if not lo then fail(file, lineno, "bad placeholder " .. tmpl:sub(i, close)) end
         lo, hi = tonumber(lo), tonumber(hi)
         if lo > hi then fail(file, lineno, "{rand:LO:HI} has LO > HI") end
         if i > lit_start then parts[#parts + 1] = tmpl:sub(lit_start, i - 1) end
         parts[#parts + 1] = { kind = "rand", lo = lo, hi = hi }
         dynamic = true
         i = close + 1
         lit_start = i
      else
         i = i + 1
      end
   end
   if lit_start <= n then parts[#parts + 1] = tmpl:sub(lit_start) end
   return parts, dynamic
end

local function render(parts, seq)
   local out = {}
   for k = 1, #parts do
      local p = parts[k]
      if type(p) == "string" then
         out[k] = p
      elseif p.kind == "seq" then
         out[k] = tostring(seq)
      else
         out[k] = tostring(math.random(p.lo, p.hi))
      end
   end
   return table.concat(out)
end

local function parse(file, bearer)
   local f, err = io.open(file, "r")
   if not f then error("cannot open mix file: " .. tostring(err), 0) end
   local has_ctype = false
   local lineno = 0
   for raw in f:lines() do
      lineno = lineno + 1
      local s = raw:gsub("\r$", ""):match("^%s*(.-)%s*$")
      if s == "" or s:sub(1, 1) == "#" then
         -- comment
      elseif s:match("^header%s") then
         local name, value = s:match("^header%s+([^:%s]+):%s*(.-)$")
         if not name then fail(file, lineno, "expected 'header Name: value'") end
         local lname = name:lower()
         if lname == "host" or lname == "content-length" or lname == "transfer-encoding" then
            fail(file, lineno, "header '" .. name .. "' is set by the load generator")
         end
         if lname == "content-type" then has_ctype = true end
         value = value:gsub("%${BEARER}", function() return bearer end)
         if value:find("${", 1, true) then
            fail(file, lineno, "unknown variable in header (only ${BEARER})")
         end
         headers[name] = value
      elseif s:match("^%d") then
         local toks = {}
         for t in s:gmatch("%S+") do toks[#toks + 1] = t end
         if #toks < 4 then
            fail(file, lineno, "expected 'WEIGHT METHOD PATH [BODY] EXPECT'")
         end
         local weight = tonumber(toks[1])
         if not weight or weight < 1 or weight > 1000000 or weight % 1 ~= 0 then
            fail(file, lineno, "weight '" .. toks[1] .. "' is not an integer in 1..1000000")
         end
         local method, path, expect = toks[2], toks[3], tonumber(toks[#toks])
         if not method:match("^%u+$") then fail(file, lineno, "bad method") end
         if path:sub(1, 1) ~= "/" then fail(file, lineno, "path must start with '/'") end
         if not expect or expect < 100 or expect > 599 then
            fail(file, lineno, "expected status is not in 100..599")
         end
         local body = nil
         if #toks > 4 then
            -- the raw text between PATH and EXPECT (it may contain blanks)
            local after_path = select(2, s:find(path, 1, true))
            local expect_start = #s - #toks[#toks] + 1
            body = s:sub(after_path + 1, expect_start - 1):match("^%s*(.-)%s*$")
            if body == "-" then body = nil end
         end
         local line = { weight = weight, method = method }
         local pdyn, bdyn = false, false
         line.path, pdyn = compile(path, file, lineno)
         if body then line.body, bdyn = compile(body, file, lineno) end
         line.dynamic = pdyn or bdyn
         lines[#lines + 1] = line
         total = total + weight
         cum[#lines] = total
      else
         fail(file, lineno, "expected a request line, a header line or a # comment")
      end
   end
   f:close()
   if #lines == 0 then error(file .. ": no request lines in mix", 0) end
   return has_ctype
end

-- Runs in each thread's Lua state with the arguments after "--".
function init(args)
   local file = args[1]
   if not file then error("usage: wrk -s wrk_mix.lua URL -- FILE.mix [BEARER]", 0) end
   local bearer = args[2] or os.getenv("BEARER")
   if not bearer or bearer == "" then bearer = DEFAULT_BEARER end
   for k, v in pairs(wrk.headers) do headers[k] = v end
   local has_ctype = parse(file, bearer)
   tid = tonumber(tid) or 0
   math.randomseed(1 + tid)
   for _, line in ipairs(lines) do
      local h = {}
      for k, v in pairs(headers) do h[k] = v end
      if line.body and not has_ctype then h["Content-Type"] = "application/json" end
      line.headers = h
      if not line.dynamic then
         line.fixed = wrk.format(line.method, render(line.path, 0), h,
                                 line.body and render(line.body, 0) or nil)
      end
   end
end

function request()
   local line = lines[1]
   if #lines > 1 then
      local r = math.random(1, total)
      for k = 1, #lines do
         if r <= cum[k] then line = lines[k]; break end
      end
   end
   if line.fixed then return line.fixed end
   local seq = seq_counter * SEQ_STRIDE + tid + 1
   seq_counter = seq_counter + 1
   local body = nil
   if line.body then body = render(line.body, seq) end
   return wrk.format(line.method, render(line.path, seq), line.headers, body)
end
