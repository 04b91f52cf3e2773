-- wrk script for scripts/load.sh: mixed queries and ingests against `excerpt serve`.
-- One request in INGEST_EVERY is a small ingest (a fresh id each time); the others
-- are queries over a rotating set. Status codes are counted per thread and summed.
local queries = {
  "how do I run the tests?",
  "what strategies assemble context?",
  "relevant segment extraction budget",
  "how does hybrid fusion work",
  "which exit codes does the command use",
  "how is the index stored on disk",
  "bearer token for writes",
  "evaluate strategies on a dataset",
}
local ingest_every = tonumber(os.getenv("INGEST_EVERY") or "20")
-- LOAD_QUERIES=bench: four words of the generated collection of `excerpt bench` per
-- query (w0 ... w7cf, skewed to the frequent ones as its generator draws them).
local bench_words = os.getenv("LOAD_QUERIES") == "bench"
local token = os.getenv("EXCERPT_TOKEN")
local counter = 0
local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  statuses = {}
end

local function headers()
  local h = { ["Content-Type"] = "application/json" }
  if token and token ~= "" then h["Authorization"] = "Bearer " .. token end
  return h
end

function request()
  counter = counter + 1
  if ingest_every > 0 and counter % ingest_every == 0 then
    local id = string.format("load/t%d-%d", thread_id, counter)
    local body = string.format(
      '{"documents": [{"id": "%s", "text": "Load note %d. The replica was restarted after the cache filled; the on-call engineer drained the queue first."}]}',
      id, counter)
    return wrk.format("POST", "/v1/ingest", headers(), body)
  end
  local q = queries[(counter % #queries) + 1]
  if bench_words then
    local w = {}
    for i = 1, 4 do w[i] = string.format("w%x", math.floor(math.random() ^ 3 * 2000)) end
    q = table.concat(w, " ")
  end
  return wrk.format("POST", "/v1/query", headers(), string.format('{"query": "%s", "budget": 1000}', q))
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for code, n in pairs(s) do total[code] = (total[code] or 0) + n end
  end
  local parts = {}
  for code, n in pairs(total) do table.insert(parts, string.format('"%d": %d', code, n)) end
  io.write(string.format(
    'LOADJSON {"requests": %d, "seconds": %.2f, "rps": %.1f, "p50_ms": %.2f, "p90_ms": %.2f, "p99_ms": %.2f, "max_ms": %.2f, "socket_errors": %d, "timeouts": %d, "status": {%s}}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write,
    summary.errors.timeout, table.concat(parts, ", ")))
end
