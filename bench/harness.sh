#!/bin/sh
# Usage: bench/harness.sh [ROUNDS [BATCH]]
# Summary: what the sandbox costs a harness (issue 20, SPEC 4.7), as medians
# of one run and ratios:
#   1. `forge-shell -c true` into a running namespace sandbox over the host's
#      `bash -c true` (target: at most +0.6 ms per command);
#   2. a command (`true`) through opencode's session shell endpoint (the
#      TUI's !cmd) in a sandboxed session over the same in a session opted
#      out to the host (target: at most 1.10x).
#
# A scratch repository with a private HOME gets a sandbox (rootfs "host", no
# Docker needed), removed at the end. Part 1: ROUNDS (default 20) rounds of
# BATCH (default 25) commands per variant, interleaved; the overhead is the
# median over the rounds of the paired difference per command. Part 2:
# `opencode serve` on 127.0.0.1 with forge's plugin, "shell": forge-shell,
# FORGE_SANDBOX_REQUIRED=1 and no model; two sessions, the second named in
# the private ~/.config/forge/opencode-host; 3 * ROUNDS requests to each,
# alternating, each timed by curl. The programs come from the build tree
# $FORGE_BUILD (default: next to this script), else from PATH; opencode from
# $FORGE_OPENCODE, else PATH (OPENCODE=0 skips part 2).
set -eu

rounds=${1:-20}
batch=${2:-25}
case $rounds$batch in *[!0-9]*) echo "usage: $0 [ROUNDS [BATCH]]" >&2; exit 64 ;; esac
if [ "$rounds" -eq 0 ] || [ "$batch" -eq 0 ]; then
	echo "$0: ROUNDS and BATCH must be > 0" >&2
	exit 64
fi

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
bench_use_build forge-shell forge-sandbox forge-shell bwrap git curl jq
forge_shell=$(command -v forge-shell)
forge_sandbox=$(command -v forge-sandbox)
opencode=''
if [ "${OPENCODE:-1}" != 0 ]; then
	opencode=${FORGE_OPENCODE:-$(command -v opencode || :)}
	[ -n "$opencode" ] || { echo "$0: opencode not found (build-aux/install-deps installs it; OPENCODE=0 skips it)" >&2; exit 69; }
	plugin=$build/opencode/forge.js
	[ -f "$plugin" ] || { echo "$0: $plugin not found (make builds it)" >&2; exit 69; }
fi

oc_pid=''
bench_scratch '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}'
export XDG_DATA_HOME="$tmp/home/.local/share"
unset FORGE_SANDBOX_BACKEND FORGE_SANDBOX_STATE FORGE_SANDBOX_REQUIRED
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	[ -z "$oc_pid" ] || { kill "$oc_pid" 2>/dev/null; wait "$oc_pid" 2>/dev/null; } || :
	bench_cleanup
}
trap cleanup EXIT
name=$(forge-sandbox up 2>/dev/null) || { echo "$0: forge-sandbox up failed" >&2; exit 69; }
# Required mode from here on, as a harness runs.
export FORGE_SANDBOX_REQUIRED=1

# Part 1. batch_ns VARIANT: the wall time of BATCH runs of VARIANT, in ns.
batch_ns() {
	t0=$(date +%s%N)
	i=0
	while [ "$i" -lt "$batch" ]; do
		case $1 in
		sandbox) "$forge_shell" -c true ;;
		host) /bin/bash -c true ;;
		esac
		i=$((i + 1))
	done
	t1=$(date +%s%N)
	echo $((t1 - t0))
}
(
	# What the plugin hands forge-shell (forge-sandbox env's exports).
	export FORGE_SANDBOX_CONTAINER="$name" FORGE_SANDBOX_BACKEND=bwrap
	export FORGE_SANDBOX_STATE="$XDG_STATE_HOME/forge/bwrap/$name"
	"$forge_shell" -c true || { echo "$0: forge-shell -c true failed in the sandbox" >&2; exit 70; }
	r=0
	while [ "$r" -lt "$rounds" ]; do
		if [ $((r % 2)) -eq 0 ]; then
			batch_ns sandbox >>"$tmp/sandbox"; batch_ns host >>"$tmp/host"
		else
			batch_ns host >>"$tmp/host"; batch_ns sandbox >>"$tmp/sandbox"
		fi
		r=$((r + 1))
	done
)
paste "$tmp/sandbox" "$tmp/host" | awk '{ print $1 - $2 }' >"$tmp/over"
shell_ok=0
awk -v s="$(bench_median "$tmp/sandbox")" -v h="$(bench_median "$tmp/host")" -v o="$(bench_median "$tmp/over")" \
	-v b="$batch" -v n="$((rounds * batch))" 'BEGIN {
	printf "1. median per command over %d runs each (interleaved batches of %d):\n", n, b
	printf "  forge-shell -c true, sandboxed   %7.2f ms\n", s / b / 1e6
	printf "  bash -c true, host               %7.2f ms\n", h / b / 1e6
	printf "  overhead +%.2f ms (target <= +0.60: %s), ratio %.2fx\n", o / b / 1e6,
		o / b / 1e6 <= 0.6 ? "met" : "MISSED", s / h
	exit (o / b / 1e6 <= 0.6) ? 0 : 1
}' || shell_ok=1

[ -n "$opencode" ] || exit "$shell_ok"

# Part 2: opencode serve, as t/harness.bats starts it.
oc=$XDG_CONFIG_HOME/opencode
mkdir -p "$oc/plugins" "$oc/node_modules"
ln -s "$plugin" "$oc/plugins/forge.js"
# The lock file says @opencode-ai/plugin is there (forge's plugin imports
# nothing), so opencode reaches no registry.
version=$("$opencode" --version)
printf '{}\n' >"$oc/package.json"
printf '{"packages": {"": {"dependencies": {"@opencode-ai/plugin": "%s"}}}}\n' "$version" >"$oc/package-lock.json"
jq -n --arg shell "$forge_shell" '{shell: $shell, autoupdate: false, share: "disabled"}' >"$oc/opencode.json"
(
	export FORGE_SANDBOX_PROGRAM="$forge_sandbox"
	export OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_SHARE=1
	export OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_DEFAULT_PLUGINS=1 OPENCODE_DISABLE_CLAUDE_CODE=1
	exec "$opencode" serve --hostname 127.0.0.1 --port 0
) </dev/null >"$tmp/opencode.log" 2>&1 &
oc_pid=$!
url=''
for _ in $(seq 600); do
	url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$tmp/opencode.log")
	[ -z "$url" ] || break
	sleep 0.1
done
[ -n "$url" ] || { echo "$0: opencode serve did not start: $(cat "$tmp/opencode.log")" >&2; exit 70; }
repo=$(pwd -P)

# post PATH JSON: POST to opencode for the repository; the answer on stdout.
post() {
	curl -sS --max-time 120 -X POST -H 'Content-Type: application/json' -d "$2" "$url$1?directory=$repo"
}
session() {
	post /session '{}' | jq -er .id
}
sandboxed=$(session)
host=$(session)
printf 'session %s\n' "$host" >"$XDG_CONFIG_HOME/forge/opencode-host"
chmod 600 "$XDG_CONFIG_HOME/forge/opencode-host"
# Each session once, checked: hostname tells inside from the host.
inside=$(post "/session/$sandboxed/shell" '{"agent": "build", "command": "hostname"}' | jq -r '.parts[0].state.output')
here=$(post "/session/$host/shell" '{"agent": "build", "command": "hostname"}' | jq -r '.parts[0].state.output')
if [ "$here" != "$(hostname)" ] || [ "$inside" != "$name" ]; then
	echo "$0: the sessions did not run where expected (sandboxed: $inside, host: $here)" >&2
	exit 70
fi

# timed SESSION: one `true` through SESSION's shell, its wall time in ns.
timed() {
	curl -sS --max-time 120 -o /dev/null -w '%{time_total}\n' -X POST -H 'Content-Type: application/json' \
		-d '{"agent": "build", "command": "true"}' "$url/session/$1/shell?directory=$repo" |
		awk '{ printf "%d\n", $1 * 1e9 }'
}
r=0
while [ "$r" -lt $((3 * rounds)) ]; do
	if [ $((r % 2)) -eq 0 ]; then
		timed "$sandboxed" >>"$tmp/oc.sandbox"; timed "$host" >>"$tmp/oc.host"
	else
		timed "$host" >>"$tmp/oc.host"; timed "$sandboxed" >>"$tmp/oc.sandbox"
	fi
	r=$((r + 1))
done
awk -v s="$(bench_median "$tmp/oc.sandbox")" -v h="$(bench_median "$tmp/oc.host")" -v n="$((3 * rounds))" -v v="$version" 'BEGIN {
	printf "2. opencode %s session shell, `true`, median of %d requests each (interleaved):\n", v, n
	printf "  sandboxed session                %7.2f ms\n", s / 1e6
	printf "  session opted out to the host    %7.2f ms\n", h / 1e6
	printf "  ratio %.2fx (target <= 1.10: %s)\n", s / h, s / h <= 1.10 ? "met" : "MISSED"
	exit (s / h <= 1.10) ? 0 : 1
}' || exit 1
exit "$shell_ok"
