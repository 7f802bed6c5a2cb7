#!/bin/sh
# Usage: bench/sandbox-exec.sh [ROUNDS [BATCH]]
# Summary: exec latency into a running namespace sandbox (SPEC 4.5):
# `forge-shell -c true` through forge-sandbox-init's socket, against a fresh
# minimal `bwrap ... true` per command and the host's `sh -c true`, as the
# median per command and as ratios. Target: at most 0.5 of a fresh bwrap.
#
# A scratch repository with a private HOME gets a sandbox (rootfs "host",
# no Docker needed), removed at the end. ROUNDS (default 20) rounds of BATCH
# (default 25) commands per variant, the variants interleaved so that drift
# on the machine hits them alike; the median is over the rounds. The
# programs come from the build tree $FORGE_BUILD (default: next to this
# script), else from PATH.
set -eu

rounds=${1:-20}
batch=${2:-25}
target=0.5
case $rounds$batch in *[!0-9]*) echo "usage: $0 [ROUNDS [BATCH]]" >&2; exit 64 ;; esac
if [ "$rounds" -eq 0 ] || [ "$batch" -eq 0 ]; then
	echo "$0: ROUNDS and BATCH must be > 0" >&2
	exit 64
fi

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
bench_use_build forge-shell forge-sandbox forge-shell bwrap git
bench_scratch '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}}}'
FORGE_SANDBOX_CONTAINER=$(forge-sandbox up 2>/dev/null) || { echo "$0: forge-sandbox up failed" >&2; exit 69; }
export FORGE_SANDBOX_CONTAINER

# The smallest bwrap that runs a host program: what a sandbox per command costs at least.
fresh_bwrap() {
	set -- bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-net --new-session \
		--ro-bind /usr /usr
	for d in /bin /lib /lib32 /lib64; do
		if [ -L "$d" ]; then
			set -- "$@" --symlink "$(readlink "$d")" "$d"
		elif [ -d "$d" ]; then
			set -- "$@" --ro-bind "$d" "$d"
		fi
	done
	"$@" --proc /proc --dev /dev true
}

# batch_ns VARIANT: the wall time of BATCH runs of VARIANT, in ns.
batch_ns() {
	t0=$(date +%s%N)
	i=0
	while [ "$i" -lt "$batch" ]; do
		case $1 in
		sandbox) forge-shell -c true ;;
		bwrap) fresh_bwrap ;;
		host) sh -c true ;;
		esac
		i=$((i + 1))
	done
	t1=$(date +%s%N)
	echo $((t1 - t0))
}

r=0
while [ "$r" -lt "$rounds" ]; do
	for v in sandbox bwrap host; do
		batch_ns "$v" >>"$tmp/$v"
	done
	r=$((r + 1))
done

# median FILE: the median batch time in FILE, per command, in microseconds.
median() {
	sort -n "$1" | awk -v b="$batch" '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%d\n", m / b / 1000 }'
}
sandbox=$(median "$tmp/sandbox")
fresh=$(median "$tmp/bwrap")
host=$(median "$tmp/host")
awk -v s="$sandbox" -v f="$fresh" -v h="$host" -v t="$target" -v n="$((rounds * batch))" 'BEGIN {
	printf "median per command over %d runs each (microseconds):\n", n
	printf "  forge-shell -c true into the running sandbox  %6d\n", s
	printf "  a fresh minimal bwrap ... true                %6d\n", f
	printf "  host sh -c true                               %6d\n", h
	printf "ratios: sandbox/fresh bwrap %.2f (target <= %.2f), sandbox/host %.2f, fresh bwrap/host %.2f\n",
		s / f, t, s / h, f / h
	exit (s / f <= t) ? 0 : 1
}'
