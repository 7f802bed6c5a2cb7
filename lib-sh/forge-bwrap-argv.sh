# forge-bwrap-argv.sh — the bwrap argv as the namespace backend's renderer
# builds it (forge_bwrap_plan: whole options, one a line, escaped so that any
# argument is carried) and as bwrap reads it: NUL-separated, the options
# through --args (forge_bwrap_argv_print).
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_bwrap_add ARG...: appends ARGs, whole bwrap options, to
# forge_bwrap_plan: one a line as printf's %b reads it (a backslash doubled,
# a newline as \n), so that any argument but one with a NUL byte is carried
# (forge_bwrap_argv_print writes them NUL-separated). An "--args FD" that
# starts a call is the line "\args FD", which no argument's line can be
# (bwrap reads --args only from its command line: forge_bwrap_argv_print).
forge_bwrap_add() {
	local arg rest word
	if [ "${1-}" = --args ]; then
		forge_is_uint "$2" || forge_die 70 "forge_bwrap_add: --args takes an fd, not '$2'"
		forge_bwrap_plan=$forge_bwrap_plan'\args '$2'
'
		shift 2
	fi
	for arg in "$@"; do
		case $arg in
		*\\*)
			rest=$arg word=
			while :; do
				case $rest in
				*\\*) word=$word${rest%%\\*}"\\\\" rest=${rest#*\\} ;;
				*) word=$word$rest; break ;;
				esac
			done
			arg=$word
			;;
		esac
		case $arg in
		*'
'*)
			rest=$arg word=
			while :; do
				case $rest in
				*'
'*) word=$word${rest%%'
'*}'\n' rest=${rest#*'
'} ;;
				*) word=$word$rest; break ;;
				esac
			done
			arg=$word
			;;
		esac
		forge_bwrap_plan=$forge_bwrap_plan$arg'
'
	done
}

# forge_bwrap_argv_print [launch]: writes the argv forge_bwrap_render made
# to standard output, each argument followed by a NUL byte: "bwrap", its
# options, then the command (the init serving the exec socket). With
# "launch": the options only, for "bwrap --args FD COMMAND", each --args FD
# among them replaced by the NUL-separated arguments FD holds (the caller
# opens it), since bwrap reads --args only from its command line.
forge_bwrap_argv_print() {
	local arg fd rest
	[ "${1-}" = launch ] || printf 'bwrap\000'
	rest=$forge_bwrap_plan
	while [ -n "$rest" ]; do
		arg=${rest%%'
'*}
		rest=${rest#*'
'}
		case $arg in
		'\args '*)
			fd=${arg##* }
			if [ "${1-}" = launch ]; then
				cat <&"$fd" || return
			else
				printf -- '--args\000%s\000' "$fd"
			fi
			;;
		*) printf '%b\000' "$arg" ;;
		esac
	done
	[ "${1-}" = launch ] || printf '%s\000' "$forge_bwrap_init_path" serve "$forge_bwrap_sock_fd"
}
