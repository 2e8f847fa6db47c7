#!/usr/bin/env bash
# Drives direct, aqlguard serve, a previous aqlguard and TBXark/mcp-proxy
# with bench/out/bin/httpload, all on the testserver (bench/RESULTS.md (l),
# (m)). Build first (bench/README.md); TBXark/mcp-proxy is built from
# source into bench/out/bin/mcp-proxy, aqlguard-prev from the commit to
# compare with. DUR and ROUNDS tune the run. CPU=1 adds where the
# machine's CPU went per call, by process (httpload -cpu).
# DOWNSTREAM=http gives both proxies the testserver over Streamable HTTP
# (the one that "direct" drives) instead of a stdio one each: then
# aqlguard, which starts a server process per client session over stdio,
# and TBXark, which shares one, drive the same single server process.
# With a stdio downstream, aqlguard-shared is aqlguard with share = true:
# one testserver process for all its sessions, as TBXark has. Without
# bench/out/bin/aqlguard-prev that endpoint is left out. AQLGUARD=BIN
# runs BIN instead of out/bin/aqlguard. ALSO_SHARED="NAME=BIN …" adds
# BIN with share = true as endpoint NAME. OWN_CONNS=1: each client its
# own HTTP transport (httpload -own-conns), its connection kept.
# SHARED_ONLY=1 drives only the shared endpoints and TBXark (not direct,
# not aqlguard with a server per session): decision 5 of issue 33.
set -euo pipefail
B=$(cd "$(dirname "$0")" && pwd)/out/bin
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
if [ "${DOWNSTREAM:-stdio}" = http ]; then
	TBX_SERVER='{"url":"http://127.0.0.1:9200/mcp","transportType":"streamable-http"}'
	AQ_SERVER='url = "http://127.0.0.1:9200/mcp"'
else
	TBX_SERVER="{\"command\":\"$B/testserver\",\"args\":[]}"
	AQ_SERVER="command = \"$B/testserver\""
fi
cat >"$W/tbx.json" <<JSON
{"mcpProxy":{"baseURL":"http://127.0.0.1:9203","addr":"127.0.0.1:9203","name":"p","version":"1","type":"streamable-http",
 "options":{"panicIfInvalid":true,"logEnabled":false}},
 "mcpServers":{"ts":$TBX_SERVER}}
JSON
guarded_config 64 "$AQ_SERVER" >"$W/aqlguard.toml"
sed 's/^\[\[servers\]\]$/&\nshare = true/' "$W/aqlguard.toml" >"$W/aqlguard-shared.toml"
"$B/testserver" -http 127.0.0.1:9200 2>/dev/null &
# The proxies may connect to it at once (DOWNSTREAM=http): wait for it.
wait_port 9200
"${AQLGUARD:-$B/aqlguard}" serve --listen 127.0.0.1:9201 --config "$W/aqlguard.toml" --state-dir "$W/st1" 2>"$W/aqlguard.log" &
labels=(-label "$!=aqlguard serve")
targets=(-target direct=http://127.0.0.1:9200/mcp -target aqlguard=http://127.0.0.1:9201/mcp)
if [ "${SHARED_ONLY:-}" = 1 ]; then
	targets=()
fi
if [ -x "$B/aqlguard-prev" ] && [ "${SHARED_ONLY:-}" != 1 ]; then
	"$B/aqlguard-prev" serve --listen 127.0.0.1:9202 --config "$W/aqlguard.toml" --state-dir "$W/st2" 2>"$W/aqlguard-prev.log" &
	labels+=(-label "$!=aqlguard-prev serve")
	targets+=(-target aqlguard-prev=http://127.0.0.1:9202/mcp)
fi
if [ "${DOWNSTREAM:-stdio}" != http ]; then
	"${AQLGUARD:-$B/aqlguard}" serve --listen 127.0.0.1:9204 --config "$W/aqlguard-shared.toml" --state-dir "$W/st3" 2>"$W/aqlguard-shared.log" &
	labels+=(-label "$!=aqlguard-shared serve")
	targets+=(-target aqlguard-shared=http://127.0.0.1:9204/mcp)
fi
# ALSO_SHARED="NAME=BIN …" adds BIN with share = true as endpoint NAME
# (a build with one change against one without, in the same rounds).
port=9210
for nb in ${ALSO_SHARED:-}; do
	"${nb#*=}" serve --listen 127.0.0.1:$port --config "$W/aqlguard-shared.toml" --state-dir "$W/st-$port" 2>"$W/aqlguard-$port.log" &
	labels+=(-label "$!=${nb%%=*} serve")
	targets+=(-target "${nb%%=*}=http://127.0.0.1:$port/mcp")
	port=$((port + 1))
done
"$B/mcp-proxy" --config "$W/tbx.json" >"$W/tbx.log" 2>&1 &
labels+=(-label "$!=mcp-proxy (tbxark)")
targets+=(-target tbxark=http://127.0.0.1:9203/ts/mcp)
sleep 2
"$B/httpload" "${targets[@]}" ${CPU:+"${labels[@]}"} ${OWN_CONNS:+-own-conns} -clients 32 -duration "${DUR:-5s}" -rounds "${ROUNDS:-3}" ${CPU:+-cpu}
