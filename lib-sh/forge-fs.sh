# forge-fs.sh — the file system rules every part of forge follows: what is
# a real folder or file (never through a symbolic link of its own), how a
# tree is removed, how a file forge did not write is read.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_is_real_dir PATH, forge_is_real_file PATH: PATH is a folder, a
# regular file, and not through a symbolic link of its own.
forge_is_real_dir() { [ -d "$1" ] && [ ! -L "$1" ]; }
forge_is_real_file() { [ -f "$1" ] && [ ! -L "$1" ]; }

# forge_rm_tree PATH: removes PATH (a symbolic link itself, never what it
# points to), also when a step made parts of it read-only.
forge_rm_tree() {
	forge_path_exists "$1" || return 0
	rm -rf -- "$1" 2>/dev/null && return 0
	[ ! -L "$1" ] || return 1
	chmod -R u+rwx -- "$1" 2>/dev/null || :
	rm -rf -- "$1"
}

# forge_path_exists PATH: something is at PATH, a symbolic link that points
# nowhere included.
forge_path_exists() { [ -e "$1" ] || [ -L "$1" ]; }

# forge_clear_for_dir PATH, forge_clear_for_file PATH: makes room for a
# folder (a regular file) of forge's own at PATH: whatever else is there, a
# symbolic link (removed as a link, never followed), a FIFO, a file where a
# folder goes, is removed first. Returns 1 when it cannot be removed.
forge_clear_for_dir() {
	forge_path_exists "$1" && ! forge_is_real_dir "$1" || return 0
	forge_rm_tree "$1"
}
forge_clear_for_file() {
	forge_path_exists "$1" && ! forge_is_real_file "$1" || return 0
	forge_rm_tree "$1"
}

# forge_real_dir DIR: sets forge_real to the physical path of the folder DIR.
# Returns 1 when it cannot be entered. An absolute DIR none of whose parts is
# a symbolic link, "." or ".." is that path already: only test builtins then,
# no subshell (forge_repo_root runs this on every run).
forge_real_dir() {
	local name path rest
	forge_real=
	case $1 in
	/?*)
		rest=${1#/} path=
		while [ -n "$rest" ]; do
			name=${rest%%/*}
			case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
			case $name in '' | . | ..) path= && break ;; esac
			path=$path/$name
			[ ! -L "$path" ] || { path= && break; }
		done
		if [ -n "$path" ] && [ -d "$path" ] && [ -x "$path" ]; then
			forge_real=$path
			return 0
		fi
		;;
	esac
	forge_real=$(cd -P -- "$1" 2>/dev/null && pwd -P) && [ -n "$forge_real" ]
}

# forge_file_kind PATH: prints what PATH is, for a message.
forge_file_kind() {
	if [ -L "$1" ]; then echo 'a symbolic link'
	elif [ -d "$1" ]; then echo 'a folder'
	elif [ -p "$1" ]; then echo 'a FIFO'
	elif [ -c "$1" ] || [ -b "$1" ]; then echo 'a device'
	elif [ -S "$1" ]; then echo 'a socket'
	elif [ -f "$1" ]; then echo 'a regular file'
	else echo 'not a regular file'
	fi
}

# forge_read_file FILE: sets forge_file to FILE's whole content, less its
# final newline (paths in git's files may hold newlines); returns 1 when FILE
# is not a readable regular file (a FIFO would block the read). Builtins only.
forge_read_file() {
	local line sep
	forge_file=
	[ -f "$1" ] && [ -r "$1" ] || return 1
	sep=
	while IFS= read -r line || [ -n "$line" ]; do
		forge_file=$forge_file$sep$line
		sep='
'
	done <"$1"
}

# forge_list_next: takes the first entry off forge_list, a newline-separated
# list (keep paths, setup keys: they hold no newline), into forge_item;
# returns 1 when forge_list is empty. Loop with
#   forge_list=$LIST; while forge_list_next; do ...; done
forge_list_next() {
	[ -n "$forge_list" ] || return 1
	forge_item=${forge_list%%"
"*}
	case $forge_list in
	*'
'*) forge_list=${forge_list#*"
"} ;;
	*) forge_list= ;;
	esac
}
