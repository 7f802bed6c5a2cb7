# forge-core.sh — messages, exit codes, small validators and clocks shared by
# every forge program. Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# Exit codes (SPEC section 2; sysexits where one fits).
# 0 ok/PASS, 1 FAIL, 2 breaker open, 64 usage, 65 bad data, 69 unavailable,
# 70 internal, 73 cannot create, 74 copy not faithful, 75 temporary failure.

# Messages go to stderr as "PROG: message"; forge_prog names the program.
# A message may name a step, a path or what a program said: it is shown as
# forge_message shows it, never obeyed by the terminal.
forge_say() { forge_message "${forge_prog:-forge}: " "$*"; }
forge_warn() { [ "${forge_quiet:-0}" = 1 ] || forge_message "${forge_prog:-forge}: warning: " "$*"; }
forge_error() { forge_message "${forge_prog:-forge}: error: " "$*"; }

# forge_die CODE MESSAGE: report an error and exit with CODE.
forge_die() {
	local code
	code=$1
	shift
	forge_error "$*"
	exit "$code"
}

# forge_usage_error MESSAGE: a usage error (64) with a pointer to --help.
forge_usage_error() {
	forge_error "$*"
	printf "Try '%s --help' for more information.\n" "${forge_prog:-forge}" >&2
	exit 64
}

# forge_help FILE: print the leading "# " comment block of FILE after its
# shebang (the Usage/Summary text that lives next to the code).
forge_help() {
	sed -n '2,/^[^#]/{/^#/!q;s/^# \{0,1\}//;p;}' "$1"
}

# forge_require_tool NAME...: exit 69 when a required program is missing.
forge_require_tool() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 ||
			forge_die 69 "required program '$tool' not found on PATH"
	done
}

# forge_find_program NAME: sets forge_program to the first NAME on PATH that
# is an executable regular file, looking in absolute PATH elements only: an
# empty or relative element (the current directory, maybe a hostile work
# tree) is skipped, so a program planted there never runs (SPEC 4.4). An
# unset PATH means /usr/local/bin:/usr/bin:/bin. forge-shell applies the
# same rule in C. Returns 1 when there is none.
forge_find_program() {
	local dir path
	forge_program=
	path=${PATH-/usr/local/bin:/usr/bin:/bin}
	while :; do
		dir=${path%%:*}
		case $dir in
		/*)
			if [ -f "$dir/$1" ] && [ -x "$dir/$1" ]; then
				forge_program=$dir/$1
				return 0
			fi
			;;
		esac
		case $path in
		*:*) path=${path#*:} ;;
		*) return 1 ;;
		esac
	done
}

# forge_is_uint VALUE: true for a non-empty string of decimal digits.
forge_is_uint() {
	case $1 in '' | *[!0-9]*) return 1 ;; esac
}

# forge_is_count VALUE: a whole number the shell can compare: 1 to 18
# decimal digits (a hostile state file may hold anything).
forge_is_count() {
	forge_is_uint "$1" && [ "${#1}" -le 18 ]
}

# forge_is_seconds VALUE: a time limit forge-timeout accepts (SPEC 5.3), and
# not 0: a plain decimal number of seconds (5, 0.5, .25, 5.) from 0.001 to
# less than 1000000000; no sign, exponent or unit. forge-timeout(1) applies
# the same rule, and the configuration's "seconds" type (forge-config.sh)
# its JSON form.
forge_is_seconds() {
	local whole frac
	case $1 in
	'' | . | *[!0-9.]* | *.*.*) return 1 ;;
	esac
	whole=${1%%.*} frac=
	case $1 in *.*) frac=${1#*.} ;; esac
	while :; do
		case $whole in 0*) whole=${whole#0} ;; *) break ;; esac
	done
	[ "${#whole}" -le 9 ] || return 1
	[ -z "$whole" ] || return 0
	# Below one second: the first three decimals must not all be 0.
	case ${frac}000 in 000*) return 1 ;; esac
}

# forge_valid_change_id ID: IDs match [A-Za-z0-9._-]{1,64} and are not
# made of dots only (".", ".." would name hidden files or folders).
forge_valid_change_id() {
	case $1 in '' | *[!A-Za-z0-9._-]*) return 1 ;; esac
	case $1 in *[!.]*) ;; *) return 1 ;; esac
	[ "${#1}" -le 64 ]
}

# forge_clock: sets forge_ts (RFC 3339 UTC), forge_stamp (compact, sortable),
# forge_ms (wall-clock milliseconds since the epoch) and forge_mono_ms
# (milliseconds of a clock that never goes back, for durations) from one
# reading of
# forge-state now: a process cheaper than date(1), and one per reading.
forge_clock() {
	local out rest
	forge_helper_path forge-state
	out=$("$forge_helper" now) || forge_die 70 "cannot read the clock (forge-state now)"
	# Four words, one space between each: TS STAMP MS MONO.
	case $out in
	*' '*' '*' '*' '* | ' '* | *' ' | *'  '*) forge_die 70 "forge-state now printed '$out'" ;;
	?*' '?*' '?*' '?*) ;;
	*) forge_die 70 "forge-state now printed '$out'" ;;
	esac
	forge_ts=${out%% *} rest=${out#* }
	forge_stamp=${rest%% *} rest=${rest#* }
	forge_ms=${rest%% *} forge_mono_ms=${rest#* }
}

# forge_ms_now: sets forge_mono_ms only (the monotonic milliseconds of
# forge_clock), for a duration.
forge_ms_now() {
	local out
	forge_helper_path forge-state
	out=$("$forge_helper" now) || forge_die 70 "cannot read the clock (forge-state now)"
	forge_mono_ms=${out##* }
	forge_is_count "$forge_mono_ms" || forge_die 70 "forge-state now printed '$out'"
}

# forge_fmt_secs MS: prints MS as seconds with one decimal (1234 -> 1.2s).
forge_fmt_secs() {
	printf '%d.%ds' "$(($1 / 1000))" "$((($1 % 1000) / 100))"
}

# --- text forge shows but did not write ------------------------------------
# Step output, names and commands from a configuration, paths from a
# repository, what git, msb or docker said: shown on a terminal, never obeyed
# by it. One rule for all of it (SPEC 3.2): every control character but tab
# (C0 and newline where one line is expected, DEL, and C1, U+0080-U+009F:
# ESC and CSI start escape sequences) is shown in the notation of cat -v:
# ESC as ^[, CR as ^M, DEL as ^?, CSI (U+009B) as M-^[. Bytes that are not
# UTF-8 become U+FFFD. Logs keep the raw bytes; only what is printed changes.

# forge_printable_def: sets forge_printable_jq to the jq definition of that
# rule, `printable` (a string to a string), for the jq programs that print
# such text themselves, and forge_plain_chars to the characters a message
# may hold and be printed as it is (printable ASCII and tab): anything else
# goes through jq. (A function: sourcing the library sets no variable.)
forge_printable_def() {
	forge_printable_jq='def printable:
	if test("[\u0000-\u0008\u000a-\u001f\u007f-\u009f]") then
		[explode[] | if . == 9 then "\t"
			elif . < 32 then "^" + ([. + 64] | implode)
			elif . == 127 then "^?"
			elif . >= 128 and . < 160 then "M-^" + ([. - 64] | implode)
			else [.] | implode end] | add
	else . end;'
	forge_plain_chars=' !"#$%&'"'"'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\]^_`abcdefghijklmnopqrstuvwxyz{|}~	'
}

# forge_printable: copies standard input to standard output as one line:
# the rule above, newlines included (a name or command spread over lines
# could print a line of forge's own, "Verdict: PASS"). Ends with a newline.
forge_printable() {
	forge_printable_def
	jq -R -r -s "$forge_printable_jq"' printable'
}

# forge_printable_lines [PREFIX]: copies standard input to standard output
# line by line as it comes (for a stream), each line after PREFIX and shown
# by the rule above. A last line without its newline gets one.
forge_printable_lines() {
	forge_printable_def
	jq -R -r --unbuffered --arg p "${1:-}" "$forge_printable_jq"' $p + printable'
}

# forge_message PREFIX TEXT: prints PREFIX and TEXT on stderr, TEXT shown by
# the rule above, its lines kept, every one after the first indented (so no
# line of it can look like one of forge's own). Plain text is printed as it
# is, without starting jq; without jq, control characters become "?".
forge_message() {
	forge_printable_def
	case $2 in
	*[!"$forge_plain_chars"]*)
		if command -v jq >/dev/null 2>&1; then
			printf '%s' "$2" | jq -R -r -s --arg p "$1" \
				"$forge_printable_jq"' $p + (split("\n") | map(printable) | join("\n    "))' >&2
		else
			printf '%s%s\n' "$1" "$(printf '%s' "$2" | LC_ALL=C tr '\000-\010\012-\037\177-\237' '?')" >&2
		fi
		;;
	*) printf '%s%s\n' "$1" "$2" >&2 ;;
	esac
}

# forge_use_color: true when stdout is a terminal and NO_COLOR is unset.
forge_use_color() {
	[ -z "${NO_COLOR+set}" ] && [ -t 1 ]
}

# forge_xdg_dir KIND: sets forge_xdg to the base folder of KIND (state,
# cache, config or data): $XDG_<KIND>_HOME when it is absolute, else under
# $HOME when that is absolute, else under the passwd entry's home of the
# effective user. A relative XDG value is ignored, as the XDG Base Directory
# specification says. forge-shell applies the same rule in C. Returns 1 when
# no absolute home is found.
forge_xdg_dir() {
	local sub
	case $1 in
	state) forge_xdg=${XDG_STATE_HOME:-} sub=.local/state ;;
	cache) forge_xdg=${XDG_CACHE_HOME:-} sub=.cache ;;
	config) forge_xdg=${XDG_CONFIG_HOME:-} sub=.config ;;
	data) forge_xdg=${XDG_DATA_HOME:-} sub=.local/share ;;
	*) return 70 ;;
	esac
	case $forge_xdg in /*) return 0 ;; esac
	forge_xdg=${HOME:-}
	case $forge_xdg in
	/*) ;;
	*)
		forge_xdg=$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6) || forge_xdg=
		case $forge_xdg in /*) ;; *) forge_xdg= && return 1 ;; esac
		;;
	esac
	forge_xdg=${forge_xdg%/}/$sub
}
