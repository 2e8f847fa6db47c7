#!/usr/bin/env bash
# aqlguard serve on PostgreSQL on this machine (bench/RESULTS.md): what
# one replica adds to an allowed call against the server alone and
# against a state directory (1 client: latency), and what 3 replicas
# serve against 1 (CLIENTS clients, default 64: calls/s), all in one
# httpload run, interleaved. Every call takes the evaluator and the audit
# chain and is allowed. PostgreSQL is a throwaway cluster in a temporary
# directory (Debian's postgresql package; as nobody when run as root),
# with its default durability (fsync, synchronous_commit on) unless
# PG_FAST=1 (fsync off, as the tests run it). BASE=BIN adds the same
# replicas run by another aqlguard binary (an earlier commit) on a schema
# of their own, measured in the same run; AQLGUARD=BIN runs BIN instead of
# out/bin/aqlguard (a name of its own keeps -cpu's figures apart from
# other aqlguard processes on the machine). Build first
# (bench/README.md); DUR, ROUNDS and CLIENTS tune the run; THROUGHPUT=0
# measures the latency alone.
set -euo pipefail
B=$(cd "$(dirname "$0")" && pwd)/out/bin
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d)
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
RUN=()
if [ "$(id -u)" = 0 ]; then
	chmod 755 "$W"
	mkdir "$W/pg" && chown nobody "$W/pg"
	RUN=(runuser -u nobody --)
else
	mkdir "$W/pg"
fi
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	"${RUN[@]}" "$PGBIN/pg_ctl" -D "$W/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT
PGOPTS="-c listen_addresses='' -c unix_socket_directories=$W/pg -c max_connections=300"
if [ "${PG_FAST:-}" = 1 ]; then
	PGOPTS="$PGOPTS -c fsync=off -c full_page_writes=off"
fi
"${RUN[@]}" "$PGBIN/initdb" -D "$W/pg/data" -U aqlguard --auth=trust -E UTF8 --locale=C >/dev/null
"${RUN[@]}" "$PGBIN/pg_ctl" -D "$W/pg/data" -l "$W/pg/server.log" -o "$PGOPTS" -w start >/dev/null
export AQLGUARD_STATE_DSN="host=$W/pg port=5432 user=aqlguard dbname=postgres sslmode=disable"

guarded_config 256 'url = "http://127.0.0.1:9300/mcp"' >"$W/aqlguard.toml"
sed 's/^\[serve\]/[state]\nbackend = "postgres"\n[serve]/' "$W/aqlguard.toml" >"$W/aqlguard-pg.toml"

"$B/testserver" -http 127.0.0.1:9300 2>/dev/null &
wait_port 9300
serve() { # PORT CONFIG HOME
	mkdir -p "$3"
	HOME=$3 XDG_STATE_HOME=$3/state "${AQLGUARD:-$B/aqlguard}" serve --listen "127.0.0.1:$1" --config "$2" --log-level warn 2>>"$W/aqlguard-$1.log" &
}
serve 9301 "$W/aqlguard.toml" "$W/bolt"
serve 9311 "$W/aqlguard-pg.toml" "$W/r1"
serve 9312 "$W/aqlguard-pg.toml" "$W/r2"
serve 9313 "$W/aqlguard-pg.toml" "$W/r3"
PORTS="9301 9311 9312 9313"
LAT=() THR=()
if [ -n "${BASE:-}" ]; then
	sed 's/^\[serve\]/[state]\nbackend = "postgres"\nschema = "base"\n[serve]/' "$W/aqlguard.toml" >"$W/aqlguard-base.toml"
	serve_base() { # PORT HOME
		mkdir -p "$2"
		HOME=$2 XDG_STATE_HOME=$2/state "$BASE" serve --listen "127.0.0.1:$1" --config "$W/aqlguard-base.toml" --log-level warn 2>>"$W/aqlguard-$1.log" &
	}
	serve_base 9321 "$W/b1"
	serve_base 9322 "$W/b2"
	serve_base 9323 "$W/b3"
	PORTS="$PORTS 9321 9322 9323"
	U=http://127.0.0.1
	LAT=(-target base-1=$U:9321/mcp)
	THR=(-target base-1=$U:9321/mcp -target "base-3=$U:9321/mcp|$U:9322/mcp|$U:9323/mcp")
fi
for p in $PORTS; do
	for _ in $(seq 200); do
		(exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break
		sleep 0.05
	done
done
U=http://127.0.0.1
echo "## latency: 1 client"; LAT_CPU=${CPU:+-cpu}
"$B/httpload" -target direct=$U:9300/mcp -target bbolt-1=$U:9301/mcp -target postgres-1=$U:9311/mcp "${LAT[@]}" \
	-clients 1 -duration "${DUR:-5s}" -rounds "${ROUNDS:-3}" ${LAT_CPU:-}
if [ "${THROUGHPUT:-1}" = 0 ]; then
	exit 0
fi
echo
echo "## throughput: ${CLIENTS:-64} clients"
"$B/httpload" -target direct=$U:9300/mcp -target postgres-1=$U:9311/mcp \
	-target "postgres-3=$U:9311/mcp|$U:9312/mcp|$U:9313/mcp" "${THR[@]}" \
	-clients "${CLIENTS:-64}" -duration "${DUR:-5s}" -rounds "${ROUNDS:-3}" ${CPU:+-cpu}
