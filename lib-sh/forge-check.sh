# forge-check.sh — a sandbox proves it contains (SPEC 4.6): forge-probe
# runs inside the running sandbox, through the same exec path as
# `forge-sandbox exec`, against canaries forge sets up outside it: a file
# outside every mount, listeners on the host's loopback and own addresses.
# The host, not the probe, has the last word where it can: a listener that
# saw a connection, a probe file left behind, a secret's value found in what
# the probe wrote out, each make a probe count as got through, whatever the
# probe said.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_check_probes fast|all: prints the probes, "NAME:CLASS" words, in
# the order they are reported. The fast ones (filesystem, network,
# seccomp) are what up runs.
forge_check_probes() {
	if [ "$1" = fast ]; then
		printf '%s\n' 'canary:filesystem forge-dir:filesystem loopback:network non-public:network outside-allow-list:network unshare:kernel mount:kernel keyctl:kernel bpf:kernel io_uring_setup:kernel'
	else
		printf '%s\n' 'canary:filesystem forge-dir:filesystem hooks:git config:git commondir:git alternates:git proc-sys:kernel loopback:network non-public:network outside-allow-list:network secret:secrets tty:process unshare:kernel mount:kernel keyctl:kernel bpf:kernel io_uring_setup:kernel'
	fi
}

# forge_check_find ROOT NAME: sets forge_check_backend to the backend of the
# running sandbox NAME of the worktree ROOT: bwrap when its namespace sandbox
# runs, else msb when msb knows NAME. Exits 69 when there is none.
forge_check_find() {
	if forge_bwrap_exists "$2"; then
		forge_bwrap_running "$2" ||
			forge_die 69 "the namespace sandbox $2 of $1 is not running (start it with: forge-sandbox up)"
		forge_check_backend=bwrap
		return 0
	fi
	forge_msb_find || forge_die 69 "no sandbox for $1 (start one with: forge-sandbox up)"
	forge_msb_status "$2"
	[ -n "$forge_msb_status" ] || forge_die 69 "no sandbox for $1 (start one with: forge-sandbox up)"
	forge_check_backend=msb
}

# forge_check ROOT NAME BACKEND [fast]: runs the probes (with fast, only
# the fast ones) against the running sandbox NAME of the worktree ROOT on
# BACKEND, after forge_sandbox_prepare ROOT NAME (its mounts, egress and
# secrets). Sets forge_check_results to one "NAME<TAB>CLASS<TAB>held|escaped
# <TAB>DETAIL" line per probe (DETAIL printable) and forge_check_escaped to
# the names of the probes that got through, space-separated. Returns 0 when
# every probe held, 1 otherwise; exits 70 when the probes could not run. All
# it makes on the host is gone when it returns, also after a signal.
forge_check() {
	local line rc
	rc=0
	forge_check_results=$(forge_check_run "$@") || rc=$?
	case $rc in
	0 | 1) ;;
	*) exit "$rc" ;;
	esac
	forge_check_escaped=
	while IFS= read -r line; do
		case $line in
		*'	'*'	escaped	'*) forge_check_escaped=$forge_check_escaped${forge_check_escaped:+ }${line%%'	'*} ;;
		esac
	done <<EOF
$forge_check_results
EOF
	[ -z "$forge_check_escaped" ]
}

# forge_check_run ROOT NAME BACKEND [fast]: the work of forge_check; runs in
# a subshell, with traps of its own (the caller's stay as they are); prints
# the result lines, exits 0 (all held), 1 (some got through) or 69/70/73.
forge_check_run() {
	local addr backend boot common gitdir leftovers mode name nl nonce path port probe root tag timeout which status
	root=$1 name=$2 backend=$3 mode=${4:-all}
	# What the probe writes out may hold a secret's value: owner-only.
	umask 077
	forge_libexec_path forge-probe
	probe=$forge_libexec
	[ -x "$probe" ] || forge_die 69 "forge-probe is not installed ($probe)"
	if ! forge_is_real_dir "$root/.forge"; then
		forge_die 73 "$root/.forge is not a folder: the probe cannot be placed where the sandbox sees it"
	fi
	forge_ck_work='' forge_ck_bin='' forge_ck_listener='' nl='
'
	trap 'forge_check_cleanup' EXIT
	trap 'forge_check_cleanup; exit 129' HUP
	trap 'forge_check_cleanup; exit 130' INT
	trap 'forge_check_cleanup; exit 143' TERM

	# The canary and the listeners' files: a private folder outside every
	# mount, passable (not listable) so the sandbox's user could reach the
	# canary if it were there.
	forge_check_place
	forge_ck_work=$(umask 077 && mktemp -d "$forge_check_place/forge-check.XXXXXX") ||
		forge_die 73 "cannot create a folder in $forge_check_place"
	chmod 0711 -- "$forge_ck_work" || forge_die 73 "cannot set the mode of $forge_ck_work"
	nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n') || nonce=
	[ "${#nonce}" -eq 16 ] || forge_die 70 "cannot read /dev/urandom"
	(umask 022 && printf '%s\n' "$nonce" >"$forge_ck_work/canary") || forge_die 73 "cannot write $forge_ck_work/canary"

	# The probe goes into .forge, which both backends mount read-only at
	# the same path: made here with a name of its own, never through a link.
	forge_ck_bin=$(mktemp "$root/.forge/forge-probe.XXXXXX") || forge_die 73 "cannot create the probe in $root/.forge"
	{ cat -- "$probe" >"$forge_ck_bin" && chmod 0755 -- "$forge_ck_bin"; } || forge_die 73 "cannot write $forge_ck_bin"

	# The listeners: their ports come through a FIFO, which the listener
	# closes once it listens.
	mkfifo -m 600 -- "$forge_ck_work/ports" || forge_die 73 "cannot create $forge_ck_work/ports"
	"$probe" listen "$forge_ck_work/hits" "$nonce" <&- >"$forge_ck_work/ports" 2>"$forge_ck_work/listen.err" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	forge_ck_listener=$!
	set -- run --nonce "$nonce" --canary "$forge_ck_work/canary" --forge-dir "$root/.forge" --seccomp
	while read -r tag addr port; do
		case $tag in
		loopback) set -- "$@" --loopback "$addr:$port" ;;
		private) set -- "$@" --private "$addr:$port" ;;
		outside) [ -z "$forge_sandbox_egress" ] || set -- "$@" --outside "$addr:$port" ;;
		esac
	done <"$forge_ck_work/ports"
	case " $* " in *' --loopback '*) ;; *) forge_die 70 "forge-probe could not listen on the host: $(cat -- "$forge_ck_work/listen.err" 2>/dev/null)" ;; esac

	# What the probes must leave as they found it.
	forge_git_common_dir "$root" || forge_die 69 "cannot find the git common dir of $root"
	common=$forge_common_dir
	gitdir=$(forge_git -C "$root" rev-parse --absolute-git-dir) || forge_die 69 "cannot find the git dir of $root"
	leftovers=$root/.forge/forge-probe.$nonce$nl
	if [ "$mode" != fast ]; then
		set -- "$@" --hooks "$common/hooks" --config "$common/config" --commondir "$gitdir/commondir" \
			--alternates "$common/objects/info/alternates" --proc-sys --tty
		[ -z "$forge_sandbox_secrets" ] || set -- "$@" --secrets
		leftovers=$leftovers$common/hooks/forge-probe.$nonce$nl
		[ -e "$gitdir/commondir" ] || [ -L "$gitdir/commondir" ] || leftovers=$leftovers$gitdir/commondir$nl
		[ -e "$common/objects/info/alternates" ] || [ -L "$common/objects/info/alternates" ] ||
			leftovers=$leftovers$common/objects/info/alternates$nl
	fi

	# Through the exec path of forge-sandbox exec, bounded in time and in
	# what it may write here (64 MiB of stderr: a probe that writes more
	# dies of SIGPIPE and counts as not run); no terminal in.
	forge_helper_path forge-timeout
	timeout=$forge_helper
	if [ "$backend" = bwrap ]; then
		forge_helper_path forge-shell
		set -- "$timeout" -k 2 30 "$forge_helper" --exec-kill-group "$forge_ck_bin" "$@"
	else
		forge_msb_require
		set -- "$timeout" -k 2 30 "$forge_msb" exec --quiet "$name" --no-tty -w "$root" -- "$forge_ck_bin" "$@"
	fi
	echo 70 >"$forge_ck_work/status"
	{
		status=0
		(cd "$root" && FORGE_SANDBOX_CONTAINER=$name exec "$@") </dev/null 2>&1 >"$forge_ck_work/out" 8>&- ||
			status=$?
		echo "$status" >"$forge_ck_work/status"
	} | head -c 67108864 >"$forge_ck_work/err"
	read -r status <"$forge_ck_work/status" || status=70
	if [ "$status" -ne 0 ] || [ ! -s "$forge_ck_work/out" ]; then
		forge_error "the containment probe did not run in $name (exit $status):"
		grep -av '^forge-probe: haystack ' "$forge_ck_work/err" | tail -n 5 | LC_ALL=C tr -d '\000-\010\013-\037\177' | sed 's/^/    /' >&2
		exit 70
	fi

	# The host's own evidence.
	: >"$forge_ck_work/overrides"
	[ -f "$forge_ck_work/hits" ] || : >"$forge_ck_work/hits"
	while read -r tag; do
		case $tag in
		loopback) printf 'loopback\tescaped\tthe host'\''s loopback listener saw a connection\n' ;;
		private) printf 'non-public\tescaped\ta listener on a host address saw a connection\n' ;;
		outside) printf 'outside-allow-list\tescaped\tthe listener for a name outside the list saw a connection\n' ;;
		esac
	done <"$forge_ck_work/hits" >>"$forge_ck_work/overrides"
	while [ -n "$leftovers" ]; do
		path=${leftovers%%"$nl"*}
		leftovers=${leftovers#*"$nl"}
		forge_check_remove "$path" || continue
		case $path in
		*/.forge/*) which=forge-dir ;;
		*/hooks/*) which=hooks ;;
		*/commondir) which=commondir ;;
		*) which=alternates ;;
		esac
		printf '%s\tescaped\t%s was left on the host (removed)\n' "$which" "$path" >>"$forge_ck_work/overrides"
	done
	[ -n "$forge_sandbox_egress" ] ||
		printf 'outside-allow-list\tna\topen egress: no allow-list to test\n' >>"$forge_ck_work/overrides"
	if [ "$mode" != fast ]; then
		if [ -z "$forge_sandbox_secrets" ]; then
			printf 'secret\tna\tno secret is configured\n' >>"$forge_ck_work/overrides"
		else
			forge_check_secrets "$forge_ck_work/err" >>"$forge_ck_work/overrides"
		fi
	fi
	# A microVM has a kernel of its own: what the kernel probes test is then
	# not the host's (the namespace backend shares the host's, always).
	if [ "$backend" = msb ] && read -r boot </proc/sys/kernel/random/boot_id; then
		printf 'kernel\tboot_id\t%s\n' "$boot" >>"$forge_ck_work/overrides"
	fi
	forge_check_verdicts "$(forge_check_probes "$mode")" "$forge_ck_work/overrides" "$forge_ck_work/out"
}

# forge_check_place: sets forge_check_place to the first of the state
# folder, TMPDIR and /tmp that lies outside every mount of the plan
# (forge_mounts); exits 73 when none does. When the sandbox runs as another
# user (root starting another user's worktree), /tmp comes first: that user
# could not pass root's own folders, and the canary must be one it could
# read if it saw it.
forge_check_place() {
	local dir line ok rest
	forge_xdg_dir state || forge_xdg=/nonexistent/.local/state
	set -- "$forge_xdg/forge" "${TMPDIR:-/tmp}" /tmp
	[ -z "${forge_bwrap_owner:-}" ] || set -- /tmp "$@"
	for dir in "$@"; do
		(umask 077 && mkdir -p -- "$dir") 2>/dev/null || continue
		forge_canon_dir "$dir" || continue
		dir=$forge_canon ok=1
		rest=$forge_mounts
		[ -z "${forge_mounts_project_held:-}" ] || rest="${rest}ro $forge_mounts_project_held
"
		while IFS= read -r line; do
			[ -n "$line" ] && forge_path_within "$dir" "${line#* }" && ok= && break
		done <<EOF
$rest
EOF
		[ -z "$ok" ] || { forge_check_place=$dir; return 0; }
	done
	forge_die 73 "no folder outside the sandbox's mounts for the canary (tried the state folder, TMPDIR and /tmp)"
}

# forge_check_remove PATH: removes PATH, a file a probe may have made, when
# it is there (true), never through a link: the folder holding it may be
# the sandbox's doing, so find acts relative to that folder, unfollowed.
forge_check_remove() {
	local base
	[ -e "$1" ] || [ -L "$1" ] || return 1
	base=${1##*/}
	find "${1%/*}" -mindepth 1 -maxdepth 1 -name "$base" ! -type d -delete 2>/dev/null ||
		forge_warn "cannot remove $1, which a probe left"
	return 0
}

# forge_check_secrets HAYSTACK: an override line for the secrets probe:
# escaped when the value of a configured secret (taken from this process's
# environment; it never goes into the sandbox) is in HAYSTACK, what the
# probe wrote out; else "host" (held, if the probe answered).
forge_check_secrets() {
	local env
	while IFS= read -r env; do
		env=${env%%@*}
		forge_env_name_valid "$env" || continue
		# The value through a pipe, never on a command line or on disk; each
		# of its lines a fixed string (an empty one would match anything).
		if printenv "$env" 2>/dev/null | sed '/^$/d' | grep -qaF -f - -- "$1"; then
			printf 'secret\tescaped\tthe value of %s is visible inside\n' "$env"
			return 0
		fi
	done <<EOF
$forge_sandbox_secrets
EOF
	printf 'secret\thost\tthe value of no configured secret is visible inside\n'
}

# forge_check_verdicts WANT OVERRIDES OUT: prints the result lines of the
# probes in WANT ("NAME:CLASS" words) from OUT, the probe's output, and
# OVERRIDES, the host's evidence ("NAME<TAB>escaped|na|host<TAB>DETAIL"; for
# an msb sandbox also "kernel<TAB>boot_id<TAB>ID", the host kernel's boot id):
# escaped wins over what the probe said; na (nothing to test) is held; the
# secrets probe holds only when the probe left it to the host ("host") and
# the host found no value; on a microVM whose boot id (the probe's first
# line) is not the host's, the kernel probes test the guest's kernel: held. A probe OUT does not answer got through; the
# class is the one WANT gives. Exits 0 when every probe held, else 1.
forge_check_verdicts() {
	head -c 65536 -- "$3" | LC_ALL=C awk -F '\t' -v want="$1" '
		function clean(s) { gsub(/[^ -~]/, "?", s); return substr(s, 1, 300) }
		FILENAME != "-" { if (!($1 in ov) || $2 == "escaped") ov[$1] = $2; od[$1] = (od[$1] != "") ? od[$1] "; " $3 : $3; next }
		$1 == "boot_id" && $3 == "info" && !("boot_id" in seen) { seen["boot_id"] = 1; boot = $4; next }
		!($1 in verdict) && ($3 == "held" || $3 == "escaped" || $3 == "host") { verdict[$1] = $3; detail[$1] = $4 }
		END {
			n = split(want, w, " "); bad = 0
			for (i = 1; i <= n; i++) {
				split(w[i], nc, ":"); name = nc[1]; o = ov[name]
				if (o == "na") { v = "held"; d = od[name] }
				else if (!(name in verdict)) { v = "escaped"; d = "no answer from the probe" }
				else {
					v = verdict[name]; d = detail[name]
					if (name == "secret") v = (v == "host" && o == "host") ? "held" : "escaped"
					else if (v == "host") v = "escaped"
				}
				if (o == "escaped") v = "escaped"
				if (o == "escaped" || o == "host") d = od[name] "; " d
				if (nc[2] == "kernel" && ov["kernel"] == "boot_id" && boot != "" && boot != od["kernel"] && o != "escaped") {
					v = "held"; d = "the sandbox runs a kernel of its own (a microVM), not the host'"'"'s: " d
				}
				if (v != "held") bad = 1
				printf "%s\t%s\t%s\t%s\n", name, nc[2], v, clean(d)
			}
			exit bad
		}' "$2" -
}

# forge_check_cleanup: the EXIT trap of forge_check_run: stops the listener,
# removes the probe from .forge and the private folder.
forge_check_cleanup() {
	if [ -n "${forge_ck_listener:-}" ]; then
		kill "$forge_ck_listener" 2>/dev/null || :
		wait "$forge_ck_listener" 2>/dev/null || :
		forge_ck_listener=
	fi
	[ -z "${forge_ck_bin:-}" ] || rm -f -- "$forge_ck_bin"
	forge_ck_bin=
	[ -z "${forge_ck_work:-}" ] || forge_rm_tree "$forge_ck_work"
	forge_ck_work=
}

# forge_check_print NAME BACKEND JSON: prints forge_check_results for
# people (JSON 0) or as the JSON document of SPEC 4.6 (JSON 1), and names
# each probe that got through on stderr.
forge_check_print() {
	local class line name
	if [ "$3" = 1 ]; then
		set -- "$1" "$2"
		while IFS= read -r line; do
			[ -n "$line" ] || continue
			name=${line%%'	'*} line=${line#*'	'}
			class=${line%%'	'*} line=${line#*'	'}
			set -- "$@" "$name" "$class" "${line%%'	'*}" "${line#*'	'}"
		done <<EOF
$forge_check_results
EOF
		jq -cn '$ARGS.positional as $a
			| [range(2; $a | length; 4) as $i | {name: $a[$i], class: $a[$i + 1], held: ($a[$i + 2] == "held"), detail: $a[$i + 3]}]
			| {sandbox: $a[0], backend: $a[1], held: all(.[]; .held), probes: .}' --args -- "$@" ||
			forge_die 70 "jq failed while printing the probes"
	else
		printf '%s\n' "$forge_check_results" | awk -F '\t' -v n="$1" -v b="$2" '
			NR == 1 { printf "containment probes of %s (%s):\n", n, b }
			{ printf "  %-8s %-11s %-19s %s\n", ($3 == "held" ? "held" : "ESCAPED"), $2, $1, $4 }'
	fi
	for name in $forge_check_escaped; do
		line=$(printf '%s\n' "$forge_check_results" | awk -F '\t' -v n="$name" '$1 == n { print $2 ": " $4; exit }')
		forge_error "probe $name got through (${line%%:*}):${line#*:}"
	done
}

# forge_check_up ROOT NAME: the fast probes against the namespace sandbox
# NAME that up has just created or adopted (after forge_sandbox_prepare). A
# sandbox that fails one is removed, and up exits 70 naming the probes: it
# is never handed out.
forge_check_up() {
	forge_check "$1" "$2" bwrap fast && return 0
	forge_error "$2 failed its containment probes ($forge_check_escaped); removing it:"
	printf '%s\n' "$forge_check_results" | awk -F '\t' '$3 != "held" { printf "    %s (%s): %s\n", $1, $2, $4 }' >&2
	forge_bwrap_remove "$2"
	forge_sandbox_record_remove "$1" "$2"
	forge_sandbox_unlock "$2"
	exit 70
}
