#!/bin/sh
# Usage: bench/shell.sh [RUNS [BATCH]]
# Summary: forge-shell's start-up overhead against `bash -c true` alone and
# against the equivalent `#!/bin/sh` + `exec /bin/bash "$@"` shim, plus the
# time forge-netrule takes over 10,000 entries.
#
# RUNS (default 2000) runs of each variant are made in batches of BATCH
# (default 100), the batches of the three variants interleaved so that drift
# on the machine hits them alike. A tiny C loop (posix_spawn + waitpid, built
# here with $CC) times each batch; a shim's overhead is the median over the
# rounds of (shim batch - bash batch) per run. forge-shell is taken from the
# build tree next to this script, else from PATH ($FORGE_SHELL_BIN overrides).
set -eu

runs=${1:-2000}
batch=${2:-100}
target=0.75
case $runs$batch in *[!0-9]*) echo "usage: $0 [RUNS [BATCH]]" >&2; exit 64 ;; esac
if [ "$batch" -eq 0 ] || [ "$runs" -lt "$batch" ]; then
	echo "$0: RUNS must be >= BATCH > 0" >&2
	exit 64
fi
rounds=$((runs / batch))

top=$(cd "$(dirname -- "$0")/.." && pwd)
find_helper() {
	if [ -x "$top/helpers/$1" ]; then
		printf '%s\n' "$top/helpers/$1"
	else
		command -v "$1" || { echo "$0: $1 not found (build it with make)" >&2; exit 69; }
	fi
}
forge_shell=${FORGE_SHELL_BIN:-$(find_helper forge-shell)}
forge_netrule=${FORGE_NETRULE_BIN:-$(find_helper forge-netrule)}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

cat >"$tmp/timer.c" <<'EOF'
/* timer N INPUT PROG ARG...: runs PROG N times (stdin from INPUT unless "-",
 * stdout to /dev/null) and prints the mean wall time per run in ns. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

int main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	struct timespec t0, t1;
	long i, n;
	int status;
	pid_t pid;

	if (argc < 4 || (n = atol(argv[1])) <= 0)
		return 64;
	if (posix_spawn_file_actions_init(&fa) != 0
	    || posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) != 0
	    || (strcmp(argv[2], "-") != 0
	        && posix_spawn_file_actions_addopen(&fa, 0, argv[2], O_RDONLY, 0) != 0))
		return 70;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++) {
		if (posix_spawn(&pid, argv[3], &fa, NULL, argv + 3, environ) != 0) {
			perror(argv[3]);
			return 70;
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "timer: %s failed\n", argv[3]);
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.0f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n);
	return 0;
}
EOF
"${CC:-cc}" -O2 -o "$tmp/timer" "$tmp/timer.c" || { echo "$0: cannot build the timer with ${CC:-cc}" >&2; exit 69; }

printf '#!/bin/sh\nexec /bin/bash "$@"\n' >"$tmp/shim"
chmod +x "$tmp/shim"
unset FORGE_SANDBOX_CONTAINER

# time_batch VARIANT: one batch, mean ns per run, appended to $tmp/times.VARIANT.
time_batch() {
	case $1 in
	bash) "$tmp/timer" "$batch" - /bin/bash -c true ;;
	forge) FORGE_HOST_SHELL=/bin/bash "$tmp/timer" "$batch" - "$forge_shell" -c true ;;
	shim) "$tmp/timer" "$batch" - "$tmp/shim" -c true ;;
	esac >>"$tmp/times.$1"
}

# median FILE: the median of the numbers in FILE, one per line.
median() {
	sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Warm the page cache and the dynamic loader's caches before measuring.
for variant in bash forge shim; do "$tmp/timer" 20 - /bin/true >/dev/null; time_batch "$variant"; : >"$tmp/times.$variant"; done

round=0
while [ "$round" -lt "$rounds" ]; do
	case $((round % 3)) in  # rotate the order, so none always runs first
	0) time_batch bash; time_batch forge; time_batch shim ;;
	1) time_batch forge; time_batch shim; time_batch bash ;;
	2) time_batch shim; time_batch bash; time_batch forge ;;
	esac
	round=$((round + 1))
done

# Paired differences: round r of a shim against round r of bash.
paste "$tmp/times.forge" "$tmp/times.bash" | awk '{ print $1 - $2 }' >"$tmp/over.forge"
paste "$tmp/times.shim" "$tmp/times.bash" | awk '{ print $1 - $2 }' >"$tmp/over.shim"

awk -v runs="$rounds" -v batch="$batch" -v target="$target" -v binary="$forge_shell" \
	-v bash="$(median "$tmp/times.bash")" -v forge="$(median "$tmp/times.forge")" \
	-v shim="$(median "$tmp/times.shim")" \
	-v forge_over="$(median "$tmp/over.forge")" -v shim_over="$(median "$tmp/over.shim")" 'BEGIN {
	printf "forge-shell: %s\n", binary
	printf "%d runs per variant (%d interleaved batches of %d); median wall time per run\n", runs * batch, runs, batch
	printf "  %-50s %8.1f us\n", "bash -c true", bash / 1000
	printf "  %-50s %8.1f us   overhead %7.1f us\n", "forge-shell -c true (FORGE_HOST_SHELL=/bin/bash)", forge / 1000, forge_over / 1000
	printf "  %-50s %8.1f us   overhead %7.1f us\n", "#!/bin/sh shim -c true (exec /bin/bash \"$@\")", shim / 1000, shim_over / 1000
	ratio = shim_over > 0 ? forge_over / shim_over : 0
	printf "forge-shell overhead / shim overhead: %.2f (target <= %.2f: %s)\n", ratio, target, ratio <= target ? "met" : "MISSED"
}'

awk 'BEGIN { for (i = 0; i < 10000; i++) printf "host%d.example%d.com\n", i, i % 97 }' >"$tmp/entries"
"$tmp/timer" 3 "$tmp/entries" "$forge_netrule" >/dev/null
: >"$tmp/times.netrule"
i=0
while [ "$i" -lt 20 ]; do "$tmp/timer" 1 "$tmp/entries" "$forge_netrule" >>"$tmp/times.netrule"; i=$((i + 1)); done
awk -v t="$(median "$tmp/times.netrule")" 'BEGIN { printf "forge-netrule, 10000 entries on stdin: %.2f ms (median of 20 runs)\n", t / 1e6 }'
