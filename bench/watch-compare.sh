#!/usr/bin/env bash
# What watching costs a call (bench/RESULTS.md (x)): the same aqlguard
# serve three times on one Streamable HTTP testserver: plain, with
# [serve] metrics_listen (scraped every second), and with metrics and
# traces_endpoint (to bench/out/bin/otlpsink), driven in interleaved rounds by
# bench/out/bin/httpload. Build first (bench/README.md, and
# go build -o out/bin/ ./cmd/otlpsink from bench/). DUR, ROUNDS and
# CLIENTS tune the run.
set -euo pipefail
B=$(cd "$(dirname "$0")" && pwd)/out/bin
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$W"' EXIT
plain() { guarded_config 64 'url = "http://127.0.0.1:9300/mcp"'; }
plain >"$W/plain.toml"
plain | sed 's/^max_sessions = 64$/max_sessions = 64\nmetrics_listen = "127.0.0.1:9464"/' >"$W/metrics.toml"
plain | sed 's/^max_sessions = 64$/max_sessions = 64\nmetrics_listen = "127.0.0.1:9465"\ntraces_endpoint = "http:\/\/127.0.0.1:9318\/v1\/traces"/' >"$W/traced.toml"
"$B/testserver" -http 127.0.0.1:9300 2>/dev/null &
"$B/otlpsink" -listen 127.0.0.1:9318 2>"$W/sink.log" &
wait_port 9300
"$B/aqlguard" serve --listen 127.0.0.1:9301 --config "$W/plain.toml" --state-dir "$W/st1" 2>"$W/plain.log" &
"$B/aqlguard" serve --listen 127.0.0.1:9302 --config "$W/metrics.toml" --state-dir "$W/st2" 2>"$W/metrics.log" &
"$B/aqlguard" serve --listen 127.0.0.1:9303 --config "$W/traced.toml" --state-dir "$W/st3" 2>"$W/traced.log" &
sleep 2
(while sleep 1; do curl -s -o /dev/null http://127.0.0.1:9464/metrics; curl -s -o /dev/null http://127.0.0.1:9465/metrics; done) &
"$B/httpload" -target plain=http://127.0.0.1:9301/mcp -target metrics=http://127.0.0.1:9302/mcp \
	-target metrics+traces=http://127.0.0.1:9303/mcp \
	-clients "${CLIENTS:-1}" -duration "${DUR:-5s}" -rounds "${ROUNDS:-6}" -tool echo
curl -s http://127.0.0.1:9464/metrics | grep -E '^aqlguard_calls_total' || true
kill %2 2>/dev/null || true
sleep 0.2
cat "$W/sink.log"
