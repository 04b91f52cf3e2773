#!/usr/bin/env bash
# Drives `excerpt mcp` with the official MCP Inspector in CLI mode (from the npm
# registry, through npx): builds a small index, lists the tools, calls `search`, and
# checks that the answer names the expected document.
#
# usage: scripts/mcp-inspector.sh [EXCERPT_BINARY]
#   EXCERPT_BINARY defaults to the debug build (built when missing).
#   INSPECTOR_VERSION picks the Inspector's npm version (default 0.15.0, the last that
#   runs on Node 20; newer ones need Node >= 22.7.5).
# Needs node and npx, and network access to the npm registry the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
inspector="@modelcontextprotocol/inspector@${INSPECTOR_VERSION:-0.15.0}"
bin="${1:-}"
if [[ -z "$bin" ]]; then
  target="${CARGO_TARGET_DIR:-target}"
  cargo build --locked -p excerpt-cli >&2
  bin="$target/debug/excerpt"
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/docs"
printf '# Kettle\n\nThe brass kettle whistles at exactly ninety-eight degrees.\n' >"$work/docs/kettle.md"
printf '# Herons\n\nThe grey heron nests in tall alder trees by the river.\n' >"$work/docs/heron.md"
"$bin" --quiet --index "$work/idx" ingest "$work/docs"

# The server as an MCP host would start it, from a host configuration file.
cat >"$work/mcp.json" <<EOF
{"mcpServers": {"excerpt": {"command": "$bin", "args": ["--quiet", "--index", "$work/idx", "mcp"]}}}
EOF
inspect() {
  npx --yes "$inspector" --cli --config "$work/mcp.json" --server excerpt "$@"
}

echo "== tools/list" >&2
tools="$(inspect --method tools/list)"
echo "$tools"
for name in search get_document list_documents; do
  grep -q "\"$name\"" <<<"$tools" || { echo "tool $name is not listed" >&2; exit 1; }
done
if grep -q '"ingest"' <<<"$tools"; then
  echo "ingest is listed without --allow-writes" >&2
  exit 1
fi

echo "== tools/call search" >&2
found="$(inspect --method tools/call --tool-name search \
  --tool-arg 'query=when does the kettle whistle?' --tool-arg budget=300)"
echo "$found"
grep -q 'kettle.md' <<<"$found" || { echo "search did not find kettle.md" >&2; exit 1; }
echo "ok: the Inspector listed the tools and search found the passage" >&2
