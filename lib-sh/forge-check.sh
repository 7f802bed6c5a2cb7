# forge-check.sh — a sandbox proves it contains (SPEC 4.6): forge-probe
# runs inside the running sandbox, through the same exec path as
# `forge-sandbox exec`, against canaries forge sets up outside it: a file
# outside every mount, listeners on the host's loopback and own addresses.
# The host, not the probe, has the last word where it can: a listener that
# saw a connection, a probe file left behind, a secret's value found in what
# the probe wrote out, each make a probe count as got through, whatever the
# probe said.
# Part of forge.sh; source that, not this file.
# shellcheck shell=sh

# forge_check_probes fast|all: sets forge_ck_want to the probes, "NAME:CLASS",
# in the order they are reported. The fast ones (filesystem, network,
# seccomp) are what up runs.
forge_check_probes() {
	if [ "$1" = fast ]; then
		forge_ck_want='canary:filesystem forge-dir:filesystem loopback:network non-public:network outside-allow-list:network unshare:kernel mount:kernel keyctl:kernel bpf:kernel io_uring_setup:kernel'
	else
		forge_ck_want='canary:filesystem forge-dir:filesystem hooks:git config:git commondir:git alternates:git proc-sys:kernel loopback:network non-public:network outside-allow-list:network secret:secrets tty:process unshare:kernel mount:kernel keyctl:kernel bpf:kernel io_uring_setup:kernel'
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
	forge_ck_rc=0
	forge_check_results=$(forge_check_run "$@") || forge_ck_rc=$?
	case $forge_ck_rc in
	0 | 1) ;;
	*) exit "$forge_ck_rc" ;;
	esac
	forge_check_escaped=
	forge_ck_rest=$forge_check_results'
'
	while [ -n "$forge_ck_rest" ]; do
		forge_ck_line=${forge_ck_rest%%'
'*}
		forge_ck_rest=${forge_ck_rest#*'
'}
		case $forge_ck_line in
		*'	'*'	escaped	'*) forge_check_escaped=$forge_check_escaped${forge_check_escaped:+ }${forge_ck_line%%'	'*} ;;
		esac
	done
	[ -z "$forge_check_escaped" ]
}

# forge_check_run ROOT NAME BACKEND [fast]: the work of forge_check; runs in
# a subshell, with traps of its own (the caller's stay as they are); prints
# the result lines, exits 0 (all held), 1 (some got through) or 69/70/73.
forge_check_run() {
	forge_ck_root=$1 forge_ck_name=$2 forge_ck_backend=$3 forge_ck_mode=${4:-all}
	# What the probe writes out may hold a secret's value: owner-only.
	umask 077
	forge_libexec_path forge-probe
	forge_ck_probe=$forge_libexec
	[ -x "$forge_ck_probe" ] || forge_die 69 "forge-probe is not installed ($forge_ck_probe)"
	if [ -L "$forge_ck_root/.forge" ] || [ ! -d "$forge_ck_root/.forge" ]; then
		forge_die 73 "$forge_ck_root/.forge is not a folder: the probe cannot be placed where the sandbox sees it"
	fi
	forge_ck_work='' forge_ck_bin='' forge_ck_listener='' forge_ck_nl='
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
	forge_ck_nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n') || forge_ck_nonce=
	[ "${#forge_ck_nonce}" -eq 16 ] || forge_die 70 "cannot read /dev/urandom"
	(umask 022 && printf '%s\n' "$forge_ck_nonce" >"$forge_ck_work/canary") || forge_die 73 "cannot write $forge_ck_work/canary"

	# The probe goes into .forge, which both backends mount read-only at
	# the same path: made here with a name of its own, never through a link.
	forge_ck_bin=$(mktemp "$forge_ck_root/.forge/forge-probe.XXXXXX") || forge_die 73 "cannot create the probe in $forge_ck_root/.forge"
	{ cat -- "$forge_ck_probe" >"$forge_ck_bin" && chmod 0755 -- "$forge_ck_bin"; } || forge_die 73 "cannot write $forge_ck_bin"

	# The listeners: their ports come through a FIFO, which the listener
	# closes once it listens.
	mkfifo -m 600 -- "$forge_ck_work/ports" || forge_die 73 "cannot create $forge_ck_work/ports"
	"$forge_ck_probe" listen "$forge_ck_work/hits" "$forge_ck_nonce" <&- >"$forge_ck_work/ports" 2>"$forge_ck_work/listen.err" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	forge_ck_listener=$!
	set -- run --nonce "$forge_ck_nonce" --canary "$forge_ck_work/canary" --forge-dir "$forge_ck_root/.forge" --seccomp
	while read -r forge_ck_tag forge_ck_addr forge_ck_port; do
		case $forge_ck_tag in
		loopback) set -- "$@" --loopback "$forge_ck_addr:$forge_ck_port" ;;
		private) set -- "$@" --private "$forge_ck_addr:$forge_ck_port" ;;
		outside) [ -z "$forge_sandbox_egress" ] || set -- "$@" --outside "$forge_ck_addr:$forge_ck_port" ;;
		esac
	done <"$forge_ck_work/ports"
	case " $* " in *' --loopback '*) ;; *) forge_die 70 "forge-probe could not listen on the host: $(cat -- "$forge_ck_work/listen.err" 2>/dev/null)" ;; esac

	# What the probes must leave as they found it.
	forge_git_common_dir "$forge_ck_root" || forge_die 69 "cannot find the git common dir of $forge_ck_root"
	forge_ck_common=$forge_common_dir
	forge_ck_gitdir=$(forge_git -C "$forge_ck_root" rev-parse --absolute-git-dir) || forge_die 69 "cannot find the git dir of $forge_ck_root"
	forge_ck_leftovers=$forge_ck_root/.forge/forge-probe.$forge_ck_nonce$forge_ck_nl
	if [ "$forge_ck_mode" != fast ]; then
		set -- "$@" --hooks "$forge_ck_common/hooks" --config "$forge_ck_common/config" --commondir "$forge_ck_gitdir/commondir" \
			--alternates "$forge_ck_common/objects/info/alternates" --proc-sys --tty
		[ -z "$forge_sandbox_secrets" ] || set -- "$@" --secrets
		forge_ck_leftovers=$forge_ck_leftovers$forge_ck_common/hooks/forge-probe.$forge_ck_nonce$forge_ck_nl
		[ -e "$forge_ck_gitdir/commondir" ] || [ -L "$forge_ck_gitdir/commondir" ] || forge_ck_leftovers=$forge_ck_leftovers$forge_ck_gitdir/commondir$forge_ck_nl
		[ -e "$forge_ck_common/objects/info/alternates" ] || [ -L "$forge_ck_common/objects/info/alternates" ] ||
			forge_ck_leftovers=$forge_ck_leftovers$forge_ck_common/objects/info/alternates$forge_ck_nl
	fi

	# Through the exec path of forge-sandbox exec, bounded in time and in
	# what it may write here (64 MiB of stderr: a probe that writes more
	# dies of SIGPIPE and counts as not run); no terminal in.
	forge_helper_path forge-timeout
	forge_ck_timeout=$forge_helper
	if [ "$forge_ck_backend" = bwrap ]; then
		forge_helper_path forge-shell
		set -- "$forge_ck_timeout" -k 2 30 "$forge_helper" --exec-kill-group "$forge_ck_bin" "$@"
	else
		forge_msb_require
		set -- "$forge_ck_timeout" -k 2 30 "$forge_msb" exec --quiet "$forge_ck_name" --no-tty -w "$forge_ck_root" -- "$forge_ck_bin" "$@"
	fi
	echo 70 >"$forge_ck_work/status"
	{
		forge_ck_status=0
		(cd "$forge_ck_root" && FORGE_SANDBOX_CONTAINER=$forge_ck_name exec "$@") </dev/null 2>&1 >"$forge_ck_work/out" 8>&- ||
			forge_ck_status=$?
		echo "$forge_ck_status" >"$forge_ck_work/status"
	} | head -c 67108864 >"$forge_ck_work/err"
	read -r forge_ck_status <"$forge_ck_work/status" || forge_ck_status=70
	if [ "$forge_ck_status" -ne 0 ] || [ ! -s "$forge_ck_work/out" ]; then
		forge_error "the containment probe did not run in $forge_ck_name (exit $forge_ck_status):"
		grep -av '^forge-probe: haystack ' "$forge_ck_work/err" | tail -n 5 | LC_ALL=C tr -d '\000-\010\013-\037\177' | sed 's/^/    /' >&2
		exit 70
	fi

	# The host's own evidence.
	: >"$forge_ck_work/overrides"
	[ -f "$forge_ck_work/hits" ] || : >"$forge_ck_work/hits"
	while read -r forge_ck_tag; do
		case $forge_ck_tag in
		loopback) printf 'loopback\tescaped\tthe host'\''s loopback listener saw a connection\n' ;;
		private) printf 'non-public\tescaped\ta listener on a host address saw a connection\n' ;;
		outside) printf 'outside-allow-list\tescaped\tthe listener for a name outside the list saw a connection\n' ;;
		esac
	done <"$forge_ck_work/hits" >>"$forge_ck_work/overrides"
	while [ -n "$forge_ck_leftovers" ]; do
		forge_ck_path=${forge_ck_leftovers%%"$forge_ck_nl"*}
		forge_ck_leftovers=${forge_ck_leftovers#*"$forge_ck_nl"}
		forge_check_remove "$forge_ck_path" || continue
		case $forge_ck_path in
		*/.forge/*) forge_ck_which=forge-dir ;;
		*/hooks/*) forge_ck_which=hooks ;;
		*/commondir) forge_ck_which=commondir ;;
		*) forge_ck_which=alternates ;;
		esac
		printf '%s\tescaped\t%s was left on the host (removed)\n' "$forge_ck_which" "$forge_ck_path" >>"$forge_ck_work/overrides"
	done
	[ -n "$forge_sandbox_egress" ] ||
		printf 'outside-allow-list\tna\topen egress: no allow-list to test\n' >>"$forge_ck_work/overrides"
	if [ "$forge_ck_mode" != fast ]; then
		if [ -z "$forge_sandbox_secrets" ]; then
			printf 'secret\tna\tno secret is configured\n' >>"$forge_ck_work/overrides"
		else
			forge_check_secrets "$forge_ck_work/err" >>"$forge_ck_work/overrides"
		fi
	fi
	# A microVM has a kernel of its own: what the kernel probes test is then
	# not the host's (the namespace backend shares the host's, always).
	if [ "$forge_ck_backend" = msb ] && read -r forge_ck_boot </proc/sys/kernel/random/boot_id; then
		printf 'kernel\tboot_id\t%s\n' "$forge_ck_boot" >>"$forge_ck_work/overrides"
	fi
	forge_check_probes "$forge_ck_mode"
	forge_check_verdicts "$forge_ck_want" "$forge_ck_work/overrides" "$forge_ck_work/out"
}

# forge_check_place: sets forge_check_place to the first of the state
# folder, TMPDIR and /tmp that lies outside every mount of the plan
# (forge_mounts); exits 73 when none does. When the sandbox runs as another
# user (root starting another user's worktree), /tmp comes first: that user
# could not pass root's own folders, and the canary must be one it could
# read if it saw it.
forge_check_place() {
	forge_xdg_dir state || forge_xdg=/nonexistent/.local/state
	set -- "$forge_xdg/forge" "${TMPDIR:-/tmp}" /tmp
	[ -z "${forge_bwrap_owner:-}" ] || set -- /tmp "$@"
	for forge_cp_dir in "$@"; do
		(umask 077 && mkdir -p -- "$forge_cp_dir") 2>/dev/null || continue
		forge_canon_dir "$forge_cp_dir" || continue
		forge_cp_dir=$forge_canon forge_cp_ok=1
		forge_cp_rest=$forge_mounts
		[ -z "${forge_mounts_project_held:-}" ] || forge_cp_rest="${forge_cp_rest}ro $forge_mounts_project_held
"
		while [ -n "$forge_cp_rest" ]; do
			forge_cp_line=${forge_cp_rest%%'
'*}
			forge_cp_rest=${forge_cp_rest#*'
'}
			forge_path_within "$forge_cp_dir" "${forge_cp_line#* }" && forge_cp_ok= && break
		done
		[ -z "$forge_cp_ok" ] || { forge_check_place=$forge_cp_dir; return 0; }
	done
	forge_die 73 "no folder outside the sandbox's mounts for the canary (tried the state folder, TMPDIR and /tmp)"
}

# forge_check_remove PATH: removes PATH, a file a probe may have made, when
# it is there (true), never through a link: the folder holding it may be
# the sandbox's doing, so find acts relative to that folder, unfollowed.
forge_check_remove() {
	[ -e "$1" ] || [ -L "$1" ] || return 1
	forge_cr_base=${1##*/}
	find "${1%/*}" -mindepth 1 -maxdepth 1 -name "$forge_cr_base" ! -type d -delete 2>/dev/null ||
		forge_warn "cannot remove $1, which a probe left"
	return 0
}

# forge_check_secrets HAYSTACK: an override line for the secrets probe:
# escaped when the value of a configured secret (taken from this process's
# environment; it never goes into the sandbox) is in HAYSTACK, what the
# probe wrote out; else "host" (held, if the probe answered).
forge_check_secrets() {
	forge_cs_rest=$forge_sandbox_secrets
	while [ -n "$forge_cs_rest" ]; do
		forge_cs_env=${forge_cs_rest%%'
'*}
		forge_cs_rest=${forge_cs_rest#*'
'}
		forge_cs_env=${forge_cs_env%%@*}
		forge_env_name_valid "$forge_cs_env" || continue
		# The value through a pipe, never on a command line or on disk; each
		# of its lines a fixed string (an empty one would match anything).
		if printenv "$forge_cs_env" 2>/dev/null | sed '/^$/d' | grep -qaF -f - -- "$1"; then
			printf 'secret\tescaped\tthe value of %s is visible inside\n' "$forge_cs_env"
			return 0
		fi
	done
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
	# shellcheck disable=SC2016 # an awk program, not shell
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
	if [ "$3" = 1 ]; then
		set -- "$1" "$2"
		forge_cpr_rest=$forge_check_results'
'
		while [ -n "$forge_cpr_rest" ]; do
			forge_cpr_line=${forge_cpr_rest%%'
'*}
			forge_cpr_rest=${forge_cpr_rest#*'
'}
			[ -n "$forge_cpr_line" ] || continue
			forge_cpr_name=${forge_cpr_line%%'	'*} forge_cpr_line=${forge_cpr_line#*'	'}
			forge_cpr_class=${forge_cpr_line%%'	'*} forge_cpr_line=${forge_cpr_line#*'	'}
			set -- "$@" "$forge_cpr_name" "$forge_cpr_class" "${forge_cpr_line%%'	'*}" "${forge_cpr_line#*'	'}"
		done
		# shellcheck disable=SC2016 # a jq program, not shell
		jq -cn '$ARGS.positional as $a
			| [range(2; $a | length; 4) as $i | {name: $a[$i], class: $a[$i + 1], held: ($a[$i + 2] == "held"), detail: $a[$i + 3]}]
			| {sandbox: $a[0], backend: $a[1], held: all(.[]; .held), probes: .}' --args -- "$@" ||
			forge_die 70 "jq failed while printing the probes"
	else
		printf '%s\n' "$forge_check_results" | awk -F '\t' -v n="$1" -v b="$2" '
			NR == 1 { printf "containment probes of %s (%s):\n", n, b }
			{ printf "  %-8s %-11s %-19s %s\n", ($3 == "held" ? "held" : "ESCAPED"), $2, $1, $4 }'
	fi
	for forge_cpr_name in $forge_check_escaped; do
		forge_cpr_line=$(printf '%s\n' "$forge_check_results" | awk -F '\t' -v n="$forge_cpr_name" '$1 == n { print $2 ": " $4; exit }')
		forge_error "probe $forge_cpr_name got through (${forge_cpr_line%%:*}):${forge_cpr_line#*:}"
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
