# Helpers for the --isolated tests: describe a tree file by file, and check
# that a copy equals the working state while the real repository is left
# byte-for-byte unchanged.

isolated_setup() {
	load_support
	forge_test_setup
	mkdir -p "$SCRATCH/bin"
	# list-tree work|copy DIR: one line per file or symlink: type, executable
	# bit, content digest or link target, and the name (shell-quoted, so
	# newlines and odd bytes compare exactly).
	cat >"$SCRATCH/bin/list-tree" <<'SH'
#!/bin/bash
set -euo pipefail
mode=$1 dir=$2
cd "$dir"
if [ "$mode" = work ]; then
	git -c core.quotePath=false ls-files -z --cached --others --exclude-standard
else
	find . -path ./.git -prune -o \( -type f -o -type l \) -printf '%P\0'
fi | while IFS= read -r -d '' p; do
	if [ -L "$p" ]; then
		printf 'L - %q %q\n' "$(readlink -- "$p")" "$p"
	elif [ -f "$p" ]; then
		x=-; [ -x "$p" ] && x=x
		printf 'F %s %s %q\n' "$x" "$(sha256sum <"$p" | cut -c1-16)" "$p"
	fi
done | LC_ALL=C sort -u
SH
	chmod +x "$SCRATCH/bin/list-tree"
	PATH=$SCRATCH/bin:$PATH
	# The warm pool goes to the default place, $HOME/.cache/forge/pool.
	unset XDG_CACHE_HOME
	forge_test_repo
}

# pool [REPO]: the warm pool folder of REPO (default $REPO):
# $HOME/.cache/forge/pool/<first 16 hex of sha256 of the real git common dir>.
pool() {
	local common id
	common=$(cd "${1:-$REPO}" && cd "$(git rev-parse --git-common-dir)" && pwd -P)
	id=$(printf '%s' "$common" | sha256sum | cut -c1-16)
	printf '%s\n' "$HOME/.cache/forge/pool/$id"
}

# git_state [REPO]: a digest of the git state of REPO (default $REPO) that no
# step in a copy may change: every ref and reflog, the stash, the config,
# the index, the hooks, every object file, packed-refs and the worktree list
# (not info/exclude, where forge adds /.forge/ once).
git_state() {
	local r=${1:-$REPO}
	{
		git -C "$r" for-each-ref --format='%(refname) %(objectname)'
		git -C "$r" stash list --format='%H %gs'
		git -C "$r" worktree list --porcelain
		cd "$r/.git" && find config index HEAD packed-refs hooks logs objects refs \
			-exec sh -c 'for f; do if [ -f "$f" ]; then printf "%s " "$f"; sha256sum <"$f"; else echo "$f"; fi; done' sh {} + 2>/dev/null | LC_ALL=C sort
	} | sha256sum
}

# repo_state: a digest of everything a run must not change in the real
# repository: the working tree (files, modes, links), the index, HEAD, all
# refs, the stash and the untracked files.
repo_state() {
	{
		tree_hash "$REPO"
		sha256sum <"$REPO/.git/index" 2>/dev/null || echo no-index
		git -C "$REPO" rev-parse HEAD 2>/dev/null || echo no-head
		git -C "$REPO" symbolic-ref -q HEAD || echo detached
		git -C "$REPO" for-each-ref --format='%(refname) %(objectname)'
		git -C "$REPO" stash list
		git -C "$REPO" ls-files -z --others --exclude-standard | sha256sum
	} | sha256sum
}

# The hostile step: records what it sees, then destroys everything it can
# in the copy and leaves garbage behind.
# shellcheck disable=SC2016 # expanded by the step's shell
HOSTILE_STEP='list-tree copy . >"$COPY_LIST"; pwd >"$COPY_PWD"; rm -rf ./* ./.[!.]* 2>/dev/null; echo garbage >garbage; mkdir -p deep/er && echo x >deep/er/file; chmod -R a-w . 2>/dev/null; true'

# check_copy [FORGE-VERIFY OPTIONS...]: runs the hostile step in a copy and
# asserts: the copy held exactly the working state; the real repository is
# unchanged; no copy, temp dir or worktree registration is left.
# shellcheck disable=SC2154 # lines: set by bats' run
check_copy() {
	export COPY_LIST=$SCRATCH/copy.list COPY_PWD=$SCRATCH/copy.pwd
	rm -f "$COPY_LIST" "$COPY_PWD"
	list-tree work "$REPO" >"$SCRATCH/work.list"
	before=$(repo_state)
	run forge-verify --isolated "$@" -- sh -c "$HOSTILE_STEP"
	assert_success
	case " $* " in
	*' --warm '*) [ "${lines[0]}" = 'isolated: running verification in a pooled copy (working tree untouched)' ] ;;
	*) [ "${lines[0]}" = 'isolated: running verification in an ephemeral copy (working tree untouched)' ] ;;
	esac
	diff -u "$SCRATCH/work.list" "$COPY_LIST"
	[ "$(repo_state)" = "$before" ]
	[ "$(cat "$COPY_PWD")" != "$REPO" ]
	assert_no_leftovers
}

# assert_no_leftovers: no cold copy in TMPDIR, and the repository lists no
# worktree but its own (copies are repositories of their own, warm ones too).
assert_no_leftovers() {
	[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'forge-verify.*')" ]
	[ ! -d "$REPO/.git/worktrees" ]
	[ "$(git -C "$REPO" worktree list --porcelain | sed -n 's/^worktree //p')" = "$REPO" ]
}

# interrupted_at SIG MARKER COMMAND...: COMMAND in the background (SIGINT at
# its default, as in a terminal's foreground job) until MARKER exists (at
# most 10 s), then SIG: it exits 128 + SIG.
interrupted_at() {
	local sig=$1 marker=$2 pid rc
	shift 2
	perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- "$@" &
	pid=$!
	for _ in $(seq 1 100); do [ -e "$marker" ] && break; sleep 0.1; done
	[ -e "$marker" ]
	kill -s "$sig" "$pid"
	wait "$pid" && rc=0 || rc=$?
	case $sig in INT) [ "$rc" -eq 130 ] ;; TERM) [ "$rc" -eq 143 ] ;; HUP) [ "$rc" -eq 129 ] ;; esac
}
