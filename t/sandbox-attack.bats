#!/usr/bin/env bats
# Attacks on the namespace backend (SPEC 4.5) from a hostile agent inside
# the sandbox or a hostile repository, each against a REAL sandbox on this
# machine (bwrap, forge-sandbox-init, rootfs host): what the agent must not
# be able to do to the host, and paths the backend must carry.
load test_helper
load sandbox_helper

setup() { bwrap_setup; }

teardown() {
	# A commondir a test planted would make rm refuse the repository.
	[ -z "${REPO:-}" ] || rm -f "$REPO/.git/commondir"
	[ -z "${NOBODY_REPO:-}" ] || rm -f "$NOBODY_REPO/.git/commondir"
	for dir in "${REPO:-}" "${OTHER:-}"; do
		[ -z "$dir" ] || forge-sandbox rm "$dir" >/dev/null 2>&1 || :
	done
	[ -z "${NOBODY_REPO:-}" ] || as_nobody forge-sandbox rm "$NOBODY_REPO" >/dev/null 2>&1 || :
	forge_test_teardown
}

# kernel_interfaces_hold RUNNER...: what RUNNER (forge-sandbox exec ... --)
# runs cannot change a kernel setting nor read what the kernel keeps for
# root: writing back the value already in a sysctl fails (so the host's is
# never changed, held or not), sysrq-trigger cannot be opened for writing
# (no byte is ever written), the files container runtimes mask read empty,
# and no file of /proc outside the sandbox's own processes is writable
# (world-writable ones aside: those trust no one).
kernel_interfaces_hold() {
	local before
	before=$(cat /proc/sys/kernel/printk_ratelimit_burst)
	run "$@" sh -c 'v=$(cat /proc/sys/kernel/printk_ratelimit_burst) && echo "$v" >/proc/sys/kernel/printk_ratelimit_burst'
	assert_failure
	[ "$(cat /proc/sys/kernel/printk_ratelimit_burst)" = "$before" ]
	run "$@" sh -c ': >/proc/sysrq-trigger'
	assert_failure
	run "$@" sh -c 'for f in kcore keys timer_list timer_stats latency_stats sched_debug kmsg kpageflags kpagecount slabinfo vmallocinfo; do
			[ -e "/proc/$f" ] || continue
			[ "$(timeout 2 head -c 1 "/proc/$f" 2>/dev/null | wc -c)" = 0 ] || echo "readable: /proc/$f"
		done
		for d in /proc/acpi /proc/asound /proc/scsi /proc/fs; do
			[ ! -d "$d" ] || [ -z "$(ls -A "$d")" ] || echo "listed: $d"
		done
		for d in /sys/firmware /sys/kernel /sys/class; do
			[ ! -e "$d" ] || echo "present: $d"
		done'
	assert_output ''
	run "$@" sh -c 'find /proc/ \( -path "/proc/[0-9]*" -o -path /proc/self -o -path /proc/thread-self \) -prune \
		-o -type f -writable ! -perm -o+w -print 2>/dev/null'
	assert_output ''
}

@test "bwrap mounts a worktree whose path has ':', ',' and spaces (msb's restriction is msb's); a newline is refused (65) naming it" {
	OTHER="$SCRATCH/a:b, c"
	make_repo "$OTHER"
	run forge-sandbox up "$OTHER"
	assert_success
	cd "$OTHER"
	run forge-sandbox exec "$OTHER" -- sh -c 'pwd -P; echo inside >made'
	assert_success
	assert_output "$OTHER"
	[ "$(cat "$OTHER/made")" = inside ]
	run forge-sandbox exec "$OTHER" -- sh -c 'echo x >.git/hooks/pre-commit'
	assert_failure
	# msb still refuses it.
	run forge-sandbox plan --backend msb "$OTHER"
	assert_failure 65
	assert_output --partial "cannot mount worktree $OTHER: msb's -v syntax"
	make_repo "$SCRATCH/new"$'\n'"line"
	run forge-sandbox up "$SCRATCH/new"$'\n'"line"
	assert_failure 65
	assert_output --partial "cannot mount worktree $SCRATCH/new"$'\n    '"line: a path containing a newline"
}

@test "what makes the host's git run code stays read-only: submodule hooks and config, other worktrees' commondir, the .git file and folder can't be swapped" {
	make_repo "$SCRATCH/lib"
	git submodule add -q "$SCRATCH/lib" lib
	git commit -q -m 'a submodule'
	git worktree add -q "$SCRATCH/other"
	forge-sandbox up >/dev/null
	pwned=$SCRATCH/PWNED
	run in_sandbox sh -c "printf '#!/bin/sh\ntouch $pwned\n' >.git/modules/lib/hooks/post-checkout"
	assert_failure
	run in_sandbox git -C lib config core.fsmonitor "touch $pwned; false"
	assert_failure
	run in_sandbox sh -c 'echo "$1" >.git/worktrees/other/commondir' sh "$REPO/evil"
	assert_failure
	run in_sandbox sh -c 'echo "gitdir: $1" >lib/.git' sh "$REPO/evil"
	assert_failure
	run in_sandbox mv .git/modules/lib .git/modules/lib-moved
	assert_failure
	run in_sandbox mv .git/modules .git/modules-moved
	assert_failure
	run in_sandbox mv .git .git-moved
	assert_failure
	[ -d "$REPO/.git/modules/lib" ]
	# The host's git, in the worktree, the submodule and the other worktree.
	git status >/dev/null
	git -C lib status >/dev/null
	git -C "$SCRATCH/other" status >/dev/null
	[ ! -e "$pwned" ]
	# The files of the worktree and the submodule's checkout stay writable (commits
	# there fail: their index lies in a read-only git dir root, tested below).
	run in_sandbox sh -c 'echo x >new && echo y >lib/more'
	assert_success
	[ "$(cat lib/more)" = y ]
}

@test "a directory as stdio never goes in: forge-shell refuses it (127) and the exec server refuses a raw request carrying one" {
	mkdir -p "$SCRATCH/secret"
	echo TOPSECRET >"$SCRATCH/secret/key"
	forge-sandbox up >/dev/null
	run -127 forge-sandbox exec -- cat /proc/self/fd/0/key <"$SCRATCH/secret"
	assert_failure 127
	assert_output --partial 'stdin: a directory or block device never goes into the sandbox'
	refute_output --partial TOPSECRET
	run "$abs_top_builddir/t/exec-raw" "$STATE/exec.sock" send sh -c 'cat /proc/self/fd/0/key; touch ran' <"$SCRATCH/secret"
	assert_output refused
	[ ! -e "$REPO/ran" ]
	# The same raw client with ordinary stdio is served.
	run "$abs_top_builddir/t/exec-raw" "$STATE/exec.sock" send sh -c 'touch ran' </dev/null
	assert_output 'status 0'
	[ -e "$REPO/ran" ]
}

@test "a client that connects and stalls (before or inside its request) delays no other exec" {
	forge-sandbox up >/dev/null
	"$abs_top_builddir/t/exec-raw" "$STATE/exec.sock" stall 30 3>&- &
	STALLED=$!
	"$abs_top_builddir/t/exec-raw" "$STATE/exec.sock" stall 30 header 3>&- </dev/null &
	STALLED="$STALLED $!"
	sleep 0.5
	start=$(date +%s%N)
	run timeout 5 forge-sandbox exec -- sh -c 'echo served'
	elapsed_ms=$((($(date +%s%N) - start) / 1000000))
	kill $STALLED 2>/dev/null || :
	assert_success
	assert_output served
	[ "$elapsed_ms" -lt 2000 ] || fail "exec took $elapsed_ms ms behind a stalled client"
}

@test "a state folder path longer than a socket address holds (long home, long worktree name): up and exec work" {
	export XDG_STATE_HOME="$HOME/a.user.with.a.rather.long.login.name/.local/state"
	OTHER="$SCRATCH/$(printf 'w%.0s' $(seq 1 60))"
	make_repo "$OTHER"
	cd "$OTHER"
	run forge-sandbox up
	assert_success
	sock=$XDG_STATE_HOME/forge/bwrap/$(expected_name "$OTHER")/exec.sock
	[ "${#sock}" -ge 108 ] || fail "the socket path is only ${#sock} bytes long"
	run forge-sandbox exec -- pwd -P
	assert_success
	assert_output "$OTHER"
}

@test "a symlinked .git/modules or .git/worktrees (whose git dirs could not be protected) makes up exit 73" {
	mkdir -p "$SCRATCH/elsewhere"
	ln -s "$SCRATCH/elsewhere" .git/modules
	run forge-sandbox up
	assert_failure 73
	assert_output --partial "cannot protect $REPO/.git/modules: it is a symbolic link"
	[ ! -e "$STATE/pid" ]
}

@test "core.hooksPath inside the worktree (.githooks, husky's .husky/_): that folder is read-only inside too, created when missing; msb's plan has it" {
	git config core.hooksPath .githooks
	mkdir .githooks
	printf '#!/bin/sh\nexit 0\n' >.githooks/pre-commit
	chmod +x .githooks/pre-commit
	forge-sandbox up >/dev/null
	run in_sandbox sh -c 'echo "touch $1" >>.githooks/pre-commit' sh "$SCRATCH/PWNED"
	assert_failure
	assert_output --partial 'Read-only file system'
	run in_sandbox sh -c 'echo x >.githooks/post-checkout'
	assert_failure
	git commit -q --allow-empty -m host
	[ ! -e "$SCRATCH/PWNED" ]
	forge-sandbox rm >/dev/null
	# A global core.hooksPath naming a folder not there yet: created, read-only.
	git config --unset core.hooksPath
	git config --global core.hooksPath .husky/_
	forge-sandbox up >/dev/null
	[ -d "$REPO/.husky/_" ]
	run in_sandbox sh -c 'echo x >.husky/_/pre-commit'
	assert_failure
	[ ! -e "$REPO/.husky/_/pre-commit" ]
	# Nor can a folder on the way be renamed away and replaced by one whose
	# _ is writable.
	run in_sandbox sh -c 'mv .husky .husky.old'
	assert_failure
	run in_sandbox sh -c 'mkdir -p .husky/_ && printf "#!/bin/sh\ntouch %s\n" "$1" >.husky/_/pre-commit && chmod +x .husky/_/pre-commit' sh "$SCRATCH/PWNED"
	assert_failure
	[ ! -e "$REPO/.husky/_/pre-commit" ]
	[ ! -e "$REPO/.husky.old" ]
	run forge-sandbox plan --backend bwrap
	assert_line "$REPO/.husky"
	run forge-sandbox plan --backend msb
	assert_line "$REPO/.husky/_:$REPO/.husky/_:ro"
}

@test "as root: no interface that trusts host uid 0 (uid 1000 inside) is reachable: /proc/sys and sysrq-trigger read-only, root-only /proc files masked" {
	[ "$(id -u)" = 0 ] || skip "needs root: the unprivileged case is the next test"
	forge-sandbox up >/dev/null
	run in_sandbox id -u
	assert_output 1000
	kernel_interfaces_hold forge-sandbox exec "$REPO" --
}

@test "as an unprivileged user: /proc/sys and sysrq-trigger read-only, root-only /proc files masked" {
	[ "$(id -u)" = 0 ] || skip "needs root to become the unprivileged user nobody"
	nobody_sandbox
	cd "$NOBODY_REPO"
	kernel_interfaces_hold as_nobody forge-sandbox exec "$NOBODY_REPO" --
}

@test "as root: every read-write mount inside is one the plan makes writable, or the sandbox's own tmpfs, devpts and proc" {
	[ "$(id -u)" = 0 ] || skip "needs root: for an unprivileged user the kernel checks the host uid"
	forge-sandbox up >/dev/null
	plan=$(forge-sandbox plan 2>/dev/null)
	writable=$(awk 'prev == "--bind" { getline dest; print dest } { prev = $0 }' <<<"$plan")
	run in_sandbox cat /proc/self/mountinfo
	assert_success
	# mountinfo: field 5 is the mount point, 6 its options; the type follows "-".
	run awk -v writable="$writable" '
		BEGIN { n = split(writable, w, "\n"); for (i = 1; i <= n; i++) ok[w[i]] = 1 }
		{ for (i = 7; $i != "-"; i++); type = $(i + 1) }
		$6 !~ /^rw/ || ok[$5] { next }
		$5 ~ /^\/dev\/(null|zero|full|random|urandom|tty)$/ && type == "devtmpfs" { next }
		($5 == "/" || $5 == "/dev" || $5 == "/run" || $5 == "/dev/shm") && type == "tmpfs" { next }
		($5 == "/dev/pts" && type == "devpts") || ($5 == "/proc" && type == "proc") { next }
		{ print "read-write: " $5 " (" type ")" }' <<<"$output"
	assert_output ''
	# The plan's writable mounts: the worktree and its git dirs, the sandbox's own folders.
	run grep -v -e "^$REPO" -e '^/tmp$' -e '^/opt/forge$' -e '^/opt/forge/.cache$' \
		-e "^$TMPDIR/opencode\$" -e "^$HOME/.local/share/opencode/" <<<"$writable"
	assert_output ''
}

# --- git metadata that decides what the host's git (or forge) runs or reads ----

# plant_evil_common DIR: a git dir of the agent's making in DIR (its objects
# and refs the repository's own), whose config names a core.fsmonitor and a
# smudge filter that touch $SCRATCH/PWNED: what a planted commondir makes the
# host's git (or forge's own checkout of a copy) read.
plant_evil_common() {
	mkdir -p "$1"
	ln -s "$REPO/.git/objects" "$1/objects"
	ln -s "$REPO/.git/refs" "$1/refs"
	printf '[core]\n\tfsmonitor = "touch %s; false"\n[filter "pwn"]\n\tsmudge = "touch %s; cat"\n' \
		"$SCRATCH/PWNED" "$SCRATCH/PWNED" >"$1/config"
}

# git_root_snapshot GITDIR: every entry at the top of GITDIR and in its info/
# and objects/info/ (name, type, content digest), to prove nothing was written there.
git_root_snapshot() {
	(cd "$1" && find . -maxdepth 1 ! -name . -print && find info objects/info -print 2>/dev/null) | LC_ALL=C sort |
		while IFS= read -r p; do
			if [ -f "$1/$p" ]; then printf 'F %s %s\n' "$p" "$(sha256sum <"$1/$p")"; else printf 'D %s\n' "$p"; fi
		done
}

# attack_git_root REPO IN_SANDBOX...: from inside REPO's sandbox, every file of
# the git dir's root that decides what the host's git reads cannot be created
# or changed, and a commondir planted there fails; the host's git status then
# runs nothing.
attack_git_root() {
	local repo=$1 f before
	shift
	before=$(git_root_snapshot "$repo/.git")
	# The worktree is writable: the sandbox works.
	run "$@" sh -c 'cd "$1" && echo made >made-inside' sh "$repo"
	assert_success
	for f in commondir config config.worktree objects/info/alternates objects/info/http-alternates info/attributes \
		info/grafts shallow packed-refs branches/origin remotes/origin hooks/pre-commit; do
		run "$@" sh -c 'cd "$1" && printf "%s\n" "$2" >>".git/$3"' sh "$repo" "$repo/.evil" "$f"
		assert_failure
	done
	run "$@" sh -c 'cd "$1" && rm .git/config' sh "$repo"
	assert_failure
	run "$@" sh -c 'cd "$1" && mv .git/objects .git/objects-moved' sh "$repo"
	assert_failure
	[ "$(git_root_snapshot "$repo/.git")" = "$before" ]
	# What the attack then needs in the worktree is there; it has no effect.
	git -c safe.directory="$repo" -C "$repo" status >/dev/null
	[ ! -e "$SCRATCH/PWNED" ]
}

@test "the git dir's root is read-only inside: no commondir, config, alternates, attributes, grafts can be planted; the host's git status runs nothing (as root)" {
	forge-sandbox up >/dev/null
	run in_sandbox sh -c 'mkdir -p .evil && ln -s "$1/.git/objects" .evil/objects && ln -s "$1/.git/refs" .evil/refs &&
		printf "[core]\n\tfsmonitor = \"touch %s; false\"\n" "$2" >.evil/config' sh "$REPO" "$SCRATCH/PWNED"
	assert_success
	attack_git_root "$REPO" forge-sandbox exec "$REPO" --
}

@test "the git dir's root is read-only inside for an unprivileged user too; alternates it lists reach no copy's sandbox" {
	[ "$(id -u)" = 0 ] || skip "needs root to become the unprivileged user nobody"
	chmod 755 "$SCRATCH"
	mkdir -p "$SCRATCH/nobody/.config/forge" "$SCRATCH/nobody/tmp" "$SCRATCH/nobody/.ssh"
	printf '{"sandbox": {"backend": "bwrap", "bwrap": {"rootfs": "host"}, "network": {"allow": ["example.com"]}}}\n' \
		>"$SCRATCH/nobody/.config/forge/config.json"
	echo NOBODYSECRET >"$SCRATCH/nobody/.ssh/id_test"
	make_repo "$SCRATCH/nobody/repo"
	chown -R 65534:65534 "$SCRATCH/nobody"
	NOBODY_REPO=$SCRATCH/nobody/repo
	run as_nobody forge-sandbox up "$NOBODY_REPO"
	assert_success
	cd "$NOBODY_REPO"
	attack_git_root "$NOBODY_REPO" as_nobody forge-sandbox exec "$NOBODY_REPO" --
	# One planted before (an msb sandbox cannot protect the git dir): a copy's sandbox never mounts it.
	printf '%s\n' "$SCRATCH/nobody/.ssh" >>"$NOBODY_REPO/.git/objects/info/alternates"
	chown 65534:65534 "$NOBODY_REPO/.git/objects/info/alternates"
	run as_nobody sh -c 'cd "$1" && exec forge-verify --isolated --sandbox -- cat "$2"' sh "$NOBODY_REPO" "$SCRATCH/nobody/.ssh/id_test"
	assert_failure 1
	refute_output --partial NOBODYSECRET
	# A commondir planted before: up --restart and forge-verify refuse it.
	make_repo "$SCRATCH/nobody/other"
	chown -R 65534:65534 "$SCRATCH/nobody/other"
	as_nobody sh -c 'printf "%s\n" "$1" >"$2"' sh "$SCRATCH/nobody/other/.git" "$NOBODY_REPO/.git/commondir"
	run as_nobody forge-sandbox up --restart "$NOBODY_REPO"
	assert_failure 65
	assert_output --partial "$NOBODY_REPO/.git/commondir"
	run as_nobody sh -c 'cd "$1" && exec forge-verify --isolated --sandbox -- true' sh "$NOBODY_REPO"
	assert_failure 65
	rm "$NOBODY_REPO/.git/commondir"
}

@test "--isolated --sandbox mounts only the object store forge recorded: alternates the sandbox could list are never followed (as root)" {
	mkdir -p "$SCRATCH/secret"
	echo TOPSECRET >"$SCRATCH/secret/key"
	forge-sandbox up >/dev/null
	run in_sandbox sh -c 'printf "%s\n" "$1" >>.git/objects/info/alternates' sh "$SCRATCH/secret"
	assert_failure
	forge-sandbox rm >/dev/null
	# One planted before (an msb sandbox cannot protect the git dir).
	printf '/etc\n%s\n' "$SCRATCH/secret" >>.git/objects/info/alternates
	run forge-verify --isolated --sandbox -- sh -c 'cat "$1"; head -1 /etc/shadow' sh "$SCRATCH/secret/key"
	assert_failure 1
	refute_output --partial TOPSECRET
	refute_output --partial 'root:'
	# The store forge recorded is there: git in the copy reads the history.
	run forge-verify --isolated --sandbox -- sh -c 'git log --oneline | grep -q initial'
	assert_success
}

@test "commits: in a linked worktree's sandbox they work; in the main worktree's they fail with git's error and nothing reaches the git dir's root" {
	git worktree add -q "$SCRATCH/linked"
	LINKED=$(cd "$SCRATCH/linked" && pwd -P)
	OTHER=$LINKED
	forge-sandbox up "$LINKED" >/dev/null
	run forge-sandbox exec "$LINKED" -- sh -c 'cd "$1" && echo x >new && git add new && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m in-linked && git log -1 --format=%s' sh "$LINKED"
	assert_success
	assert_output in-linked
	[ "$(git -C "$LINKED" log -1 --format=%s)" = in-linked ]
	# Its own git dir's commondir, gitdir are read-only.
	run forge-sandbox exec "$LINKED" -- sh -c 'cd "$1" && echo /tmp >"$(git rev-parse --git-dir)/commondir"' sh "$LINKED"
	assert_failure
	# config.worktree too, also while extensions.worktreeConfig is off: the
	# host's git turns it on by itself (sparse-checkout set), and would then
	# read a core.fsmonitor planted there.
	run forge-sandbox exec "$LINKED" -- sh -c 'cd "$1" && printf "[core]\n\tfsmonitor = touch %s\n" "$2" >>"$(git rev-parse --git-dir)/config.worktree"' sh "$LINKED" "$SCRATCH/PWNED"
	assert_failure
	git -C "$LINKED" config extensions.worktreeConfig true
	git -c safe.directory='*' -C "$LINKED" status >/dev/null
	[ ! -e "$SCRATCH/PWNED" ]
	git -C "$LINKED" config --unset extensions.worktreeConfig
	forge-sandbox up >/dev/null
	before=$(git_root_snapshot "$REPO/.git")
	run in_sandbox sh -c 'echo y >new2 && git add new2 && git -c user.name=agent -c user.email=agent@example.invalid commit -q -m in-main'
	assert_failure
	assert_output --partial 'Read-only file system'
	run in_sandbox git -c user.name=agent -c user.email=agent@example.invalid commit -q --allow-empty -m in-main
	assert_failure
	[ "$(git log -1 --format=%s)" = initial ]
	[ "$(git_root_snapshot "$REPO/.git")" = "$before" ]
}

@test "a commondir in the main git dir (pointing at a git dir of the agent's making): up, plan, exec's up and forge-verify refuse it (65) naming it; the filter never runs" {
	plant_evil_common "$REPO/.evil"
	printf '*.txt filter=pwn\n' >.gitattributes
	printf 'data\n' >a.txt
	git add .gitattributes a.txt
	git commit -q -m 'a filtered file'
	printf '../.evil\n' >.git/commondir
	for cmd in 'forge-sandbox up' 'forge-sandbox up --restart' 'forge-sandbox plan' 'forge-sandbox plan --backend msb' \
		'forge-verify --isolated --sandbox -- true' 'forge-verify --isolated -- true' 'forge-verify -- true'; do
		# shellcheck disable=SC2086 # words of a command line
		run $cmd
		assert_failure 65
		assert_output --partial "$REPO/.git/commondir"
	done
	[ ! -e "$SCRATCH/PWNED" ]
	[ ! -e "$STATE/pid" ]
}

@test "a commondir in the main git dir naming another repository: up --restart refuses it (65); that repository is never mounted" {
	make_repo "$SCRATCH/other-repo"
	forge-sandbox up >/dev/null
	printf '%s\n' "$SCRATCH/other-repo/.git" >.git/commondir
	run forge-sandbox up --restart
	assert_failure 65
	assert_output --partial "$REPO/.git/commondir"
	run forge-sandbox plan --backend bwrap
	assert_failure 65
	refute_line "$SCRATCH/other-repo/.git"
	# A linked worktree of a repository whose main git dir has one: refused too.
	rm .git/commondir
	git worktree add -q "$SCRATCH/linked2"
	printf '%s\n' "$SCRATCH/other-repo/.git" >.git/commondir
	run forge-sandbox plan "$SCRATCH/linked2"
	assert_failure 65
	assert_output --partial "$REPO/.git/commondir"
}
