#!/usr/bin/env bats
# forge-sandbox plan: the msb create argv built from the configuration
# (SPEC 4.1-4.3): naming, mounts, sizes, egress through forge-netrule, env
# and secrets, hostile values; and the command line of every subcommand.
# Nothing here needs msb: plan runs nothing.
load test_helper
load sandbox_helper

setup() { sandbox_setup; select_msb_backend; }
teardown() { forge_test_teardown; }

# The default scratch dir, as plan resolves it without creating it.
scratch() { realpath -m "$TMPDIR/opencode"; }

@test "plan prints the default create argv, one argument per line, in SPEC order" {
	name=$(expected_name "$REPO")
	run --separate-stderr forge-sandbox plan
	assert_success
	expected=(msb create oc-forge-sandbox:latest --name "$name" --quiet -c 4 -m 8g
		-v "$REPO:$REPO" -v "$REPO/.git/hooks:$REPO/.git/hooks:ro" -v "$REPO/.forge:$REPO/.forge:ro" -v "$(scratch):$(scratch)"
		--mount-named "$name-docker-data:/var/lib/docker:kind=disk,size=16g"
		--mount-named "$name-cache-data:/opt/forge/.cache:kind=disk,size=16g")
	assert_output "$(printf '%s\n' "${expected[@]}")"
	[ -z "$stderr" ]
}

@test "plan -z is NUL-separated and --json the plan with the same arguments as its argv" {
	want=$(forge-sandbox plan)
	plan_argv
	[ "$(printf '%s\n' "${plan[@]}")" = "$want" ]
	run forge-sandbox plan --json
	assert_success
	[ "$(jq -r '.argv[]' <<<"$output")" = "$want" ]
	jq -e '.argv | type == "array" and all(.[]; type == "string")' <<<"$output"
}

@test "plan runs nothing: no msb call, no msb needed, no file created" {
	use_stub # the msb test double: it must log no call at all
	run forge-sandbox plan
	assert_success
	[ ! -e "$STUB_DIR/calls" ]
	# Without any msb at all.
	unset FORGE_MSB
	run env PATH="$abs_top_builddir/bin:$abs_top_builddir/helpers:/usr/bin:/bin" forge-sandbox plan
	assert_success
	[ ! -e "$TMPDIR/opencode" ]
	[ ! -e "$REPO/.forge" ]
	[ -z "$(git status --porcelain)" ]
}

@test "name: forge-<slug>-<first 8 hex of SHA-256 of the real path>, the same from a subdirectory or a symlink" {
	name=$(expected_name "$REPO")
	[[ $name =~ ^forge-repo-[0-9a-f]{8}$ ]]
	run forge-sandbox env
	assert_success
	assert_output "export FORGE_SANDBOX_CONTAINER='$name'"
	mkdir -p sub/dir && ln -s "$REPO" "$SCRATCH/link"
	run forge-sandbox env "$SCRATCH/link/sub/dir"
	assert_output "export FORGE_SANDBOX_CONTAINER='$name'"
	cd sub/dir
	run forge-sandbox env
	assert_output "export FORGE_SANDBOX_CONTAINER='$name'"
	# The hash is of the path: another checkout of the same name differs.
	make_repo "$SCRATCH/other/repo"
	run forge-sandbox env "$SCRATCH/other/repo"
	assert_output "export FORGE_SANDBOX_CONTAINER='$(expected_name "$SCRATCH/other/repo")'"
	[ "$output" != "export FORGE_SANDBOX_CONTAINER='$name'" ]
}

@test "name: slug lowercased, runs outside [a-z0-9.-] made one '-', '-' and '.' trimmed, cut to 40, empty gives sandbox" {
	long=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ
	for base in 'My Repo__X' '..--Weird  Name--..' "$long" '___' 'Ünïcödé' 'a.b-c' $'new\nline' '-x-'; do
		mkdir -p "$SCRATCH/names/$base"
		real=$(cd "$SCRATCH/names/$base" && pwd -P)
		run sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_sandbox_name_of "$1"; printf "%s\n" "$forge_sandbox_name"' _ "$real"
		assert_success
		assert_output "$(expected_name "$real")"
	done
	h() { printf '%s' "$SCRATCH/names/$1" | sha256sum | cut -c1-8; }
	run sh -c '. "$FORGE_LIBDIR/forge.sh"; for p; do forge_sandbox_name_of "$p"; echo "$forge_sandbox_name"; done' _ \
		"$SCRATCH/names/My Repo__X" "$SCRATCH/names/..--Weird  Name--.." "$SCRATCH/names/___" "$SCRATCH/names/$long"
	assert_line --index 0 "forge-my-repo-x-$(h 'My Repo__X')"
	assert_line --index 1 "forge-weird-name-$(h '..--Weird  Name--..')"
	assert_line --index 2 "forge-sandbox-$(h ___)"
	assert_line --index 3 "forge-abcdefghijklmnopqrstuvwxyz0123456789abcd-$(h "$long")"
}

@test "not a git repository, or no such directory: exit 69 for every per-worktree command" {
	mkdir "$SCRATCH/plain"
	for cmd in plan up env rm; do
		run forge-sandbox "$cmd" "$SCRATCH/plain"
		assert_failure 69
		assert_output --partial "not a git repository: $SCRATCH/plain"
		run forge-sandbox "$cmd" "$SCRATCH/nowhere"
		assert_failure 69
	done
	cd "$SCRATCH/plain"
	run forge-sandbox exec -- true
	assert_failure 69
	run forge-sandbox plan
	assert_failure 69
}

@test "a worktree path with ':', ',' or a newline: plan and up exit 65 naming the path, nothing run" {
	use_stub # the msb test double: it must log no call at all
	for base in 'a:b' 'a,b' $'a\nb'; do
		make_repo "$SCRATCH/$base"
		run forge-sandbox plan "$SCRATCH/$base"
		assert_failure 65
		# (A message's later lines are indented: none can pass for forge's own.)
		assert_output --partial "cannot mount worktree $SCRATCH/${base//$'\n'/$'\n    '}"
		run forge-sandbox up "$SCRATCH/$base"
		assert_failure 65
	done
	[ ! -e "$STUB_DIR/calls" ]
}

@test "a git dir with ':' (separate git dir): exit 65 naming it" {
	git init -q --separate-git-dir "$SCRATCH/git:dir" "$SCRATCH/wt"
	run forge-sandbox plan "$SCRATCH/wt"
	assert_failure 65
	assert_output --partial "cannot mount git dir $SCRATCH/git:dir"
}

# size VALUE: the msb size forge_size_mib makes of VALUE, or its error.
size() {
	sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_prog=t; forge_size_mib "$1" sandbox.resources.memory; printf "%s\n" "$forge_size"' _ "$1"
}

@test "sizes: <number>[k|m|g|t][i][b] become whole MiB (m) or GiB (g); a bare number is MiB" {
	while read -r given want; do
		run size "$given"
		assert_success
		assert_output "$want"
	done <<'TABLE'
8g 8g
8G 8g
1.5g 1536m
1t 1024g
512MB 512m
512mb 512m
1024k 1m
1GiB 1g
1gib 1g
2.5Gi 2560m
2048m 2g
1536M 1536m
1048576b 1m
4096 4g
100 100m
0.5g 512m
01.50g 1536m
1.0000g 1g
1024t 1048576g
TABLE
}

@test "sizes: below 1 MiB, a fraction of a MiB or not a size: exit 65 naming the key" {
	for bad in 512k 0.5m 1.0001g 0 0g 1b abc '' 8gg -1g 1e3 '8 g' 1.2.3g g 5i 5ib . 9999999999999t 2000t 1.5; do
		run size "$bad"
		assert_failure 65
		assert_output --partial 'configuration key sandbox.resources.memory'
	done
	write_config '{"sandbox": {"resources": {"dockerDisk": "512k"}}}'
	run forge-sandbox plan
	assert_failure 65
	assert_output --partial "configuration key sandbox.resources.dockerDisk: size '512k' is below 1 MiB"
}

@test "sizes and cpus from the user's configuration, JSON numbers too: cpus floored, at least 1" {
	write_config '{"sandbox": {"resources": {"memory": 4096, "cpus": 2.7, "dockerDisk": "1t", "cacheDisk": "1.5g"}}}'
	plan_argv
	[ "$(plan_values -c)" = 2 ]
	[ "$(plan_values -m)" = 4g ]
	[[ $(plan_values --mount-named) == *docker-data:/var/lib/docker:kind=disk,size=1024g*cache-data:/opt/forge/.cache:kind=disk,size=1536m ]]
	for cpus in '"0.5"' 0 '"-3"' '"1"' '"16"' 8.99; do
		write_config "{\"sandbox\": {\"resources\": {\"cpus\": $cpus}}}"
		plan_argv
		want=$(jq -n "[($cpus | tonumber | floor), 1] | max")
		[ "$(plan_values -c)" = "$want" ] || fail "cpus $cpus gave $(plan_values -c), want $want"
	done
	write_config '{"sandbox": {"resources": {"cpus": "four"}}}'
	run forge-sandbox plan
	assert_failure 65
	assert_output --partial "configuration key sandbox.resources.cpus: invalid cpu count 'four'"
}

@test "mounts: a linked worktree gets the common dir read-write (covering its git dir) and the hooks read-only" {
	git worktree add -q "$SCRATCH/wt" 2>/dev/null
	wt=$SCRATCH/wt
	run --separate-stderr forge-sandbox plan "$wt"
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values -v
	assert_output "$(printf '%s\n' "$wt:$wt" "$REPO/.git:$REPO/.git" "$REPO/.git/hooks:$REPO/.git/hooks:ro" "$wt/.forge:$wt/.forge:ro" "$(scratch):$(scratch)")"
	# The linked worktree's own git dir lies inside the common dir: covered.
	[[ $output != *"$REPO/.git/worktrees"* ]]
	# The project holds the read-write common dir: msb cannot mount it
	# read-only around that, so it is not mounted, and plan does not repeat
	# it on every run (up says it once, at create).
	[[ $stderr != *"$REPO (ro)"* ]]
	[ -z "$stderr" ]
}

@test "mounts: no project mount when git cannot tell the main worktree (separate git dir), nor for the main worktree" {
	git init -q --separate-git-dir "$SCRATCH/project.git" "$SCRATCH/project"
	git -C "$SCRATCH/project" commit -q --allow-empty -m initial
	git -C "$SCRATCH/project" worktree add -q "$SCRATCH/wt" 2>/dev/null
	wt=$SCRATCH/wt
	run --separate-stderr forge-sandbox plan "$wt"
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values -v
	assert_output "$(printf '%s\n' "$wt:$wt" "$SCRATCH/project.git:$SCRATCH/project.git" \
		"$SCRATCH/project.git/hooks:$SCRATCH/project.git/hooks:ro" "$wt/.forge:$wt/.forge:ro" "$(scratch):$(scratch)")"
	[ -z "$stderr" ]
	run --separate-stderr forge-sandbox plan "$SCRATCH/project"
	assert_success
	[ -z "$stderr" ]
}

@test "mounts: the default layout (worktree inside the project) drops the read-only project mount, keeps the hooks" {
	git worktree add -q .worktrees/wt 2>/dev/null
	wt=$REPO/.worktrees/wt
	run --separate-stderr forge-sandbox plan "$wt"
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values -v
	assert_output "$(printf '%s\n' "$wt:$wt" "$REPO/.git:$REPO/.git" "$REPO/.git/hooks:$REPO/.git/hooks:ro" "$wt/.forge:$wt/.forge:ro" "$(scratch):$(scratch)")"
	[ -z "$stderr" ]
	# mountProjectReadonly false: no project candidate either.
	write_config '{"sandbox": {"mountProjectReadonly": false}}'
	run --separate-stderr forge-sandbox plan "$wt"
	assert_success
	[ -z "$stderr" ]
}

@test "mounts: the hooks dir is read-only even when it does not exist (git init --template=, rm -r .git/hooks)" {
	make_repo_at() { git init -q --template= "$1" && git -C "$1" commit -q --allow-empty -m initial; }
	make_repo_at "$SCRATCH/bare-hooks"
	r=$SCRATCH/bare-hooks
	[ ! -e "$r/.git/hooks" ]
	run --separate-stderr forge-sandbox plan "$r"
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values -v
	assert_line "$r/.git/hooks:$r/.git/hooks:ro"
	# plan only names it; it creates nothing.
	[ ! -e "$r/.git/hooks" ]
	# A linked worktree of a repository whose hooks dir was removed.
	rm -r "$REPO/.git/hooks"
	git worktree add -q "$SCRATCH/wt" 2>/dev/null
	plan_argv "$SCRATCH/wt"
	run plan_values -v
	assert_line "$REPO/.git/hooks:$REPO/.git/hooks:ro"
}

@test "mounts: a hooks dir or .forge that is a symlink or a file cannot be protected: exit 73, nothing run" {
	use_stub # the msb test double: it must log no call at all
	mkdir "$SCRATCH/elsewhere"
	rm -r .git/hooks
	ln -s "$SCRATCH/elsewhere" .git/hooks
	for cmd in plan up; do
		run forge-sandbox "$cmd"
		assert_failure 73
		assert_output --partial "cannot protect the git hooks dir $REPO/.git/hooks: it is a symbolic link"
	done
	rm .git/hooks
	touch .git/hooks
	run forge-sandbox plan
	assert_failure 73
	assert_output --partial "cannot protect the git hooks dir $REPO/.git/hooks: it is not a folder"
	rm .git/hooks
	ln -s "$SCRATCH/elsewhere" .forge
	run forge-sandbox up
	assert_failure 73
	assert_output --partial "cannot protect the evidence dir $REPO/.forge: it is a symbolic link"
	rm .forge
	touch .forge
	run forge-sandbox plan
	assert_failure 73
	assert_output --partial "cannot protect the evidence dir $REPO/.forge: it is not a folder"
	[ ! -e "$STUB_DIR/calls" ]
	# Nothing was written through the link.
	[ -z "$(ls -A "$SCRATCH/elsewhere")" ]
}

@test "mounts: the worktree's .forge is read-only in the sandbox, also before it exists; a linked worktree's own" {
	[ ! -e .forge ]
	plan_argv
	run plan_values -v
	assert_line "$REPO/.forge:$REPO/.forge:ro"
	[ ! -e .forge ]
	git worktree add -q "$SCRATCH/wt" 2>/dev/null
	mkdir "$SCRATCH/wt/.forge"
	plan_argv "$SCRATCH/wt"
	run plan_values -v
	assert_line "$SCRATCH/wt/.forge:$SCRATCH/wt/.forge:ro"
	refute_line "$REPO/.forge:$REPO/.forge:ro"
}

@test "mounts: tool output dir read-only when it exists outside the worktree; scratch dir read-write, not created by plan" {
	mkdir -p "$XDG_DATA_HOME/opencode/tool-output"
	plan_argv
	run plan_values -v
	assert_line "$XDG_DATA_HOME/opencode/tool-output:$XDG_DATA_HOME/opencode/tool-output:ro"
	assert_line "$(scratch):$(scratch)"
	[ ! -e "$TMPDIR/opencode" ]
	# Inside the worktree: not mounted (the worktree already is).
	mkdir -p "$REPO/tools" "$REPO/scratch"
	write_config "{\"sandbox\": {\"toolOutputDir\": \"$REPO/tools\", \"scratchDir\": \"$REPO/scratch\"}}"
	plan_argv
	run plan_values -v
	assert_output "$(printf '%s\n' "$REPO:$REPO" "$REPO/.git/hooks:$REPO/.git/hooks:ro" "$REPO/.forge:$REPO/.forge:ro")"
	# Configured elsewhere, through a symlink: the canonical path.
	mkdir -p "$SCRATCH/real-scratch"
	ln -s "$SCRATCH/real-scratch" "$SCRATCH/scratch-link"
	write_config "{\"sandbox\": {\"scratchDir\": \"$SCRATCH/scratch-link\"}}"
	plan_argv
	run plan_values -v
	assert_line "$SCRATCH/real-scratch:$SCRATCH/real-scratch"
}

@test "mounts: the scratch dir is never /, \$HOME or a folder containing a reserved path (skipped with a warning)" {
	mkdir -p "$HOME" "$XDG_DATA_HOME/opencode/tool-output" "$SCRATCH/outer/inner"
	for dir in / "$HOME" "$HOME/.." "$SCRATCH" "$XDG_DATA_HOME"; do
		write_config "{\"sandbox\": {\"scratchDir\": $(jq -n --arg d "$dir" '$d')}}"
		run --separate-stderr forge-sandbox plan
		assert_success
		mapfile -t plan <<<"$output"
		run plan_values -v
		refute_line '/:/'
		refute_line "$HOME:$HOME"
		refute_line --regexp "^$(realpath -m "$dir"):"
		[[ $stderr == *"warning: sandbox.scratchDir: "*"; not mounted"* ]] || fail "no warning for $dir: $stderr"
	done
	[[ $stderr == *"sandbox.scratchDir: $XDG_DATA_HOME contains the reserved path $XDG_DATA_HOME/opencode/tool-output; not mounted"* ]]
	write_config '{"sandbox": {"scratchDir": "/"}}'
	run --separate-stderr forge-sandbox plan
	[[ $stderr == *"warning: sandbox.scratchDir: / is the whole host; not mounted"* ]]
	write_config "{\"sandbox\": {\"scratchDir\": \"$HOME\"}}"
	run --separate-stderr forge-sandbox plan
	[[ $stderr == *"warning: sandbox.scratchDir: $HOME is or contains \$HOME; not mounted"* ]]
	# An allowed one, not there yet, is still mounted.
	write_config "{\"sandbox\": {\"scratchDir\": \"$SCRATCH/outer/inner/new\"}}"
	plan_argv
	run plan_values -v
	assert_line "$SCRATCH/outer/inner/new:$SCRATCH/outer/inner/new"
}

# plan_create: the plan as up makes it (with "create"): its mount lines.
plan_create() {
	sh -c 'set -eu; forge_prog=forge-sandbox; . "$FORGE_LIBDIR/forge.sh"
		forge_config_load "$1"; forge_sandbox_backend msb
		forge_sandbox_plan "$1" "$2" create; printf "%s" "$forge_mounts"' _ "$REPO" "$(expected_name "$REPO")"
}

@test "ownership: a scratch dir another user owns, or reached through their symbolic link, is not mounted (nor made) and the warning names the owner" {
	[ "$(id -u)" = 0 ] || skip "needs root to make files another user owns"
	mkdir -p "$TMPDIR" "$SCRATCH/theirs" "$SCRATCH/target"
	chown 12345 "$SCRATCH/theirs"
	write_config "{\"sandbox\": {\"scratchDir\": \"$SCRATCH/theirs\"}}"
	run --separate-stderr forge-sandbox plan
	assert_success
	[[ $output != *"$SCRATCH/theirs"* ]]
	[[ $stderr == *"warning: sandbox.scratchDir: $SCRATCH/theirs is owned by uid 12345, not by you or root; not mounted"* ]]
	# The default one, planted in $TMPDIR as a link by another user (to a
	# folder root owns): neither mounted nor made through the link by up.
	ln -s "$SCRATCH/target" "$TMPDIR/opencode"
	chown -h 12345 "$TMPDIR/opencode"
	unset FORGE_CONFIG
	run --separate-stderr forge-sandbox plan
	assert_success
	[[ $output != *"$SCRATCH/target"* ]]
	[[ $stderr == *"warning: sandbox.scratchDir: $TMPDIR/opencode goes through the symbolic link $TMPDIR/opencode, owned by uid 12345, not by you or root; not mounted"* ]]
	write_config "{\"sandbox\": {\"scratchDir\": \"$TMPDIR/opencode/sub\"}}"
	run --separate-stderr plan_create
	assert_success
	[[ $output != *"$SCRATCH/target"* ]]
	[ ! -e "$SCRATCH/target/sub" ]
	[[ $stderr == *"goes through the symbolic link $TMPDIR/opencode, owned by uid 12345"* ]]
	# A link of one's own to theirs is followed, theirs checked: the same.
	rm "$TMPDIR/opencode"
	ln -s "$SCRATCH/theirs-link" "$TMPDIR/opencode"
	ln -s "$SCRATCH/target" "$SCRATCH/theirs-link"
	chown -h 12345 "$SCRATCH/theirs-link"
	run --separate-stderr plan_create
	assert_success
	[[ $output != *"$SCRATCH/target"* ]]
	[ ! -e "$SCRATCH/target/sub" ]
	[[ $stderr == *"goes through the symbolic link $SCRATCH/theirs-link, owned by uid 12345"* ]]
	# The same path through links root owns: made and mounted.
	chown -h 0 "$SCRATCH/theirs-link"
	run --separate-stderr plan_create
	assert_success
	assert_line "rw $SCRATCH/target/sub"
	[ -d "$SCRATCH/target/sub" ]
}

@test "ownership: a custom mount another user owns, or reached through their link, is skipped naming the owner; one's own is mounted" {
	[ "$(id -u)" = 0 ] || skip "needs root to make files another user owns"
	mkdir -p "$SCRATCH/theirs" "$SCRATCH/mine" "$SCRATCH/ext-theirs" "$SCRATCH/target"
	chown 12345 "$SCRATCH/theirs" "$SCRATCH/ext-theirs"
	ln -s "$SCRATCH/target" "$SCRATCH/their-link"
	chown -h 12345 "$SCRATCH/their-link"
	ln -s "$SCRATCH/their-link" "$SCRATCH/my-link"
	write_config "{\"sandbox\": {\"mounts\": [{\"host\": \"$SCRATCH/theirs\", \"readonly\": false}, {\"host\": \"$SCRATCH/my-link\"}, {\"host\": \"$SCRATCH/mine\"}]},
	  \"loop\": {\"allowExternalDirectories\": [\"$SCRATCH/ext-theirs\"]}}"
	run --separate-stderr forge-sandbox plan
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values -v
	assert_line "$SCRATCH/mine:$SCRATCH/mine:ro"
	refute_line --partial "$SCRATCH/theirs"
	refute_line --partial "$SCRATCH/target"
	refute_line --partial "$SCRATCH/ext-theirs"
	[[ $stderr == *"warning: sandbox.mounts[0]: $SCRATCH/theirs is owned by uid 12345, not by you or root; not mounted"* ]]
	[[ $stderr == *"warning: sandbox.mounts[1]: $SCRATCH/my-link goes through the symbolic link $SCRATCH/their-link, owned by uid 12345, not by you or root; not mounted"* ]]
	[[ $stderr == *"warning: loop.allowExternalDirectories[0]: $SCRATCH/ext-theirs is owned by uid 12345, not by you or root; not mounted"* ]]
	# Root's own folders count as the invoker's.
	write_config '{"sandbox": {"mounts": [{"host": "/usr"}]}}'
	plan_argv
	run plan_values -v
	assert_line /usr:/usr:ro
}

# state_refused BACKEND MOUNT STATE: plan on BACKEND exits 73 naming the
# read-write MOUNT and the sandbox's state folder under STATE (an
# XDG_STATE_HOME), and creates nothing there.
state_refused() {
	local name
	name=$(expected_name "$REPO")
	run --separate-stderr forge-sandbox plan --backend "$1"
	assert_failure 73
	[[ $stderr == *"forge-sandbox: error: cannot mount $2 read-write: it holds the state folder of sandbox $name (its exec socket and env file), $3/forge/bwrap/$name, which no sandbox may write"* ]] || fail "$1: $stderr"
	[ -z "$output" ]
	[ ! -e "$3/forge" ]
}

@test "forge's own state is never writable inside: the worktree at \$HOME, XDG_STATE_HOME in the worktree, or a read-write mount around it is refused (73), both paths named" {
	for backend in msb bwrap; do
		# The worktree is $HOME (XDG_STATE_HOME unset: ~/.local/state).
		(
			export HOME=$REPO
			unset XDG_STATE_HOME
			state_refused "$backend" "$REPO" "$REPO/.local/state"
		)
		# XDG_STATE_HOME inside the worktree, through a symbolic link too.
		XDG_STATE_HOME=$REPO/state state_refused "$backend" "$REPO" "$REPO/state"
		ln -s "$REPO" "$SCRATCH/repo-link"
		XDG_STATE_HOME=$SCRATCH/repo-link/state state_refused "$backend" "$REPO" "$REPO/state"
		rm "$SCRATCH/repo-link"
		# Outside, but through a link inside (the sandbox could re-point it).
		mkdir -p "$SCRATCH/real-state"
		ln -s "$SCRATCH/real-state" "$REPO/state-link"
		XDG_STATE_HOME=$REPO/state-link run --separate-stderr forge-sandbox plan --backend "$backend"
		assert_failure 73
		[[ $stderr == *"cannot mount $REPO read-write: it holds $REPO/state-link, a symbolic link on the way to the state folder of sandbox $(expected_name "$REPO") (its exec socket and env file), $SCRATCH/real-state/forge/bwrap/$(expected_name "$REPO"), which no sandbox may write"* ]]
		rm "$REPO/state-link"
		# A read-write custom mount, or the scratch dir, around it.
		mkdir -p "$SCRATCH/data" "$SCRATCH/scr"
		write_config "{\"sandbox\": {\"mounts\": [{\"host\": \"$SCRATCH/data\", \"readonly\": false}]}}"
		XDG_STATE_HOME=$SCRATCH/data/state state_refused "$backend" "$SCRATCH/data" "$SCRATCH/data/state"
		write_config "{\"sandbox\": {\"scratchDir\": \"$SCRATCH/scr\"}}"
		XDG_STATE_HOME=$SCRATCH/scr/st state_refused "$backend" "$SCRATCH/scr" "$SCRATCH/scr/st"
		# Read-only around it: the sandbox cannot write it; planned.
		write_config "{\"sandbox\": {\"mounts\": [{\"host\": \"$SCRATCH/data\"}]}}"
		XDG_STATE_HOME=$SCRATCH/data/state run --separate-stderr forge-sandbox plan --backend "$backend"
		assert_success
		unset FORGE_CONFIG
	done
	[ -z "$(git status --porcelain)" ]
}

@test "forge's own state is never writable inside: a read-write mount inside forge's state folder, or around the registry or msb's state, is refused (73)" {
	name=$(expected_name "$REPO")
	mkdir -p "$XDG_STATE_HOME/forge/bwrap/forge-other-12345678" "$SCRATCH/msb"
	write_config "{\"sandbox\": {\"mounts\": [{\"host\": \"$XDG_STATE_HOME/forge/bwrap/forge-other-12345678\", \"readonly\": false}]}}"
	run --separate-stderr forge-sandbox plan --backend bwrap
	assert_failure 73
	[[ $stderr == *"cannot mount $XDG_STATE_HOME/forge/bwrap/forge-other-12345678 read-write: it holds forge's state folder, $XDG_STATE_HOME/forge, which no sandbox may write"* ]]
	# msb keeps every sandbox's mounts in its own state folder: not writable
	# from an msb sandbox; a namespace sandbox does not make msb's.
	write_config "{\"sandbox\": {\"mounts\": [{\"host\": \"$SCRATCH/msb\", \"readonly\": false}]}}"
	MSB_HOME=$SCRATCH/msb/home run --separate-stderr forge-sandbox plan --backend msb
	assert_failure 73
	[[ $stderr == *"cannot mount $SCRATCH/msb read-write: it holds msb's state folder, $SCRATCH/msb/home, which no sandbox may write"* ]]
	MSB_HOME=$SCRATCH/msb/home run --separate-stderr forge-sandbox plan --backend bwrap
	assert_success
	# The registry (and bring-up locks) without the rest of forge's state.
	mkdir -p "$SCRATCH/reg"
	write_config "{\"sandbox\": {\"mounts\": [{\"host\": \"$SCRATCH/reg\", \"readonly\": false}]}}"
	run --separate-stderr sh -c 'set -eu; forge_prog=forge-sandbox; . "$FORGE_LIBDIR/forge.sh"
		forge_config_load "$1"; forge_sandbox_backend msb
		reg=$3/sandboxes
		forge_sandbox_registry() { forge_sandbox_registry_dir=$reg forge_sandbox_registry_file=$reg/$1; }
		forge_sandbox_plan "$1" "$2"' _ "$REPO" "$name" "$SCRATCH/reg"
	assert_failure 73
	[[ $stderr == *"cannot mount $SCRATCH/reg read-write: it holds forge's registry of sandboxes, $SCRATCH/reg/sandboxes, which no sandbox may write"* ]]
}

@test "custom mounts: absolute existing directories only, no overlap with reserved or earlier ones; skipped with a reason" {
	mkdir -p "$SCRATCH/data/sub" "$SCRATCH/ro" "$SCRATCH/rw" "$SCRATCH/ext" "$SCRATCH/co:lon" "$SCRATCH/real"
	ln -s "$SCRATCH/real" "$SCRATCH/link"
	touch "$SCRATCH/file"
	write_config "{
	  \"sandbox\": {\"mounts\": [
	    {\"host\": \"$SCRATCH/ro\"},
	    {\"host\": \"$SCRATCH/rw\", \"readonly\": false},
	    {\"host\": \"relative/dir\"},
	    {\"host\": \"$SCRATCH/missing\"},
	    {\"host\": \"$SCRATCH/file\"},
	    {\"host\": \"$SCRATCH/co:lon\"},
	    {\"host\": \"$REPO/sub\"},
	    {\"host\": \"$SCRATCH\"},
	    {\"host\": \"$SCRATCH/data\"},
	    {\"host\": \"$SCRATCH/data/sub\"},
	    {\"host\": \"$SCRATCH/link\"},
	    {},
	    {\"host\": \"$SCRATCH/new\\nline\"}
	  ]},
	  \"loop\": {\"allowExternalDirectories\": [\"$SCRATCH/ext\", \"$SCRATCH/rw\", \"$SCRATCH/data/sub\"]}
	}"
	mkdir -p "$REPO/sub"
	run --separate-stderr forge-sandbox plan
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values -v
	assert_output "$(printf '%s\n' "$REPO:$REPO" "$REPO/.git/hooks:$REPO/.git/hooks:ro" "$REPO/.forge:$REPO/.forge:ro" "$(scratch):$(scratch)" \
		"$SCRATCH/ro:$SCRATCH/ro:ro" "$SCRATCH/rw:$SCRATCH/rw" "$SCRATCH/data:$SCRATCH/data:ro" \
		"$SCRATCH/real:$SCRATCH/real:ro" "$SCRATCH/ext:$SCRATCH/ext:ro")"
	w() { [[ $stderr == *"warning: $1"* ]] || fail "no warning: $1"$'\n'"$stderr"; }
	w "sandbox.mounts[2]: relative/dir is not an absolute path; skipped"
	w "sandbox.mounts[3]: $SCRATCH/missing is not an existing directory; skipped"
	w "sandbox.mounts[4]: $SCRATCH/file is not an existing directory; skipped"
	w "sandbox.mounts[5]: $SCRATCH/co:lon: msb's -v syntax cannot express a path containing ':' or ','; skipped"
	w "sandbox.mounts[6]: $REPO/sub overlaps the reserved path $REPO; skipped"
	w "sandbox.mounts[7]: $SCRATCH overlaps the reserved path $REPO; skipped"
	w "sandbox.mounts[9]: $SCRATCH/data/sub overlaps the earlier mount $SCRATCH/data; skipped"
	w "sandbox.mounts[11]: no host path; skipped"
	w "sandbox.mounts[12]: contains a newline, which cannot be mounted (the mount plan is line-based); skipped"
	w "loop.allowExternalDirectories[2]: $SCRATCH/data/sub overlaps the earlier mount $SCRATCH/data; skipped"
	# The explicit read-write entry wins over the external one, silently.
	[[ $stderr != *"allowExternalDirectories[1]"* ]]
}

@test "egress: allow entries through forge-netrule: deny by default plus one rule each, lowercased, deduplicated" {
	write_config '{"sandbox": {"network": {"allow": ["registry.npmjs.org", "*.GitHub.com", "github.com", "GITHUB.COM", "domain=localhost", "suffix=example.org"]}}}'
	plan_argv
	run plan_values --net-default
	assert_output deny
	run plan_values --net-rule
	assert_output "$(printf '%s\n' allow@registry.npmjs.org 'allow@*.github.com' allow@github.com allow@domain=localhost allow@suffix=example.org)"
}

@test "egress: a wildcard opens it (no network flags); no entries: no flags; all rejected: deny with no rules, and a warning" {
	write_config '{"sandbox": {"network": {"allow": ["example.com", "*"]}}}'
	plan_argv
	[[ " ${plan[*]} " != *" --net-"* ]]
	write_config '{"sandbox": {"network": {"allow": []}}}'
	plan_argv
	[[ " ${plan[*]} " != *" --net-"* ]]
	write_config '{"sandbox": {"network": {"allow": ["example.com:443", "*.com", "localhost", "http://x.org", "a,b.com"]}}}'
	run --separate-stderr forge-sandbox plan
	assert_success
	mapfile -t plan <<<"$output"
	[ "$(plan_values --net-default)" = deny ]
	[ -z "$(plan_values --net-rule)" ]
	[[ $stderr == *"warning: egress: rejected 'example.com:443': contains ':'"* ]]
	[[ $stderr == *"warning: egress: rejected 'localhost': has no dot"* ]]
	[[ $stderr == *"warning: egress: every entry was rejected; egress is fully denied"* ]]
}

@test "egress: an entry with a newline is rejected before forge-netrule sees it; a blank one is rejected by it" {
	write_config '{"sandbox": {"network": {"allow": ["ok.example.com", "evil.com\nallow@any", "  "]}}}'
	run --separate-stderr forge-sandbox plan
	assert_success
	mapfile -t plan <<<"$output"
	[ "$(plan_values --net-rule)" = allow@ok.example.com ]
	[[ $stderr == *"warning: sandbox.network.allow[1]: contains a newline; rejected"* ]]
	[[ $stderr == *"warning: egress: rejected '': empty entry"* ]]
}

@test "egress: a typo never leaves egress open: configured but every entry rejected is --net-default deny (SPEC 4.3)" {
	export TOKEN=x
	unset UNSET_TOKEN
	for net in '{"allow": [""]}' '{"allow": ["  "]}' '{"allow": ["a.example.com\nallow@any"]}' \
		'{"secrets": [{"env": "TOKEN", "hosts": ["api.github.com:443", "*", "*.com"]}]}' \
		'{"secrets": [{"env": "TOKEN", "hosts": [""]}]}' \
		'{"secrets": [{"env": "1BAD", "hosts": ["api.example.com"]}]}' \
		'{"secrets": [{"env": "", "hosts": ["api.example.com"]}]}' \
		'{"secrets": [{"env": "TOKEN"}]}' \
		'{"allow": [], "secrets": [{"env": "A=B", "hosts": ["api.example.com"]}]}'; do
		write_config "{\"sandbox\": {\"network\": $net}}"
		run --separate-stderr forge-sandbox plan
		assert_success
		mapfile -t plan <<<"$output"
		[ "$(plan_values --net-default)" = deny ] || fail "$net: no --net-default deny: $output"
		[ -z "$(plan_values --net-rule)" ]
		[[ $stderr == *"egress is fully denied"* ]] || fail "$net: no warning: $stderr"
	done
	# A '*' allow entry still opens it, whatever the secrets say.
	write_config '{"sandbox": {"network": {"allow": ["*"], "secrets": [{"env": "TOKEN", "hosts": ["*"]}]}}}'
	plan_argv
	[ -z "$(plan_values --net-default)" ]
	# Nothing configured at all: msb's default (no flags).
	write_config '{"sandbox": {"network": {"allow": [], "secrets": []}}}'
	plan_argv
	[ -z "$(plan_values --net-default)" ]
}

@test "env: -e NAME for names set on the host; unset ones skipped with a warning; '=', blank and invalid names dropped" {
	write_config '{"sandbox": {"network": {"env": ["FORGE_T_SET", "FORGE_T_EMPTY", "FORGE_T_UNSET", "A=B", "", "  ", "1BAD", "FORGE_T_SET"]}}}'
	export FORGE_T_SET='value that never shows' FORGE_T_EMPTY=
	unset FORGE_T_UNSET
	run --separate-stderr forge-sandbox plan
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values -e
	assert_output "$(printf '%s\n' FORGE_T_SET FORGE_T_EMPTY)"
	[[ $stderr == *"warning: sandbox.network.env[2]: FORGE_T_UNSET is not set on the host; not passed"* ]]
	[[ $stderr == *"warning: sandbox.network.env[3]: 'A=B' contains '='; dropped"* ]]
	[[ $stderr == *"warning: sandbox.network.env[6]: '1BAD' is not a valid environment variable name; dropped"* ]]
	[[ $output$stderr != *'value that never shows'* ]]
}

@test "secrets: --secret ENV@HOST,... with the valid hosts, which join the allow-list; invalid entries skipped" {
	export API_TOKEN='s3cr3t-value' OTHER_TOKEN='0ther-value'
	unset UNSET_TOKEN
	write_config '{"sandbox": {"network": {"allow": ["registry.npmjs.org"], "secrets": [
	  {"env": "API_TOKEN", "hosts": ["api.example.com", "*", "Uploads.Example.com", "domain=x"]},
	  {"env": "OTHER_TOKEN", "hosts": ["*"]},
	  {"env": "", "hosts": ["a.example.com"]},
	  {"env": "A=B", "hosts": ["a.example.com"]},
	  {"env": "UNSET_TOKEN", "hosts": ["unset.example.com"]},
	  {"env": "API_TOKEN", "hosts": ["twice.example.com"]},
	  {"env": "NO_HOSTS"}
	]}}}'
	run --separate-stderr forge-sandbox plan
	assert_success
	mapfile -t plan <<<"$output"
	run plan_values --secret
	assert_output "$(printf '%s\n' API_TOKEN@api.example.com,uploads.example.com UNSET_TOKEN@unset.example.com)"
	run plan_values --net-rule
	assert_output "$(printf '%s\n' allow@registry.npmjs.org allow@api.example.com allow@uploads.example.com allow@unset.example.com)"
	[[ $stderr == *"sandbox.network.secrets[0] (API_TOKEN): rejected '*': a wildcard cannot be a secret host"* ]]
	[[ $stderr == *"sandbox.network.secrets[1]: OTHER_TOKEN has no valid host; skipped"* ]]
	[[ $stderr == *"sandbox.network.secrets[2]: no env name; skipped"* ]]
	[[ $stderr == *"sandbox.network.secrets[3]: 'A=B' is not a valid environment variable name; skipped"* ]]
	[[ $stderr == *"sandbox.network.secrets[5]: API_TOKEN is configured twice; skipped"* ]]
	[[ $stderr == *"sandbox.network.secrets[6]: NO_HOSTS has no valid host; skipped"* ]]
	[[ $stderr != *"egress is fully denied"* ]]
	# Secret values are read by msb itself: never in the plan or a message.
	run forge-sandbox plan --json
	[[ $output != *s3cr3t-value* && $output != *0ther-value* ]]
}

@test "secrets alone restrict egress to their hosts (SPEC 4.3: the hosts of valid secrets are allow entries)" {
	export TOKEN=x
	write_config '{"sandbox": {"network": {"secrets": [{"env": "TOKEN", "hosts": ["api.example.com"]}]}}}'
	plan_argv
	[ "$(plan_values --net-default)" = deny ]
	[ "$(plan_values --net-rule)" = allow@api.example.com ]
	[ "$(plan_values --secret)" = TOKEN@api.example.com ]
}

@test "a repository's forge.json cannot widen its sandbox: both backends' plans ignore those keys; the user's \$FORGE_CONFIG sets them" {
	export AWS_SECRET_ACCESS_KEY=x GITHUB_TOKEN=y
	mkdir -p "$SCRATCH/ssh" "$SCRATCH/scratch" "$SCRATCH/tool-output" "$SCRATCH/ext"
	hostile='{"sandbox": {"mounts": [{"host": "'"$SCRATCH/ssh"'", "readonly": false}], "scratchDir": "'"$SCRATCH/scratch"'",
	  "toolOutputDir": "'"$SCRATCH/tool-output"'", "mountProjectReadonly": false,
	  "network": {"allow": ["*"], "env": ["AWS_SECRET_ACCESS_KEY"], "secrets": [{"env": "GITHUB_TOKEN", "hosts": ["evil.example.com"]}]}},
	  "loop": {"allowExternalDirectories": ["'"$SCRATCH/ext"'"]}}'
	# The user's allow-list, which the repository's "*" must not override.
	write_config '{"sandbox": {"network": {"allow": ["pypi.org"]}}}'
	for backend in msb bwrap; do
		want=$(forge-sandbox plan --backend "$backend" 2>/dev/null)
		[[ $want == *"$REPO"* ]]
		write_repo_config "$hostile"
		run --separate-stderr forge-sandbox plan --backend "$backend"
		assert_success
		assert_output "$want"
		for key in sandbox.mounts sandbox.scratchDir sandbox.toolOutputDir sandbox.mountProjectReadonly sandbox.network loop.allowExternalDirectories; do
			[[ $stderr == *"forge-sandbox: warning: $REPO/forge.json: key $key is ignored in a repository's forge.json (a repository cannot widen its own sandbox or make it cost more); set it in $XDG_CONFIG_HOME/forge/config.json, \$FORGE_CONFIG or --config"* ]]
		done
		rm forge.json
	done
	mapfile -t plan < <(forge-sandbox plan --backend msb 2>/dev/null)
	[ "$(plan_values --net-rule)" = allow@pypi.org ]
	# The same keys from the user's $FORGE_CONFIG: they reach both plans.
	write_config "$hostile"
	run --separate-stderr forge-sandbox plan --backend msb
	assert_success
	mapfile -t plan <<<"$output"
	[ "$(plan_values -e)" = AWS_SECRET_ACCESS_KEY ]
	[ "$(plan_values --secret)" = GITHUB_TOKEN@evil.example.com ]
	[[ $(plan_values -v) == *"$SCRATCH/ssh:$SCRATCH/ssh"* ]]
	[[ $(plan_values -v) == *"$SCRATCH/scratch:$SCRATCH/scratch"* ]]
	[[ $(plan_values -v) == *"$SCRATCH/ext:$SCRATCH/ext"* ]]
	[[ $stderr != *"is ignored"* ]]
	run --separate-stderr forge-sandbox plan --backend bwrap
	assert_success
	mapfile -t plan <<<"$output"
	[ "$(plan_values --bind | grep -cxF -- "$SCRATCH/ssh")" -eq 1 ]
	[ "$(plan_values --bind | grep -cxF -- "$SCRATCH/scratch")" -eq 1 ]
	[[ $stderr != *"is ignored"* ]]
}

@test "a repository's forge.json cannot raise resources, pick the image, the backend or the host rootfs: one warning each; both plans keep the user's values" {
	write_config '{"sandbox": {"resources": {"memory": "512m", "cpus": 1, "dockerDisk": "1g", "cacheDisk": "1g"}}}'
	write_repo_config '{"sandbox": {"resources": {"memory": "64g", "cpus": 64, "dockerDisk": "1t", "cacheDisk": "1t"},
	  "image": "registry.example/private:1", "backend": "msb", "bwrap": {"rootfs": "host"}},
	  "verify": {"steps": [{"name": "unit", "run": "true"}]}}'
	run --separate-stderr forge-sandbox plan --backend msb
	assert_success
	mapfile -t plan <<<"$output"
	[ "$(plan_values -c)" = 1 ]
	[ "$(plan_values -m)" = 512m ]
	[ "$(plan_values create)" = oc-forge-sandbox:latest ]
	[[ $(plan_values --mount-named) == *docker-data:/var/lib/docker:kind=disk,size=1g*cache-data:/opt/forge/.cache:kind=disk,size=1g ]]
	for key in sandbox.resources sandbox.image sandbox.backend sandbox.bwrap.rootfs; do
		[ "$(grep -cF -- "warning: $REPO/forge.json: key $key is ignored in a repository's forge.json" <<<"$stderr")" -eq 1 ] || fail "$key: $stderr"
	done
	[ "$(grep -c 'is ignored' <<<"$stderr")" -eq 4 ]
	# The namespace backend (its limits come from the same plan values): the
	# image rootfs, not the host's /usr.
	run --separate-stderr forge-sandbox plan --backend bwrap
	assert_success
	[[ $output != *"--ro-bind
/usr
/usr"* ]]
	[ "$(grep -c 'is ignored' <<<"$stderr")" -eq 4 ]
}

@test "hostile configuration values are never executed" {
	mkdir -p "$SCRATCH/bin"
	h="\$(touch $SCRATCH/pwned1)"
	b="\`touch $SCRATCH/pwned2\`"
	write_config "{\"sandbox\": {
	  \"mounts\": [{\"host\": \"/tmp/\$(touch $SCRATCH/pwned3)\"}, {\"host\": \"$b\"}],
	  \"toolOutputDir\": \"$h\", \"scratchDir\": \"/x;touch $SCRATCH/pwned4\",
	  \"network\": {\"allow\": [\"$h\", \"$b\", \"a.com; touch $SCRATCH/pwned5\"],
	    \"env\": [\"$h\", \"PATH;touch\"],
	    \"secrets\": [{\"env\": \"$h\", \"hosts\": [\"$b\"]}, {\"env\": \"T\", \"hosts\": [\"$h\", \"-rf\", \"--help\"]}]}},
	  \"loop\": {\"allowExternalDirectories\": [\"$h\", \"-x\"]}}"
	run forge-sandbox plan
	assert_success
	write_config "{\"sandbox\": {\"image\": \"$h\"}}"
	run forge-sandbox plan
	assert_failure 65
	assert_output --partial "configuration key sandbox.image: invalid image reference"
	write_config '{"sandbox": {"image": "--help"}}'
	run forge-sandbox plan
	assert_failure 65
	write_config '{"sandbox": {"image": "img\nx"}}'
	run forge-sandbox plan
	assert_failure 65
	run ls "$SCRATCH"
	[[ $output != *pwned* ]]
}

@test "a bad configuration file: exit 65 naming the file and key" {
	printf '{"sandbox": {"mounts": "x"}}' >forge.json
	run forge-sandbox plan
	assert_failure 65
	assert_output --partial "forge.json: key sandbox.mounts: expected an array"
	printf '{not json' >forge.json
	run forge-sandbox plan
	assert_failure 65
}

@test "plan runs under dash and busybox sh with the same result" {
	export API_TOKEN=x FORGE_T_SET=y
	git worktree add -q "$SCRATCH/wt" 2>/dev/null
	write_config '{"sandbox": {"resources": {"memory": "1.5g"}, "network": {"allow": ["*.example.com"], "env": ["FORGE_T_SET"], "secrets": [{"env": "API_TOKEN", "hosts": ["api.example.com"]}]}, "mounts": [{"host": "/usr"}]}}'
	want=$(forge-sandbox plan "$SCRATCH/wt")
	for shell in dash 'busybox sh'; do
		command -v "${shell%% *}" >/dev/null || { [ "${CI:-}" != true ] || fail "$shell missing"; continue; }
		run --separate-stderr $shell "$abs_top_builddir/bin/forge-sandbox" plan "$SCRATCH/wt"
		assert_success
		assert_output "$want"
		run $shell "$abs_top_builddir/bin/forge-sandbox" env "$SCRATCH/wt"
		assert_output "export FORGE_SANDBOX_CONTAINER='$(expected_name "$SCRATCH/wt")'"
	done
}

@test "every subcommand answers --help on stdout with exit 0; --version" {
	for cmd in doctor build-image plan up exec shell check log allow deny env ls rm prune; do
		run --separate-stderr forge-sandbox "$cmd" --help
		assert_success
		assert_line --index 0 --partial 'Usage: forge-sandbox doctor'
		[ -z "$stderr" ]
	done
	run forge-sandbox --help
	assert_success
	assert_output --partial 'forge-sandbox exec  [DIR] [-t] -- COMMAND [ARG...]'
	assert_output --partial 'forge-sandbox shell [DIR]'
	assert_output --partial 'forge-sandbox allow [DIR] HOST... [--for DURATION]'
	run forge-sandbox --version
	assert_success
	assert_output --regexp '^forge-sandbox [0-9]'
}

@test "usage errors exit 64" {
	for args in '' 'frobnicate' 'plan --bogus' 'plan --json -z' 'plan a b' 'up a b' 'exec' 'exec true' 'exec --' \
		'exec a b -- true' 'env --x' 'ls --bogus' 'ls x' 'rm a b' 'prune x' 'prune --keep' 'prune --frob' 'doctor x'; do
		# shellcheck disable=SC2086 # the words of each case
		run forge-sandbox $args
		[ "$status" -eq 64 ] || fail "forge-sandbox $args: exit $status, want 64: $output"
	done
}

@test "build-image dispatches to forge_image_build with its arguments; 69 when that is not available" {
	mkdir "$SCRATCH/lib"
	cp "$FORGE_LIBDIR"/*.sh "$SCRATCH/lib/"
	printf '%s\n' '# shellcheck shell=sh' 'forge_image_build() { printf "[%s]" "$@"; echo; return 3; }' >"$SCRATCH/lib/forge-image.sh"
	FORGE_LIBDIR=$SCRATCH/lib run forge-sandbox build-image --tag 'my img:1' --context "$SCRATCH"
	assert_failure 3
	assert_output "[--tag][my img:1][--context][$SCRATCH]"
	printf '%s\n' '# shellcheck shell=sh' >"$SCRATCH/lib/forge-image.sh"
	FORGE_LIBDIR=$SCRATCH/lib run forge-sandbox build-image --tag x
	assert_failure 69
	assert_output --partial 'build-image is not available'
}

@test "the library: locate, name, plan and mounts are callable after sourcing forge.sh" {
	run sh -c '
		set -eu
		. "$FORGE_LIBDIR/forge.sh"
		forge_prog=lib
		cd "$1"
		forge_sandbox_locate
		printf "%s %s\n" "$forge_sandbox_root" "$forge_sandbox_name"
		forge_config_load "$forge_sandbox_root"
		forge_sandbox_plan "$forge_sandbox_root" "$forge_sandbox_name"
		printf "%s" "$forge_sandbox_plan" | sed -n 2p
		printf "%s" "$forge_mounts" | head -n 1' _ "$REPO"
	assert_success
	assert_line --index 0 "$REPO $(expected_name "$REPO")"
	assert_line --index 1 create
	assert_line --index 2 "rw $REPO"
}

# git_mounts: the mounts of the plan array that lie in $REPO/.git, as
# "FLAG PATH" lines in order (bwrap: --bind/--ro-bind SRC DEST; msb: -v SPEC).
git_mounts() {
	local i
	for ((i = 0; i < ${#plan[@]} - 1; i++)); do
		case ${plan[i]}/${plan[i + 1]} in
		--bind/"$REPO/.git"* | --ro-bind/"$REPO/.git"* | -v/"$REPO/.git"*) printf '%s %s\n' "${plan[i]}" "${plan[i + 1]}" ;;
		esac
	done
}

# twice_mounted: the mount destinations the array plan names more than once
# (bwrap's --bind/--ro-bind SRC DEST, msb's -v SRC:DEST[:ro]), and every
# argument with a '//' in it; /etc/resolv.conf is bwrap's on purpose (the
# sandbox's own over the host's).
twice_mounted() {
	local i
	for ((i = 0; i < ${#plan[@]}; i++)); do
		[[ ${plan[i]} != *//* ]] || printf 'joined: %s\n' "${plan[i]}"
		case ${plan[i]} in
		--bind | --ro-bind) [ "${plan[i + 2]}" = /etc/resolv.conf ] || printf '%s\n' "${plan[i + 2]}" ;;
		-v) printf '%s\n' "${plan[i + 1]}" | cut -d: -f2 ;;
		esac
	done | LC_ALL=C sort | uniq -d
}

@test "plan mounts each git dir once, however DIR is spelled (trailing slashes, a linked worktree, a submodule): no path joined with '//'" {
	printf '{"sandbox": {"bwrap": {"rootfs": "host"}}}\n' >"$XDG_CONFIG_HOME/forge/config.json"
	git worktree add -q "$SCRATCH/linked"
	make_repo "$SCRATCH/sub-src"
	git -c protocol.file.allow=always submodule add -q "$SCRATCH/sub-src" sub 2>/dev/null
	git commit -qm sub
	for dir in "$REPO" "$REPO/" "$REPO//" "$REPO/." "$SCRATCH/linked/" "$REPO/sub"; do
		for backend in bwrap msb; do
			plan_argv --backend "$backend" "$dir"
			run twice_mounted
			assert_output ''
		done
	done
	plan_argv --backend bwrap "$REPO/"
	run grep -c -x -F -- "$REPO/.git" < <(printf '%s\n' "${plan[@]}")
	assert_output 2
}

@test "the git dirs: bwrap's plan mounts the common dir's root read-only, objects, refs, logs and the worktree's git dir read-write on top; msb's, which cannot nest, read-write" {
	printf '{"sandbox": {"backend": "msb", "bwrap": {"rootfs": "host"}}}\n' >"$XDG_CONFIG_HOME/forge/config.json"
	git worktree add -q "$SCRATCH/linked"
	linked=$(cd "$SCRATCH/linked" && pwd -P)
	g=$REPO/.git
	plan_argv --backend bwrap "$linked"
	expected=("--ro-bind $g" "--bind $g/objects" "--bind $g/refs" "--bind $g/logs" "--ro-bind $g/objects/info"
		"--bind $g/worktrees/linked" "--ro-bind $g/worktrees/linked/commondir" "--ro-bind $g/worktrees/linked/gitdir")
	[ "$(git_mounts)" = "$(printf '%s\n' "${expected[@]}")" ]
	plan_argv --backend msb "$linked"
	[ "$(git_mounts)" = "$(printf '%s\n' "-v $g:$g" "-v $g/hooks:$g/hooks:ro")" ]
	# The main worktree: its .git read-only inside the read-write worktree.
	plan_argv --backend bwrap "$REPO"
	[ "$(git_mounts)" = "$(printf '%s\n' "--ro-bind $g" "--bind $g/objects" "--bind $g/refs" "--bind $g/logs" "--ro-bind $g/objects/info")" ]
	# Nothing was created by plan.
	rm -rf "$g/logs"
	plan_argv --backend bwrap "$REPO"
	[ ! -e "$g/logs" ]
	[ "$(git_mounts | grep -c logs)" -eq 1 ]
}

@test "a symbolic link at the git dir's objects, refs, logs or objects/info: bwrap's plan exits 73 naming it" {
	for sub in logs objects/info; do
		mv ".git/$sub" "$SCRATCH/moved"
		ln -s "$SCRATCH/moved" ".git/$sub"
		run forge-sandbox plan --backend bwrap
		assert_failure 73
		assert_output --partial "cannot mount the git dir's $REPO/.git/$sub: it is not a folder"
		rm ".git/$sub"
		mv "$SCRATCH/moved" ".git/$sub"
	done
}

# --- the backend-neutral plan (forge(7) THE SANDBOX PLAN) ---------------------

@test "plan --json: the plan's schema, the same for both backends but for backend, mounts and argv" {
	export FORGE_T_ENV=1 API_TOKEN=x
	write_config '{"sandbox": {"bwrap": {"rootfs": "host"}, "resources": {"cpus": "2.5", "memory": "1.5g"},
	  "network": {"allow": ["Registry.Example.com", "bad host"], "env": ["FORGE_T_ENV", "FORGE_T_UNSET"],
	    "secrets": [{"env": "API_TOKEN", "hosts": ["api.example.com"]}]}}}'
	for backend in msb bwrap; do
		run --separate-stderr forge-sandbox plan --backend "$backend" --json
		assert_success
		printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/$backend.json"
		jq -e --arg b "$backend" --arg n "$(expected_name "$REPO")" --arg repo "$REPO" '
		  (keys == (["name", "backend", "image", "cpus", "memory", "disks", "mounts", "project", "env",
		             "secrets", "egress", "unset", "argv"] | sort))
		  and .name == $n and .backend == $b and .image == "oc-forge-sandbox:latest"
		  and .cpus == 2 and .memory == 1536 and .disks == {docker: 16384, cache: 16384}
		  and (.mounts | length > 0 and all(.[]; (keys == ["path", "ro", "why"]) and (.path | type == "string")
		       and (.ro | type == "boolean") and (.why | type == "string")))
		  and .mounts[0] == {path: $repo, ro: false, why: "worktree"}
		  and .project == null and .env == ["FORGE_T_ENV"]
		  and .secrets == [{env: "API_TOKEN", hosts: ["api.example.com"]}]
		  and .egress == {mode: "allow", hosts: ["registry.example.com", "api.example.com"]}
		  and .unset == [] and .argv[0] == (if $b == "msb" then "msb" else "bwrap" end)' "$BATS_TEST_TMPDIR/$backend.json"
	done
	# What does not depend on how a backend mounts is the same plan.
	[ "$(jq -c 'del(.backend, .mounts, .argv)' "$BATS_TEST_TMPDIR/msb.json")" = "$(jq -c 'del(.backend, .mounts, .argv)' "$BATS_TEST_TMPDIR/bwrap.json")" ]
}

@test "plan --json: egress mode open (nothing configured, or a wildcard), deny (everything rejected)" {
	run --separate-stderr forge-sandbox plan --json
	assert_success
	[ "$(jq -c .egress <<<"$output")" = '{"mode":"open","hosts":[]}' ]
	write_config '{"sandbox": {"network": {"allow": ["*", "example.com"]}}}'
	run --separate-stderr forge-sandbox plan --json
	[ "$(jq -c .egress <<<"$output")" = '{"mode":"open","hosts":[]}' ]
	write_config '{"sandbox": {"network": {"allow": ["*.com", "a b"]}}}'
	run --separate-stderr forge-sandbox plan --json
	[ "$(jq -c .egress <<<"$output")" = '{"mode":"deny","hosts":[]}' ]
	# msb's rendering: deny by default, and no rule.
	[ "$(jq -c '[.argv[] | select(startswith("--net-") or . == "deny")]' <<<"$output")" = '["--net-default","deny"]' ]
}

# render_both PLAN: the msb argv and the namespace sandbox's argv, env names,
# limits and egress that each backend's renderer makes of the same PLAN.
render_both() {
	sh -c 'set -eu; forge_prog=forge-sandbox; . "$FORGE_LIBDIR/forge.sh"
		forge_config_load "$1"
		forge_msb_render "$3"
		forge_msb_argv_print | tr "\000" "\n" >"$4/msb.argv"
		forge_bwrap_render "$1" "$2" "$3"
		forge_bwrap_argv_print | tr "\000" "\n" >"$4/bwrap.argv"
		printf "env %s\n" $forge_bwrap_env_names >"$4/bwrap.rest"
		printf "limits %s %s\nnet %s\n" "$forge_sandbox_cpus" "$forge_sandbox_memory_mib" "$forge_bwrap_netmode" >>"$4/bwrap.rest"
		printf "host %s\n" $forge_sandbox_egress_hosts >>"$4/bwrap.rest"' _ "$REPO" "$(expected_name "$REPO")" "$1" "$BATS_TEST_TMPDIR"
}

@test "one plan, two renderers: msb's argv and bwrap's each carry the plan's mounts, env, limits and egress" {
	mkdir -p "$SCRATCH/ro-dir" "$SCRATCH/rw dir"
	ro=$(realpath "$SCRATCH/ro-dir") rw=$(realpath "$SCRATCH/rw dir")
	write_config '{"sandbox": {"bwrap": {"rootfs": "host"}}}'
	plan=$(jq -cn --arg repo "$REPO" --arg ro "$ro" --arg rw "$rw" --arg name "$(expected_name "$REPO")" '{
	  name: $name, backend: "bwrap", image: "oc-forge-sandbox:latest", cpus: 3, memory: 1536,
	  disks: {docker: 2048, cache: 1000},
	  mounts: [{path: $repo, ro: false, why: "worktree"}, {path: $ro, ro: true, why: "sandbox.mounts[0]"},
	           {path: $rw, ro: false, why: "sandbox.mounts[1]"}],
	  project: null, env: ["FORGE_T_ENV"], secrets: [],
	  egress: {mode: "allow", hosts: ["api.example.com", "*.example.org"]}, unset: []}')
	run render_both "$plan"
	assert_success
	mapfile -t msb <"$BATS_TEST_TMPDIR/msb.argv"
	want=(msb create oc-forge-sandbox:latest --name "$(expected_name "$REPO")" --quiet -c 3 -m 1536m
		-v "$REPO:$REPO" -v "$ro:$ro:ro" -v "$rw:$rw"
		--mount-named "$(expected_name "$REPO")-docker-data:/var/lib/docker:kind=disk,size=2g"
		--mount-named "$(expected_name "$REPO")-cache-data:/opt/forge/.cache:kind=disk,size=1000m"
		--net-default deny --net-rule allow@api.example.com --net-rule 'allow@*.example.org' -e FORGE_T_ENV)
	[ "$(printf '%s\n' "${msb[@]}")" = "$(printf '%s\n' "${want[@]}")" ]
	# bwrap: the same mounts at the same paths with the same flags, in order.
	run grep -c . "$BATS_TEST_TMPDIR/bwrap.argv"
	run awk 'prev == "--bind" || prev == "--ro-bind" { f = prev; getline dest; if ($0 == dest) print f, $0 } { prev = $0 }' "$BATS_TEST_TMPDIR/bwrap.argv"
	assert_line -- "--bind $REPO"
	assert_line -- "--ro-bind $ro"
	assert_line -- "--bind $rw"
	run cat "$BATS_TEST_TMPDIR/bwrap.rest"
	assert_line 'env FORGE_T_ENV'
	assert_line 'limits 3 1536'
	assert_line 'net restricted'
	assert_line 'host api.example.com'
	assert_line 'host *.example.org'
	# Restricted: only lo, the relay's folder mounted in.
	grep -qx -- /run/forge/net "$BATS_TEST_TMPDIR/bwrap.argv"
}

@test "the bwrap renderer writes its argv NUL-separated: any argument but NUL as it is (a newline, a backslash, printf's escapes, an empty one)" {
	args=($'a\nb' 'back\slash' '\c' '\0101' '%s' '' 'end\' $'\n' '\\n' --args)
	sh -c 'set -eu; . "$FORGE_LIBDIR/forge.sh"; forge_bwrap_state x
		forge_bwrap_add --setenv "$@"
		forge_bwrap_argv_print >"$BATS_TEST_TMPDIR/argv"
		forge_bwrap_argv_print launch >"$BATS_TEST_TMPDIR/launch"' _ "${args[@]}"
	mapfile -d '' -t got <"$BATS_TEST_TMPDIR/argv"
	want=(bwrap --setenv "${args[@]}" /run/forge/sandbox-init serve 3)
	assert_equal "${#got[@]}" "${#want[@]}"
	for i in "${!want[@]}"; do
		assert_equal "${got[i]}" "${want[i]}"
	done
	# For bwrap --args: the options alone, the command stays on its command line.
	mapfile -d '' -t got <"$BATS_TEST_TMPDIR/launch"
	want=(--setenv "${args[@]}")
	assert_equal "${#got[@]}" "${#want[@]}"
	for i in "${!want[@]}"; do
		assert_equal "${got[i]}" "${want[i]}"
	done
}

@test "the bwrap renderer's --args FD: in the plan as it is, for the launch replaced in place by what FD holds (bwrap reads no --args in --args)" {
	printf -- '--setenv\0TOKEN\0v a\nl\0' >"$BATS_TEST_TMPDIR/fd6"
	sh -c 'set -eu; . "$FORGE_LIBDIR/forge.sh"; forge_bwrap_state x
		forge_bwrap_add --clearenv
		forge_bwrap_add --args 6 --setenv A 1
		forge_bwrap_argv_print >"$BATS_TEST_TMPDIR/argv"
		forge_bwrap_argv_print launch 6<"$BATS_TEST_TMPDIR/fd6" >"$BATS_TEST_TMPDIR/launch"'
	run sh -c 'tr "\000" "\n" <"$1"' _ "$BATS_TEST_TMPDIR/argv"
	assert_output "$(printf '%s\n' bwrap --clearenv --args 6 --setenv A 1 /run/forge/sandbox-init serve 3)"
	mapfile -d '' -t got <"$BATS_TEST_TMPDIR/launch"
	want=(--clearenv --setenv TOKEN $'v a\nl' --setenv A 1)
	assert_equal "${#got[@]}" "${#want[@]}"
	for i in "${!want[@]}"; do
		assert_equal "${got[i]}" "${want[i]}"
	done
}

@test "plan: sandbox.image with '+' is accepted, by the rule build-image uses too" {
	write_config '{"sandbox": {"image": "reg.example/img@sha256+b64u:abc"}}'
	plan_argv
	[ "${plan[2]}" = reg.example/img@sha256+b64u:abc ]
	write_config '{"sandbox": {"image": ".img"}}'
	run forge-sandbox plan
	assert_failure 65
}

@test "XDG defaults (forge_xdg_dir): a relative XDG_STATE_HOME, XDG_CACHE_HOME or XDG_DATA_HOME is ignored for the registry, the namespace state, the rootfs cache and the tool output dir" {
	mkdir -p "$HOME/.local/share/opencode/tool-output"
	run env XDG_STATE_HOME=rel-state XDG_CACHE_HOME=rel-cache XDG_DATA_HOME=rel-data sh -c 'set -eu
		forge_prog=t; . "$FORGE_LIBDIR/forge.sh"
		forge_sandbox_registry x; printf "%s\n" "$forge_sandbox_registry_dir"
		forge_bwrap_state x; printf "%s\n" "$forge_bwrap_dir"
		cd "$1"; forge_config_load "$1"; forge_plan "$1" x msb; printf "%s\n" "$forge_mounts"'  _ "$REPO"
	assert_success
	assert_line --index 0 "$HOME/.local/state/forge/sandboxes"
	assert_line --index 1 "$HOME/.local/state/forge/bwrap/x"
	assert_line "ro $(realpath "$HOME/.local/share/opencode/tool-output")"
}
