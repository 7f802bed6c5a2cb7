#!/bin/sh
# bench/profile.sh — where one forge-verify run spends its time, by function:
# runs it once under bash's xtrace with the time and the call stack on every
# line, and charges the time until the next line to the outermost DEPTH
# functions of the stack (1, the default: the functions forge-verify's own
# code calls, each with all it calls; "-" is its own top-level code). Prints
# the heaviest in ms and as a share of the run: tracing slows the shell, so
# the shares say more than the milliseconds. Run it in the repository to
# verify:
#
#   bench/profile.sh [-d DEPTH] [-n LINES] [--] [FORGE-VERIFY-ARGUMENT...]
#   e.g. bench/profile.sh -- -q --isolated --warm -- true
#
# (from an out-of-tree build folder: ../bench/profile.sh). env: FORGE_VERIFY.
set -eu
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
depth=1 lines=20
while [ "$#" -gt 0 ]; do
	case $1 in
	-d) depth=$2; shift 2 ;;
	-n) lines=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
bench_forge_verify
trace=$(mktemp "${TMPDIR:-/tmp}/forge-profile.XXXXXX")
trap 'rm -f -- "$trace"' EXIT
# bash takes PS4 from a script, never from the environment when run as root.
# The stack is FUNCNAME, innermost first; "source" is forge-verify itself.
# shellcheck disable=SC2016 # for bash, not this shell
bash -c 'PS4="+\${EPOCHREALTIME} \${FUNCNAME[@]}|"; set -x; . "$0"' "$FORGE_VERIFY" "$@" >/dev/null 2>"$trace" || :
awk -v depth="$depth" -v lines="$lines" '
	# A trace line: "+" once per subshell level, the time, the stack, "|",
	# the command. Lines of a multi-line command follow without a "+".
	match($0, /^\++[0-9]+\.[0-9]+ [^|]*\|/) {
		s = substr($0, 1, RLENGTH - 1)
		sub(/^\++/, "", s)
		t = substr(s, 1, index(s, " ") - 1) + 0
		n = split(substr(s, index(s, " ") + 1), f, " ")
		# Outermost first, forge-verify ("source") and bash -c ("main") left out.
		k = ""
		m = 0
		for (i = n; i >= 1 && m < depth; i--) {
			if (f[i] == "source" || f[i] == "main") continue
			k = k (m ? " > " : "") f[i]
			m++
		}
		if (k == "") k = "-"
		if (first == "") first = t
		if (cur != "") ms[cur] += (t - since) * 1000
		cur = k
		since = t
		last = t
	}
	END {
		if (cur != "") ms[cur] += (last - since) * 1000
		total = (last - first) * 1000
		printf "%.1f ms traced in all (tracing slows the shell down)\n", total
		for (k in ms) printf "%8.1f ms %5.1f%%  %s\n", ms[k], (total > 0) ? 100 * ms[k] / total : 0, k | ("sort -rn | head -n " lines)
	}' "$trace"
