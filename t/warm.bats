#!/usr/bin/env bats
# forge-verify --isolated --warm (SPEC 3.5): pooled copies that the steps
# cannot tell from a fresh one.
load test_helper
load isolated_helper

setup() { isolated_setup; }
teardown() { forge_test_teardown; }


@test "a warm copy equals the working state, run after run, whatever earlier steps did" {
	printf 'build/\n' >.gitignore
	printf 'one\n' >a.txt
	git add -A && git commit -q -m files
	echo edit >>a.txt
	echo first >untracked-1
	check_copy --warm
	# Next state: the untracked file is gone, another appears, a file is
	# deleted; the earlier run's garbage and ignored output must not survive.
	rm untracked-1
	echo second >untracked-2
	git rm -qf a.txt
	check_copy --warm
	run forge-verify --isolated --warm -- sh -c 'mkdir -p build && echo out >build/out && echo junk >junk && rm README'
	assert_success
	git reset -q -- a.txt && git checkout -q -- a.txt
	check_copy --warm
	[ -d "$(pool)/1" ]
	[ ! -d "$(pool)/2" ]
}

# --- a warm copy equals a cold one, every time (issue 18, item 9) -------------------

@test "200 resets in quick succession after same-size rewrites, restored mtimes, mode and type changes: 0 differences" {
	printf 'AAAA\n' >t.txt
	git add t.txt && git commit -q -m t
	# The library's reset, driven directly: each round changes t.txt in the
	# slot the way a step could, at once after the reset (the same second),
	# resets, and checks the file is HEAD's again, byte for byte.
	run sh -c '
		set -eu
		. "$FORGE_LIBDIR/forge.sh"
		forge_repo_root .
		forge_config_load "$forge_root"
		forge_config_verify
		forge_isolated_keep=
		forge_pool_acquire "$forge_root"
		c=$forge_copy_dir bad=0 i=0
		while [ "$i" -lt 200 ]; do
			case $((i % 6)) in
			0) printf "BBBB\n" >"$c/t.txt" ;;
			1) touch -r "$c/t.txt" "$1/stamp"; printf "CCCC\n" >"$c/t.txt"; touch -r "$1/stamp" "$c/t.txt" ;;
			2) chmod +x "$c/t.txt" ;;
			3) rm "$c/t.txt"; mkdir "$c/t.txt"; printf "AAAA\n" >"$c/t.txt/in" ;;
			4) rm "$c/t.txt"; ln -s README "$c/t.txt" ;;
			5) printf "DDDD\n" >"$c/t.tmp"; mv "$c/t.tmp" "$c/t.txt" ;;
			esac
			forge_pool_reset "$forge_root"
			if [ -L "$c/t.txt" ] || [ ! -f "$c/t.txt" ] || [ -x "$c/t.txt" ] ||
				[ "$(cat "$c/t.txt")" != AAAA ]; then
				bad=$((bad + 1))
			fi
			i=$((i + 1))
		done
		echo "differences: $bad"
	' sh "$SCRATCH"
	assert_success
	assert_output 'differences: 0'
}

@test "warm runs in quick succession: a same-size rewrite of a committed or an uncommitted binary file never survives" {
	printf 'AAAA\n' >t.txt
	head -c 4096 /dev/zero >bin.dat
	git add t.txt bin.dat && git commit -q -m t
	# Uncommitted: the binary file changed (the patch replays it).
	head -c 4096 /dev/zero | tr '\0' '\1' >bin.dat
	local i
	for i in $(seq 1 12); do
		run forge-verify -q --isolated --warm -- sh -c 'printf "BBBB\n" >t.txt && head -c 4096 /dev/zero | tr "\0" "\2" >bin.dat'
		assert_success
		run forge-verify -q --isolated --warm -- sh -c 'grep -q AAAA t.txt && [ "$(od -An -c bin.dat | tr -d " \n" | cut -c1-6)" = 001001 ]'
		assert_success
	done
}

@test "a warm slot after hostile steps holds what a cold copy holds: paths, modes, contents, symlink targets" {
	mkdir -p src/deep lib
	printf 'one\n' >src/a.c
	printf 'two\n' >src/deep/b.c
	printf '#!/bin/sh\necho hi\n' >run.sh && chmod +x run.sh
	ln -s src/a.c link
	ln -s deep src/dlink
	printf 'lib\n' >lib/l.txt
	printf 'build/\n' >.gitignore
	git add -A && git commit -q -m tree
	# The working state: edits, a deletion, a mode change, untracked files.
	echo edit >>src/a.c
	git rm -q src/deep/b.c
	chmod +x lib/l.txt
	echo new >untracked.txt
	mkdir -p newdir && echo n >newdir/n.txt
	cat >"$SCRATCH/bin/hostile-step" <<'SH'
#!/bin/sh
# What a step may do to its copy: same-size rewrites with the mtime put
# back, mode changes, files made folders and symlinks, folders made links,
# deletions, new files, ignored output, and git state.
set -e
touch -r src/a.c "$SCRATCH/stamp"; printf 'ONE\nEDIT\n' >src/a.c; touch -r "$SCRATCH/stamp" src/a.c
printf 'LIB\n' >lib/l.txt; chmod -x lib/l.txt
chmod -x run.sh
rm link; mkdir link; echo x >link/inside
rm -r src/deep 2>/dev/null || :; ln -s /tmp src/deep
rm src/dlink; echo file >src/dlink
rm untracked.txt; rm -r newdir
chmod 700 . src
mkdir -p build && echo out >build/out
echo junk >junk
git update-index --skip-worktree README 2>/dev/null || :
git config core.sparseCheckout true
SH
	chmod +x "$SCRATCH/bin/hostile-step"
	cat >"$SCRATCH/bin/manifest" <<'SH'
#!/bin/sh
# manifest OUT: every path of the copy but .git: type, mode, content digest
# or symlink target.
find . -path ./.git -prune -o -print | LC_ALL=C sort | while IFS= read -r p; do
	if [ -L "$p" ]; then printf 'L %s -> %s\n' "$p" "$(readlink "$p")"
	elif [ -d "$p" ]; then printf 'D %s %s\n' "$p" "$(stat -c %a "$p")"
	else printf 'F %s %s %s\n' "$p" "$(stat -c %a "$p")" "$(sha256sum <"$p" | cut -c1-16)"
	fi
done >"$1"
SH
	chmod +x "$SCRATCH/bin/manifest"
	export SCRATCH
	run forge-verify -q --isolated --warm -- hostile-step
	assert_success
	run forge-verify -q --isolated --warm -- manifest "$SCRATCH/warm.manifest"
	assert_success
	run forge-verify -q --isolated -- manifest "$SCRATCH/cold.manifest"
	assert_success
	run diff "$SCRATCH/cold.manifest" "$SCRATCH/warm.manifest"
	assert_success
	grep -q '^L ./link -> src/a.c$' "$SCRATCH/warm.manifest"
	grep -q '^F ./newdir/n.txt ' "$SCRATCH/warm.manifest"
}

@test "a new commit between runs: the slot moves to the new HEAD" {
	run forge-verify --isolated --warm -- true
	echo v2 >README && git commit -q -am v2
	echo v3 >added && git add added && git commit -q -m v3
	check_copy --warm
}

@test "verify.isolated.warm in the configuration selects the pool" {
	echo '{"verify": {"isolated": {"warm": true}}}' >forge.json
	run forge-verify --isolated -- sh -c 'pwd'
	assert_success
	grep -q "$(pool)/1/" .forge/runs/*/1-command.log
	[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'forge-verify.*')" ]
}

@test "two concurrent warm runs use two slots" {
	forge-verify --isolated --warm -- sh -c "touch '$SCRATCH/one'; while [ ! -e '$SCRATCH/go' ]; do sleep 0.1; done" >/dev/null 2>&1 &
	first=$!
	for _ in $(seq 1 100); do [ -e "$SCRATCH/one" ] && break; sleep 0.1; done
	run forge-verify --isolated --warm -- sh -c pwd
	assert_success
	touch "$SCRATCH/go"
	wait "$first"
	grep -rq "$(pool)/2/" .forge/runs/
	grep -rq "$(pool)/1/" .forge/runs/ || true
	[ -d "$(pool)/1" ]
	[ -d "$(pool)/2" ]
}

@test "a background process left by a step does not hold the slot" {
	# setsid: forge-timeout ends what a step leaves in its own process group.
	run forge-verify --isolated --warm -- sh -c "setsid sh -c 'echo \$\$ >\"\$1\"; exec sleep 30' sh '$SCRATCH/bg.pid' >/dev/null 2>&1 & while [ ! -s '$SCRATCH/bg.pid' ]; do sleep 0.05; done"
	assert_success
	kill -0 "$(cat "$SCRATCH/bg.pid")" # still running
	run forge-verify --isolated --warm -- sh -c pwd
	assert_success
	[ ! -d "$(pool)/2" ]
	kill "$(cat "$SCRATCH/bg.pid")" || : # only this test's process
}

@test "a broken slot is made anew" {
	run forge-verify --isolated --warm -- true
	echo garbage >"$(pool)/1.state/index"
	check_copy --warm
	rm -rf "$(pool)/1/repo"
	check_copy --warm
	[ ! -d "$(pool)/2" ]
}

@test "SIGINT and SIGTERM mid-step: exit 130/143, the slot is free again, no temp dir" {
	for sig in INT TERM; do
		rm -f "$SCRATCH/started"
		perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- \
			forge-verify --isolated --warm -- sh -c "touch '$SCRATCH/started'; sleep 60" &
		pid=$!
		for _ in $(seq 1 100); do [ -e "$SCRATCH/started" ] && break; sleep 0.1; done
		kill -s "$sig" "$pid"
		wait "$pid" && rc=0 || rc=$?
		case $sig in INT) [ "$rc" -eq 130 ] ;; TERM) [ "$rc" -eq 143 ] ;; esac
	done
	echo change >>README
	check_copy --warm
	[ ! -d "$(pool)/2" ]
}

@test "8 concurrent warm runs: all pass, timeline exact" {
	echo change >>README
	echo '{"verify": {"breaker": {"threshold": 100}}}' >forge.json
	pids=
	for i in $(seq 1 8); do
		forge-verify -q --isolated --warm -- sh -c 'grep -q change README && echo x >junk && test ! -e junk.old; mv junk junk.old' >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	[ "$(grep -c '"verdict":"PASS"' .forge/timeline.jsonl)" -eq 8 ]
	[ "$(wc -l <.forge/timeline.jsonl)" -eq 8 ]
	assert_no_leftovers
}

# --- where the pool lives (SPEC 3.5) ---------------------------------------------

# The step: fails if any parent folder of the copy is, or holds something
# of, the real repository, as node, go and Python tools would find it.
PARENTS_STEP='d=$PWD; test "$(git rev-parse --show-toplevel)" = "$d"
while [ "$d" != / ]; do
	d=${d%/*}; d=${d:-/}
	[ "$d" != "$REPO" ] || exit 3
	for f in node_modules/esc go.work .venv pyproject.toml; do [ ! -e "$d/$f" ] || exit 4; done
done
node -e "require(\"esc\")" 2>/dev/null && exit 5
exit 0'

@test "the pool lives in the user's cache, named after the repository; no parent folder of a copy is the real repository" {
	command -v node >/dev/null || [ "${CI:-}" != true ] || fail "node is required in CI"
	printf 'node_modules/\ngo.work\n.venv/\n' >.gitignore
	git add .gitignore && git commit -q -m ignore
	mkdir -p node_modules/esc .venv
	echo 'module.exports = 1' >node_modules/esc/index.js
	printf 'go 1.21\nuse .\n' >go.work
	export REPO
	for mode in --warm '' --warm; do
		run forge-verify --isolated $mode -- sh -c "$PARENTS_STEP"
		assert_success
	done
	[ -d "$(pool)/1/repo/.git" ]
	[ "$(cat "$(pool)/source")" = "$REPO/.git" ]
	grep -q '"isolated":"warm"' .forge/timeline.jsonl
	grep -q '"isolated":"cold"' .forge/timeline.jsonl
	# XDG_CACHE_HOME moves it; inside the repository it is refused.
	XDG_CACHE_HOME=$SCRATCH/xdg run forge-verify --isolated --warm -- sh -c "$PARENTS_STEP"
	assert_success
	[ -d "$SCRATCH/xdg/forge/pool/$(basename "$(pool)")/1/repo" ]
	XDG_CACHE_HOME=$REPO/node_modules run forge-verify --isolated --warm -- touch "$SCRATCH/ran"
	assert_failure 73
	assert_output --partial 'lies inside the repository'
	[ ! -e "$SCRATCH/ran" ]
	[ ! -e node_modules/forge ]
	assert_no_leftovers
}

@test "a relative TMPDIR does not stop a warm run, and nothing of the work tree is pruned as a stale copy" {
	mkdir -p tmp/forge-verify.ffffff
	echo mine >tmp/forge-verify.ffffff/file
	TMPDIR=tmp run forge-verify --isolated --warm -- true
	assert_success
	[ "$(cat tmp/forge-verify.ffffff/file)" = mine ]
}

@test "an absolute TMPDIR inside the repository (or a link to it): neither a warm run nor --prune removes a folder of the work tree" {
	mkdir -p forge-verify.abcdef .git/forge-verify.abcdef
	echo mine >forge-verify.abcdef/file
	echo mine >.git/forge-verify.abcdef/file
	ln -s "$REPO" "$SCRATCH/link"
	for dir in "$REPO" "$REPO/.git" "$SCRATCH/link"; do
		TMPDIR=$dir run forge-verify --isolated --warm -- true
		assert_success
		TMPDIR=$dir run forge-verify --prune
		assert_success
	done
	[ "$(cat forge-verify.abcdef/file)" = mine ]
	[ "$(cat .git/forge-verify.abcdef/file)" = mine ]
}

# --- warm slots are reset completely (SPEC 3.5) -------------------------------------

@test "index flags, sparse-checkout, local config, refs and hooks a step sets do not reach the next warm run" {
	printf 'one\n' >a.txt && mkdir dir && echo x >dir/file
	git add -A && git commit -q -m files
	run forge-verify --isolated --warm -- sh -c '
		git update-index --skip-worktree README && git update-index --assume-unchanged a.txt &&
		git sparse-checkout set dir && git config x.y z && git config core.autocrlf true &&
		git tag step-tag && git update-ref refs/heads/step HEAD && git commit -q --allow-empty -m step &&
		mkdir -p .git/hooks && printf "#!/bin/sh\nexit 1\n" >.git/hooks/pre-commit && chmod +x .git/hooks/pre-commit &&
		echo junk >>.git/info/exclude'
	assert_success
	head=$(git rev-parse HEAD)
	run forge-verify --isolated --warm -- sh -c '
		test -z "$(git ls-files -v | grep -v "^H ")" &&
		test -z "$(git config --local --get core.sparseCheckout)" && test ! -e .git/info/sparse-checkout &&
		test -z "$(git config --local --get x.y)" && test -z "$(git config --local --get core.autocrlf)" &&
		test -z "$(git tag -l step-tag)" && ! git rev-parse -q --verify refs/heads/step &&
		test "$(git rev-parse HEAD)" = "$0" && test ! -e .git/hooks/pre-commit &&
		! grep -q junk .git/info/exclude && git commit -q --allow-empty -m ok' "$head"
	assert_success
	echo edit >>a.txt
	check_copy --warm
}

@test "a step that replaces the slot's copy, state or lock with a symlink cannot make the next run write through it" {
	mkdir "$SCRATCH/outside"
	run forge-verify --isolated --warm -- sh -c "rm -rf ../repo ../../1.state ../../1.lock && ln -s '$SCRATCH/outside' ../repo && ln -s '$SCRATCH/outside' ../../1.state && ln -s '$SCRATCH/outside/lock' ../../1.lock"
	assert_success
	echo change >>README
	check_copy --warm
	[ -z "$(ls -A "$SCRATCH/outside")" ]
}

@test "links, FIFOs, hooks, a commondir or alternates a step plants in the copy's .git are never followed, opened or run: the next run makes .git anew" {
	printf 'keep\n' >"$SCRATCH/target"
	mkdir "$SCRATCH/objects"
	run forge-verify -q --isolated --warm -- true
	assert_success
	# Each in a run of its own: the run after it must neither write through
	# it, block on it, run it nor believe it.
	for plant in 'rm .git/config && ln -s "$0/target" .git/config' \
		'rm .git/HEAD && mkfifo .git/HEAD' \
		'rm .git/packed-refs && ln -s "$0/target" .git/packed-refs' \
		'rm .git/index && ln -s "$0/target" .git/index' \
		'rm .git/objects/info/alternates && ln -s "$0/target" .git/objects/info/alternates' \
		'rm -r .git/objects/info && ln -s "$0/objects" .git/objects/info' \
		'rm -r .git/refs/heads && ln -s "$0/objects" .git/refs/heads' \
		'printf "%s\n" "$0" >.git/commondir' \
		'mkdir .git/hooks && printf "#!/bin/sh\necho ran >%s/hook.ran\n" "$0" >.git/hooks/post-checkout && chmod +x .git/hooks/post-checkout' \
		'printf "%s\n" "$0/objects" >>.git/objects/info/alternates'; do
		run forge-verify -q --isolated --warm -- sh -c "$plant" "$SCRATCH"
		assert_success
		echo change >>README
		run timeout 60 forge-verify -q --isolated --warm -- sh -c '
			test "$(git rev-parse --git-common-dir)" = .git && test ! -e .git/commondir &&
			test ! -e .git/hooks && test ! -L .git/config && test ! -L .git/index &&
			test ! -L .git/objects/info && test "$(wc -l <.git/objects/info/alternates)" = 1 &&
			test -f .git/HEAD && git rev-parse -q --verify HEAD >/dev/null && git status --porcelain >/dev/null'
		assert_success
		git checkout -q -- README
	done
	[ "$(cat "$SCRATCH/target")" = keep ]
	[ -z "$(ls -A "$SCRATCH/objects")" ]
	[ ! -e "$SCRATCH/hook.ran" ]
	check_copy --warm
}

@test "a warm run at the same HEAD keeps the slot's .git and restores files from its index: no git init, no reading of HEAD's trees" {
	need_strace
	mkdir -p src
	for i in 1 2 3; do echo "$i" >"src/f$i.txt"; done
	git add -A && git commit -qm files
	echo edit >>src/f1.txt
	echo new >src/new.txt
	run forge-verify -q --isolated --warm -- sh -c 'echo junk >src/f2.txt && rm src/f3.txt'
	assert_success
	strace -f -qq -s 256 -e trace=execve -o "$SCRATCH/trace" forge-verify -q --isolated --warm -- true
	# (The programs started, not each place PATH was searched.)
	grep -v ' = -1 ' "$SCRATCH/trace" >"$SCRATCH/execs"
	run grep -cE '"(init|read-tree|reset)"' "$SCRATCH/execs"
	assert_output 0
	run grep -c '"checkout-index"' "$SCRATCH/execs"
	assert_output 1
	# The snapshot's tree, built on a copy of the slot's index, is HEAD +
	# the changes + the untracked file, as git would store it.
	expected=$(GIT_INDEX_FILE=$SCRATCH/idx sh -c 'git read-tree HEAD && git add -A && git write-tree')
	[ "$(last_record | jq -r .tree)" = "$expected" ]
	# And the copy is as faithful as ever.
	check_copy --warm
	# A new commit: HEAD's trees are read again, once.
	git add -A && git commit -qm more
	strace -f -qq -s 256 -e trace=execve -o "$SCRATCH/trace" forge-verify -q --isolated --warm -- true
	grep -v ' = -1 ' "$SCRATCH/trace" >"$SCRATCH/execs"
	run grep -c '"reset", "--hard"' "$SCRATCH/execs"
	assert_output 1
	check_copy --warm
}

@test "FIFOs and links in the pool (a lock, the source file, scratch files, the saved index) never block nor are written through" {
	run forge-verify --isolated --warm -- true
	assert_success
	p=$(pool)
	printf 'keep\n' >"$SCRATCH/target"
	rm -f "$p/1.lock" "$p/source" "$p/1.state/index" "$p/1.state/scratch/changes.patch" "$p/1.state/scratch/git.err" \
		"$p/1.state/index.head" "$p/1.state/git-init"
	mkfifo "$p/1.lock" "$p/source" "$p/1.state/scratch/changes.patch" "$p/1.state/scratch/git.err" "$p/1.state/index.head"
	ln -s "$SCRATCH/target" "$p/1.state/index"
	ln -s "$SCRATCH/target" "$p/1.state/git-init"
	echo change >>README
	run timeout 60 forge-verify --isolated --warm -- grep -q change README
	assert_success
	[ "$(cat "$SCRATCH/target")" = keep ]
	[ -f "$p/1.lock" ]
	[ "$(cat "$p/source")" = "$(cd .git && pwd -P)" ]
	# --prune does not read a FIFO at another pool's source file.
	mkdir -p "$p/../0123456789abcdef"
	mkfifo "$p/../0123456789abcdef/source"
	run timeout 60 forge-verify --prune
	assert_success
}

# --- forge-verify --prune -------------------------------------------------------------

@test "--prune frees this repository's pool, copies of killed runs and pools of deleted repositories" {
	run forge-verify --isolated --warm -- true
	assert_success
	make_repo "$SCRATCH/gone"
	(cd "$SCRATCH/gone" && forge-verify -q --isolated --warm -- true)
	gone_pool=$(pool "$SCRATCH/gone")
	rm -rf "$SCRATCH/gone"
	make_repo "$SCRATCH/alive"
	(cd "$SCRATCH/alive" && forge-verify -q --isolated --warm -- true)
	# A cold copy whose run was SIGKILLed.
	sleep 60 &
	dead=$!
	mkdir "$TMPDIR/forge-verify.0dead0"
	printf '%s %s\n' "$dead" "$(cut -d')' -f2- /proc/$dead/stat | awk '{print $20}')" >"$TMPDIR/forge-verify.0dead0/owner"
	kill "$dead" && wait "$dead" || :
	mine=$(pool)
	run forge-verify --prune
	assert_success
	assert_output --partial "freed $mine/1 ("
	assert_output --partial "freed $gone_pool ("
	assert_output --partial "freed $TMPDIR/forge-verify.0dead0 ("
	assert_output --regexp 'freed [0-9.]+ [KMG]iB in total'
	[ ! -e "$mine" ]
	[ ! -e "$gone_pool" ]
	[ ! -e "$TMPDIR/forge-verify.0dead0" ]
	[ -d "$(pool "$SCRATCH/alive")/1/alive" ]
	run forge-verify --prune
	assert_success
	assert_output 'nothing to prune'
}

@test "--prune between a warm run's open and lock of its slot: the run never shares the slot with a later run" {
	run forge-verify --isolated --warm -- true
	assert_success
	# The first run's flock waits 3 s (after saying so), long enough for
	# --prune to remove slot 1 with its lock file and for a second run to
	# take slot 1 anew.
	real_flock=$(command -v flock)
	mkdir "$SCRATCH/slow"
	printf '#!/bin/sh\ntouch "%s/locking"\nsleep 3\nexec %s "$@"\n' "$SCRATCH" "$real_flock" >"$SCRATCH/slow/flock"
	chmod +x "$SCRATCH/slow/flock"
	PATH="$SCRATCH/slow:$PATH" forge-verify --isolated --warm -- sh -c "pwd >'$SCRATCH/first'" >"$SCRATCH/first.out" 2>&1 &
	first=$!
	while [ ! -e "$SCRATCH/locking" ]; do sleep 0.1; done
	run forge-verify --prune
	assert_success
	assert_output --partial "freed $(pool)/1 ("
	forge-verify --isolated --warm -- sh -c "pwd >'$SCRATCH/second'; sleep 8" >"$SCRATCH/second.out" 2>&1 &
	second=$!
	wait "$first"
	wait "$second"
	[ "$(cat "$SCRATCH/second")" = "$(pool)/1/repo" ]
	[ "$(cat "$SCRATCH/first")" = "$(pool)/2/repo" ]
}

@test "--prune leaves a slot that a running verification holds" {
	forge-verify --isolated --warm -- sh -c "touch '$SCRATCH/one'; while [ ! -e '$SCRATCH/go' ]; do sleep 0.1; done" >/dev/null 2>&1 &
	first=$!
	for _ in $(seq 1 100); do [ -e "$SCRATCH/one" ] && break; sleep 0.1; done
	run forge-verify --prune
	assert_success
	assert_output --partial 'is in use; left alone'
	[ -d "$(pool)/1/repo" ]
	touch "$SCRATCH/go"
	wait "$first"
	run forge-verify --prune
	assert_output --partial "freed $(pool)/1 ("
	[ ! -e "$(pool)" ]
}

# --- dependencies and build caches: keep, setup, setupKey (SPEC 3.5) ------------------

# npm_project: a package with one dev dependency (is-number, no dependencies
# of its own) and its lockfile. npm ci fetches it from the npm registry.
npm_project() {
	cat >package.json <<-'JSON'
	{
	  "name": "forge-npm-fixture",
	  "version": "1.0.0",
	  "private": true,
	  "scripts": {"test": "node -e \"require('is-number')\""},
	  "devDependencies": {"is-number": "7.0.0"}
	}
	JSON
	cat >package-lock.json <<-'JSON'
	{
	  "name": "forge-npm-fixture",
	  "version": "1.0.0",
	  "lockfileVersion": 3,
	  "requires": true,
	  "packages": {
	    "": {
	      "name": "forge-npm-fixture",
	      "version": "1.0.0",
	      "devDependencies": {"is-number": "7.0.0"}
	    },
	    "node_modules/is-number": {
	      "version": "7.0.0",
	      "resolved": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
	      "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==",
	      "dev": true,
	      "engines": {"node": ">=0.12.0"}
	    }
	  }
	}
	JSON
	printf 'node_modules/\n' >.gitignore
	git add -A && git commit -q -m npm
}

@test "npm (real registry): setup runs npm ci in every cold copy, in a warm slot again only when the lockfile changed" {
	command -v npm >/dev/null || [ "${CI:-}" != true ] || fail "npm is required in CI"
	command -v npm >/dev/null || skip "npm not installed"
	npm_project
	# The real tree has no node_modules: without setup, npm test fails.
	run forge-verify --isolated --warm
	assert_success
	assert_output --partial 'Setup: setup (npm ci) ok'
	ls .forge/runs/*/setup-1-setup.log
	# The step marks the kept node_modules: a reinstall would remove the mark.
	run forge-verify --isolated --warm -- sh -c 'node -e "require(\"is-number\")" && touch node_modules/forge-mark'
	assert_success
	assert_output --partial 'Setup: up to date in this warm slot (package-lock.json unchanged)'
	refute_output --partial 'npm ci'
	run forge-verify --isolated --warm -- test -e node_modules/forge-mark
	assert_success
	# An edit elsewhere changes nothing; the lockfile's content does.
	echo '// edit' >>index.js
	run forge-verify --isolated --warm -- test -e node_modules/forge-mark
	assert_success
	printf '\n' >>package-lock.json
	run forge-verify --isolated --warm -- test ! -e node_modules/forge-mark
	assert_success
	assert_output --partial 'Setup: setup (npm ci) ok'
	# Cold: every time; warm and cold agree.
	for _ in 1 2; do
		run forge-verify --isolated
		assert_success
		assert_output --partial 'Setup: setup (npm ci) ok'
	done
	[ ! -e node_modules ]
}

@test "a configured setup without setupKey: once per warm slot, every cold copy; keep paths survive, others not" {
	echo '{"verify": {"isolated": {"setup": [{"name": "deps", "run": "echo run >>\"$SETUP_LOG\"; mkdir -p deps && echo installed >deps/lib"}], "keep": ["deps"]}}}' >forge.json
	printf 'deps/\nout/\n' >.gitignore
	git add -A && git commit -q -m setup
	export SETUP_LOG=$SCRATCH/setup.log
	for _ in 1 2 3; do
		run forge-verify --isolated --warm -- sh -c 'test -f deps/lib && test ! -e out && mkdir out'
		assert_success
	done
	[ "$(wc -l <"$SETUP_LOG")" -eq 1 ]
	run forge-verify --isolated -- test -f deps/lib
	assert_success
	run forge-verify --isolated -- test -f deps/lib
	assert_success
	[ "$(wc -l <"$SETUP_LOG")" -eq 3 ]
	# A step that removes a kept folder makes the next run set up again.
	run forge-verify --isolated --warm -- rm -rf deps
	assert_success
	run forge-verify --isolated --warm -- test -f deps/lib
	assert_success
	[ "$(wc -l <"$SETUP_LOG")" -eq 4 ]
}

@test "a failing setup is an ERROR (69) with its log; no step runs; the streak is left alone" {
	echo '{"verify": {"isolated": {"setup": [{"name": "deps", "run": "echo broken; exit 3"}]}}}' >forge.json
	for mode in '' --warm; do
		run forge-verify --isolated $mode -- touch "$SCRATCH/ran"
		assert_failure 69
		assert_output --partial "Setup: deps (echo broken; exit 3) ERROR exit 3"
		assert_output --partial broken
		assert_output --partial "setup step 'deps' failed"
		[ ! -e "$SCRATCH/ran" ]
		[ "$(tail -n 1 .forge/timeline.jsonl | jq -r .verdict)" = ERROR ]
		run_id=$(tail -n 1 .forge/timeline.jsonl | jq -r .run)
		grep -q broken ".forge/runs/$run_id/setup-1-deps.log"
		# Reported by the step runner as a verify step is: line, tail, log.
		assert_output --partial "$(printf '| broken\nlog: .forge/runs/%s/setup-1-deps.log' "$run_id")"
	done
	[ "$(forge-state get .forge/breaker streak 0)" = 0 ]
	# Quiet: the same 69 (never 2, the breaker's), the verdict only; a
	# setup that exits 124 by itself did not time out.
	echo '{"verify": {"isolated": {"setup": [{"name": "deps", "run": "exit 124"}]}}}' >forge.json
	for mode in '' --warm; do
		run forge-verify --isolated $mode -q -- true
		assert_failure 69
		assert_output --partial "setup step 'deps' failed (ERROR exit 124)"
		refute_output --partial 'Setup:'
		run forge-verify --isolated $mode -- true
		assert_failure 69
		assert_output --partial 'Setup: deps (exit 124) ERROR exit 124'
	done
	# Without --isolated, setup does not run.
	run forge-verify -- true
	assert_success
}

@test "a kept folder a step replaced with a symlink is removed, never written through" {
	mkdir "$SCRATCH/outside"
	echo '{"verify": {"isolated": {"setup": [{"name": "deps", "run": "mkdir -p deps && echo installed >deps/lib"}], "keep": ["deps"]}}}' >forge.json
	printf 'deps\n' >.gitignore
	git add -A && git commit -q -m setup
	run forge-verify --isolated --warm -- sh -c "rm -rf deps && ln -s '$SCRATCH/outside' deps"
	assert_success
	run forge-verify --isolated --warm -- sh -c 'test -f deps/lib && test ! -L deps'
	assert_success
	assert_output --partial 'Setup: deps'
	[ -z "$(ls -A "$SCRATCH/outside")" ]
}

@test "a keep path under a tracked symlink or file leaves the copy faithful" {
	mkdir real && echo x >real/file && ln -s real lib
	echo '{"verify": {"isolated": {"keep": ["lib/cache", "README/x"]}}}' >forge.json
	git add -A && git commit -q -m keep
	for _ in 1 2; do
		check_copy --warm
	done
}

@test "a keep path that is not ignored keeps no untracked file of an earlier run: warm equals cold" {
	mkdir src
	echo x >src/a
	printf 'src/cache/\n' >.gitignore
	echo '{"verify": {"isolated": {"keep": ["src"]}}}' >forge.json
	git add -A && git commit -q -m src
	echo extra >src/extra
	run forge-verify --isolated --warm -- sh -c 'test -f src/extra && mkdir src/cache && echo c >src/cache/c && echo step >src/made-by-step'
	assert_success
	rm src/extra
	run forge-verify --isolated --warm -- sh -c 'test ! -e src/extra && test ! -e src/made-by-step && test -f src/cache/c'
	assert_success
}

@test "cargo: target/ is kept between warm runs by default, not in cold copies" {
	printf '[package]\nname = "x"\nversion = "0.1.0"\n' >Cargo.toml
	printf 'target/\n' >.gitignore
	git add -A && git commit -q -m cargo
	run forge-verify --isolated --warm -- sh -c 'mkdir -p target && touch target/built'
	assert_success
	run forge-verify --isolated --warm -- test -e target/built
	assert_success
	run forge-verify --isolated -- test ! -e target
	assert_success
}

@test "keep and setupKey must be relative paths inside the repository (65)" {
	for bad in '"keep": ["../x"]' '"keep": ["/abs"]' '"keep": ["a/*"]' '"setupKey": [".git/config"]' '"setupKey": ["a/../../b"]' '"setup": [{"run": ""}]'; do
		echo "{\"verify\": {\"isolated\": {$bad}}}" >forge.json
		run forge-verify --isolated -- touch "$SCRATCH/ran"
		assert_failure 65
		assert_output --partial 'verify.isolated.'
		[ ! -e "$SCRATCH/ran" ]
	done
}
