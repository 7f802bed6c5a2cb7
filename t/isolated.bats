#!/usr/bin/env bats
# forge-verify --isolated (SPEC 3.5): the copy holds exactly the working
# state, and whatever a step does there, the real repository is unchanged.
load test_helper
load isolated_helper

setup() { isolated_setup; }
teardown() { forge_test_teardown; }

commit_files() {
	printf 'one\ntwo\nthree\n' >text.txt
	head -c 2048 /dev/urandom >blob.bin
	printf '#!/bin/sh\necho hi\n' >tool.sh
	ln -s text.txt link
	git add -A && git commit -q -m files
}

@test "a clean tree: the copy is HEAD" {
	commit_files
	check_copy
}

@test "staged changes only" {
	commit_files
	echo staged >>text.txt && git add text.txt
	check_copy
}

@test "unstaged changes only" {
	commit_files
	echo unstaged >>text.txt
	check_copy
}

@test "staged and unstaged changes on one file" {
	commit_files
	echo staged >>text.txt && git add text.txt
	sed -i 's/one/ONE/' text.txt
	check_copy
}

@test "deletions, staged and unstaged" {
	commit_files
	git rm -q tool.sh
	rm blob.bin
	check_copy
}

@test "renames, staged and unstaged" {
	commit_files
	git mv text.txt renamed.txt
	mv blob.bin moved.bin
	check_copy
}

@test "a mode change" {
	commit_files
	chmod +x text.txt
	chmod -x tool.sh
	check_copy
}

@test "the user's index is never written, not even when its stat data is stale" {
	commit_files
	# text.txt touched: its stat data no longer matches, its content does.
	touch -m -d "@$(($(date +%s) + 5))" text.txt
	before=$(sha256sum <.git/index)
	run forge-verify -q --isolated -- true
	assert_success
	assert_equal "$(sha256sum <.git/index)" "$before"
	for round in 1 2; do
		run forge-verify -q --isolated --warm -- true
		assert_success
		assert_equal "$(sha256sum <.git/index)" "$before"
	done
	# What forge reads the changes with would have written it (git 2.39
	# refreshes the index in git diff, --no-optional-locks or not).
	git --no-optional-locks diff HEAD >/dev/null
	[ "$(sha256sum <.git/index)" != "$before" ]
}

@test "a binary file change" {
	commit_files
	head -c 4096 /dev/urandom >blob.bin
	printf '\0\1\2\377' >>text.txt
	check_copy
}

@test "symlinks added and changed" {
	commit_files
	ln -sfn tool.sh link
	ln -s ../outside/target dangling
	ln -s text.txt newlink
	check_copy
}

@test "an intent-to-add file" {
	commit_files
	printf 'planned\n' >planned.txt
	git add -N planned.txt
	: >empty-ita
	git add -N empty-ita
	check_copy
}

@test "untracked files in new nested folders" {
	commit_files
	mkdir -p a/b/c new
	echo deep >a/b/c/file
	echo top >new/file
	printf 'x' >untracked
	chmod 0750 untracked
	check_copy
}

@test "hostile file names: spaces, newlines, leading dashes, quotes, globs, non-UTF-8" {
	names=('with space' $'new\nline' '-leading-dash' "quo'te" 'dq"uote' '*glob?[x]' $'\xff\xfebytes' 'back\slash')
	for n in "${names[@]}"; do printf 'tracked %s\n' "$n" >"t-$n"; done
	git add -A && git commit -q -m hostile
	for n in "${names[@]}"; do
		printf 'edit\n' >>"t-$n"
		printf 'untracked\n' >"$n"
	done
	mkdir -- '-dir with space'
	printf 'x\n' >'-dir with space/--file'
	git mv -- "t-with space" "t-renamed space"
	check_copy
	grep -q 'leading-dash' "$SCRATCH/copy.list"
}

@test "ignored files and folders are left out; .forge is left out" {
	commit_files
	printf 'node_modules/\nbuild/\n*.o\n' >.gitignore
	git add .gitignore && git commit -q -m ignore
	mkdir -p node_modules/pkg build
	echo dep >node_modules/pkg/index.js
	echo out >build/out
	echo obj >main.o
	echo kept >kept.c
	forge-verify -- true # creates .forge
	[ -d .forge ]
	check_copy
	run cat "$SCRATCH/copy.list"
	refute_output --partial node_modules
	refute_output --partial build/out
	refute_output --partial main.o
	refute_output --partial .forge
	assert_output --partial kept.c
}

@test "CRLF content with core.autocrlf" {
	git config core.autocrlf true
	# Check README out again under the new setting, as a user's tree would be.
	rm README && git checkout -- README
	printf 'a\r\nb\r\n' >crlf.txt
	git add crlf.txt && git commit -q -m crlf
	printf 'a\r\nB\r\nc\r\n' >crlf.txt
	check_copy
	grep -q "crlf.txt" "$SCRATCH/copy.list"
}

@test "a repository with a submodule: the copy works, the submodule is not populated" {
	make_repo "$SCRATCH/sub"
	git submodule -q add "$SCRATCH/sub" sub
	git commit -q -m 'add submodule'
	echo change >>README
	echo inside >sub/untracked-in-sub
	before=$(repo_state)
	export COPY_LIST=$SCRATCH/copy.list COPY_PWD=$SCRATCH/copy.pwd
	run forge-verify --isolated -- sh -c "$HOSTILE_STEP"
	assert_success
	[ "$(repo_state)" = "$before" ]
	# Everything but the submodule's contents is there.
	list-tree work "$REPO" | grep -v ' sub/' >"$SCRATCH/expected"
	diff -u "$SCRATCH/expected" "$COPY_LIST"
	assert_no_leftovers
}

@test "user configuration cannot reshape the patch" {
	commit_files
	printf '#!/bin/sh\necho EXTERNAL >"%s/external-ran"\n' "$SCRATCH" >"$SCRATCH/ext"
	chmod +x "$SCRATCH/ext"
	git config color.ui always
	git config color.diff always
	git config diff.external "$SCRATCH/ext"
	git config diff.noprefix true
	git config diff.mnemonicPrefix true
	git config diff.context 0
	git config diff.renames copies
	git config apply.whitespace error
	git config diff.upper.textconv 'tr a-z A-Z'
	printf '*.txt diff=upper\n' >.gitattributes
	git add .gitattributes && git commit -q -m attrs
	printf 'one  \ntwo\nthree\nfour\t\n' >text.txt
	cp text.txt copied.txt
	check_copy
	[ ! -e "$SCRATCH/external-ran" ]
}

@test "the timeline records isolated and the snapshot's tree; state stays on the real repository" {
	commit_files
	echo change >>text.txt
	echo new >untracked.txt
	run forge-verify --isolated --change iso-1 -- true
	assert_success
	record=$(tail -n 1 .forge/timeline.jsonl)
	echo "$record" | jq -e '.isolated == "cold" and .change == "iso-1"'
	# The tree is HEAD + the changes + the untracked file, as git would store it.
	expected=$(GIT_INDEX_FILE=$SCRATCH/idx sh -c 'git read-tree HEAD && git add -A && git write-tree')
	[ "$(echo "$record" | jq -r .tree)" = "$expected" ]
	[ -f .forge/changes/iso-1.json ]
	[ -f .forge/runs/*/1-command.log ]
}

@test "steps see FORGE_VERIFY_ISOLATED=1 and FORGE_VERIFY_SOURCE, and run in the copy's root" {
	mkdir sub && cd sub
	run forge-verify --isolated -- sh -c 'echo "$FORGE_VERIFY_ISOLATED|$FORGE_VERIFY_SOURCE|$PWD"'
	assert_success
	# The log's first line names the copy; the step's output follows.
	IFS='|' read -r iso src wd < <(tail -n +2 "$REPO"/.forge/runs/*/1-command.log)
	[ "$iso" = 1 ]
	[ "$src" = "$REPO" ]
	case $wd in "$TMPDIR"/forge-verify.??????/repo-??????) ;; *) false ;; esac
}

@test "steps are detected in the copy: an ignored Makefile is not there" {
	printf 'Makefile\n' >.gitignore
	printf 'all:\n\tfalse\n' >Makefile
	printf '#!/bin/sh\nprintf "all:\\n\\ttrue\\ncheck:\\n\\ttrue\\n" >Makefile\n' >configure
	chmod +x configure
	touch configure.ac
	mkdir -p "$SCRATCH/stubs" && printf '#!/bin/sh\n' >"$SCRATCH/stubs/autoreconf" && chmod +x "$SCRATCH/stubs/autoreconf"
	PATH=$SCRATCH/stubs:$PATH run forge-verify --isolated
	assert_success
	[ "$(tail -n 1 .forge/timeline.jsonl | jq -r '.steps[0].run')" = 'autoreconf -fi && ./configure && make' ]
}

@test "a TMPDIR with spaces works" {
	export TMPDIR="$SCRATCH/tmp dir"
	mkdir -p "$TMPDIR"
	echo change >>README
	check_copy
}

@test "not a git repository: exit 69 with the refusal, the real folder is never used" {
	mkdir "$SCRATCH/plain" && cd "$SCRATCH/plain"
	echo keep >file
	run forge-verify --isolated -- sh -c 'rm -f file; touch ran'
	assert_failure 69
	assert_output --partial "forge-verify: error: --isolated needs a git repository; refusing to run against $SCRATCH/plain"
	[ -f file ]
	[ ! -e ran ]
}

@test "no commit yet: exit 69, no step runs" {
	cd "$SCRATCH" && git init -q empty && cd empty
	run forge-verify --isolated -- touch ran
	assert_failure 69
	assert_output --partial 'needs a commit'
	[ ! -e ran ]
	assert_no_leftovers
}

@test "no commit yet, or not a repository: no isolated banner before the refusal, cold or warm" {
	cd "$SCRATCH" && git init -q empty && cd empty
	for mode in '' --warm; do
		# shellcheck disable=SC2086 # no option or one
		run --separate-stderr forge-verify --isolated $mode -- true
		assert_failure 69
		[[ $stderr == *'needs a commit'* ]]
		[[ $stderr != *'isolated: running'* ]]
	done
	mkdir "$SCRATCH/plain" && cd "$SCRATCH/plain"
	run --separate-stderr forge-verify --isolated --warm -- true
	assert_failure 69
	[[ $stderr != *'isolated: running'* ]]
}

@test "the banner: an ephemeral copy when cold, a pooled copy with --warm or verify.isolated.warm" {
	commit_files
	run --separate-stderr forge-verify --isolated -- true
	assert_success
	[ "${stderr_lines[0]}" = 'isolated: running verification in an ephemeral copy (working tree untouched)' ]
	run --separate-stderr forge-verify --isolated --warm -- true
	assert_success
	[ "${stderr_lines[0]}" = 'isolated: running verification in a pooled copy (working tree untouched)' ]
	echo '{"verify": {"isolated": {"warm": true}}}' >forge.json
	run --separate-stderr forge-verify --isolated -- true
	assert_success
	[ "${stderr_lines[0]}" = 'isolated: running verification in a pooled copy (working tree untouched)' ]
	run --separate-stderr forge-verify -q --isolated --warm -- true
	assert_success
	[ -z "$stderr" ]
}

@test "--prune --dry-run shows each warm slot of the pool with its size in human units and removes nothing" {
	commit_files
	head -c 3145728 /dev/zero >big.bin
	run forge-verify --isolated --warm -- true
	assert_success
	mine=$(pool)
	before=$(find "$mine" | sort | sha256sum)
	run forge-verify --prune --dry-run
	assert_success
	assert_output --regexp "would free $mine/1 \(3\.[0-9] MiB\)"
	assert_output --regexp "would free $mine/1.state \([0-9]+ KiB\)"
	assert_output --regexp 'would free 3\.[0-9] MiB in total'
	refute_output --partial 'freed'
	[ "$(find "$mine" | sort | sha256sum)" = "$before" ]
	run forge-verify --isolated --warm -- true
	assert_success
	run forge-verify --prune
	assert_success
	assert_output --regexp "freed $mine/1 \(3\.[0-9] MiB\)"
	[ ! -e "$mine" ]
}

@test "--dry-run without --prune is a usage error" {
	run forge-verify --dry-run -- true
	assert_failure 64
	run forge-verify --report --dry-run
	assert_failure 64
}

@test "a patch that does not apply: exit 74 with git's reason, no step ran, ERROR recorded" {
	# A smudge filter makes the checked-out copy differ from what the patch
	# was made against, so git apply refuses.
	git config filter.mangle.smudge 'sed s/a/X/g'
	git config filter.mangle.clean cat
	printf '*.dat filter=mangle\n' >.gitattributes
	printf 'a\nb\nc\n' >f.dat
	git add -A && git commit -q -m filter
	git config filter.mangle.smudge 'sed s/a/X/g'
	printf 'a\nB\nc\n' >f.dat
	before=$(repo_state)
	run forge-verify --isolated -- touch "$SCRATCH/ran"
	assert_failure 74
	assert_output --partial 'do not apply'
	assert_output --partial 'f.dat'
	[ ! -e "$SCRATCH/ran" ]
	[ "$(tail -n 1 .forge/timeline.jsonl | jq -r .verdict)" = ERROR ]
	[ "$(repo_state)" = "$before" ]
	assert_no_leftovers
}

@test "a post-checkout hook of the repository never runs" {
	printf '#!/bin/sh\ntouch "%s/hook-ran"\n' "$SCRATCH" >.git/hooks/post-checkout
	chmod +x .git/hooks/post-checkout
	git checkout -q -b other && rm -f "$SCRATCH/hook-ran" # the hook works for git itself
	git config core.hooksPath .git/hooks
	run forge-verify --isolated -- true
	assert_success
	run forge-verify --isolated --warm -- true
	assert_success
	run forge-verify --isolated --warm -- true
	assert_success
	[ ! -e "$SCRATCH/hook-ran" ]
}

@test "no fsmonitor program and no pager runs for the git commands forge runs (on a terminal too)" {
	command -v script >/dev/null || fail "script(1) (bsdutils, essential on Debian) is required"
	printf '#!/bin/sh\necho "$0" >>"%s/ran"\n' "$SCRATCH" >"$SCRATCH/fsmonitor"
	printf '#!/bin/sh\necho "$0" >>"%s/ran"\ncat\n' "$SCRATCH" >"$SCRATCH/pager"
	chmod +x "$SCRATCH/fsmonitor" "$SCRATCH/pager"
	git config core.fsmonitor "$SCRATCH/fsmonitor"
	git config core.pager "$SCRATCH/pager"
	echo change >>README
	echo new >untracked
	# Both work for git itself.
	git status --short >/dev/null
	[ -s "$SCRATCH/ran" ]
	rm -f "$SCRATCH/ran"
	for mode in '' --warm; do
		run script -qec "forge-verify --isolated $mode -- grep -q change README" /dev/null </dev/null
		assert_success
	done
	git config --unset core.fsmonitor
	git config --unset core.pager
	export GIT_CONFIG_PARAMETERS="'core.fsmonitor'='$SCRATCH/fsmonitor' 'core.pager'='$SCRATCH/pager'"
	run script -qec "forge-verify --isolated -- grep -q change README" /dev/null </dev/null
	assert_success
	unset GIT_CONFIG_PARAMETERS
	[ ! -e "$SCRATCH/ran" ]
}

@test "on a terminal the status line names the setup step and the verify step" {
	command -v script >/dev/null || fail "script(1) (bsdutils, essential on Debian) is required"
	echo '{"verify": {"isolated": {"setup": [{"name": "deps", "run": "sleep 1.2"}]}}}' >forge.json
	run script -qec "forge-verify --isolated -- sleep 1.2" /dev/null </dev/null
	assert_success
	assert_output --partial $'\r\e[KSetup: deps (sleep 1.2) 1s'
	assert_output --partial $'\r\e[KVerify: command (sleep 1.2) 1s'
}

@test "SIGINT, SIGTERM and SIGHUP mid-step: cleaned up, exit 128+n" {
	echo change >>README
	before=$(repo_state)
	for sig in INT TERM HUP; do
		rm -f "$SCRATCH/started"
		interrupted_at "$sig" "$SCRATCH/started" \
			forge-verify --isolated -- sh -c "echo \$\$ >'$SCRATCH/step.pid'; touch '$SCRATCH/started'; exec sleep 60"
		assert_no_leftovers
		[ "$(tail -n 1 .forge/timeline.jsonl | jq -r .verdict)" = ERROR ]
	done
	[ "$(repo_state)" = "$before" ]
}

@test "SIGINT, SIGTERM and SIGHUP while the copy is filled and during setup, cold and warm: no copy, no slot held, no process left, ERROR recorded" {
	echo change >>README
	# A clean filter that takes its time holds the run in the copy's fill
	# (git diff HEAD of the source); it says when it starts.
	echo 'README filter=slow' >.git/info/attributes
	git config filter.slow.clean "touch '$SCRATCH/started'; sleep 2; cat"
	echo "{\"verify\": {\"isolated\": {\"setup\": [{\"name\": \"deps\", \"run\": \"touch '$SCRATCH/setup'; exec sleep 59.71\"}]}}}" >forge.json
	before=$(repo_state)
	for phase in fill setup; do
		for mode in '' --warm; do
			for sig in INT TERM HUP; do
				rm -f "$SCRATCH/started" "$SCRATCH/setup"
				marker=$SCRATCH/started
				[ "$phase" = fill ] || marker=$SCRATCH/setup
				interrupted_at "$sig" "$marker" forge-verify --isolated $mode -- true
				assert_no_leftovers
				[ "$(tail -n 1 .forge/timeline.jsonl | jq -r .verdict)" = ERROR ]
				if [ -n "$mode" ]; then flock -n "$(pool)/1.lock" true; fi
				run pgrep -f 'sleep 59[.]71'
				assert_failure
			done
		done
		# The setup phase: a quick fill.
		git config filter.slow.clean cat
	done
	[ "$(repo_state)" = "$before" ]
}

@test "SIGKILL leaves a copy behind; the next run prunes it, but not a live run's copy" {
	forge-verify --isolated -- sh -c "echo \$\$ >'$SCRATCH/step.pid'; touch '$SCRATCH/started'; exec sleep 60" &
	pid=$!
	for _ in $(seq 1 100); do [ -e "$SCRATCH/started" ] && break; sleep 0.1; done
	# The copy of a live run, owned by a process that keeps running.
	sleep 120 &
	live=$!
	mkdir "$TMPDIR/forge-verify.LIVE01"
	printf '%s %s\n' "$live" "$(cut -d')' -f2- /proc/$live/stat | awk '{print $20}')" >"$TMPDIR/forge-verify.LIVE01/owner"
	kill -KILL "$pid"
	kill -KILL "$(cat "$SCRATCH/step.pid")" || : # only this test's step
	wait "$pid" || :
	[ -n "$(find "$TMPDIR" -maxdepth 1 -name 'forge-verify.??????' ! -name '*LIVE01')" ]
	run forge-verify --isolated -- true
	assert_success
	[ -d "$TMPDIR/forge-verify.LIVE01" ]
	kill "$live"
	[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'forge-verify.??????' ! -name '*LIVE01')" ]
	[ "$(git worktree list | wc -l)" -eq 1 ]
	# Once its owner is gone, it goes too.
	wait "$live" 2>/dev/null || :
	run forge-verify --isolated -- true
	[ ! -e "$TMPDIR/forge-verify.LIVE01" ]
}

@test "a step that makes its files read-only is cleaned up" {
	run forge-verify --isolated -- sh -c 'mkdir -p ro/dir && touch ro/dir/f && chmod -R a-w ro && chmod a-w .'
	assert_success
	assert_no_leftovers
}

@test "8 concurrent isolated runs: all pass, streak and timeline exact, nothing left" {
	echo change >>README
	pids=
	for i in $(seq 1 8); do
		forge-verify -q --isolated -- sh -c 'grep -q change README' >/dev/null 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	[ "$(grep -c '"verdict":"PASS"' .forge/timeline.jsonl)" -eq 8 ]
	assert_no_leftovers
}

# --- git isolation (SPEC 3.5): the copy is a repository of its own ----------

# A source with history a step could damage: a tag, a second branch, a
# stash, local config, a hook, loose and packed objects.
git_rich_repo() {
	make_repo "$SCRATCH/sub"
	git tag -a v1.0 -m 'release 1.0'
	git branch other
	echo stashed >>README && git stash -q
	git gc -q
	echo second >second.txt && git add second.txt && git commit -q -m second
	git config core.autocrlf input
	git config core.eol lf
	git config filter.keep.clean cat
	git config filter.keep.smudge cat
	git config lfs.fetchexclude 'big/*'
	git config remote.origin.url "$SCRATCH/nowhere"
	printf '#!/bin/sh\nexit 0\n' >.git/hooks/pre-commit
	chmod +x .git/hooks/pre-commit
	echo edit >>second.txt
}

# The git commands SPEC 3.5 names, each of which, in a copy sharing the
# source's git directory, changed or destroyed the source's state.
GIT_HOSTILE_STEP='set -e
git log --oneline >/dev/null
git describe --tags >"$OUT/describe"
git rev-parse --abbrev-ref HEAD >"$OUT/branch"
for k in core.autocrlf core.eol filter.keep.clean lfs.fetchexclude remote.origin.url; do
	printf "%s=%s\n" "$k" "$(git config --get "$k" || :)"
done >"$OUT/config"
git commit -q -am "step commit"
git tag -f v1.0 HEAD
git tag step-tag
git branch -D other
echo more >>README
git stash -q
git stash clear
git config user.name Intruder
git config --unset core.autocrlf
git update-ref refs/heads/main HEAD
git update-ref -d refs/tags/v1.0
git reset -q --hard HEAD~1
git reflog expire --expire=now --all
git gc -q --prune=now
git submodule -q add "$SUB" sub
git commit -q -m "with a submodule"
git sparse-checkout set nothing-here
git gc -q --aggressive --prune=now
git repack -q -a -d
git prune-packed
git maintenance run --quiet --task=gc --task=loose-objects --task=incremental-repack --task=commit-graph
git multi-pack-index write
mkdir -p .git/hooks && echo "#!/bin/sh" >.git/hooks/pre-commit
git worktree add -q ../extra-worktree'

@test "git commands in the copy change nothing of the source: refs, stash, config, index, hooks, objects, worktrees" {
	git_rich_repo
	export OUT=$SCRATCH/out SUB=$SCRATCH/sub
	mkdir "$OUT"
	for mode in cold warm; do
		before=$(git_state) files=$(repo_state)
		stash=$(git stash list --format=%H)
		if [ "$mode" = warm ]; then
			run forge-verify --isolated --warm -- sh -c "$GIT_HOSTILE_STEP"
		else
			run forge-verify --isolated -- sh -c "$GIT_HOSTILE_STEP"
		fi
		assert_success
		[ "$(git_state)" = "$before" ]
		[ "$(repo_state)" = "$files" ]
		# The stash survives, whole.
		[ "$(git stash list --format=%H)" = "$stash" ]
		git stash show -p stash@{0} | grep -q stashed
		git fsck --no-dangling --no-progress
		[ "$(git worktree list | wc -l)" -eq 1 ]
		[ "$(git config --get core.autocrlf)" = input ]
		[ -z "$(git config --local --get user.name)" ]
		[ "$(git tag -l)" = v1.0 ]
	done
	assert_no_leftovers
}

@test "the copy has the source's history, tags, branch and checkout config, not its other config" {
	git_rich_repo
	export OUT=$SCRATCH/out SUB=$SCRATCH/sub
	mkdir "$OUT"
	run forge-verify --isolated -- sh -c "$GIT_HOSTILE_STEP"
	assert_success
	[ "$(cat "$OUT/describe")" = "$(git describe --tags)" ]
	[ "$(cat "$OUT/branch")" = main ]
	[ "$(cat "$OUT/config")" = "$(printf '%s\n' core.autocrlf=input core.eol=lf filter.keep.clean=cat 'lfs.fetchexclude=big/*' remote.origin.url=)" ]
}

@test "objects a step writes stay in the copy; the copy borrows the source's objects read-only" {
	before=$(find .git/objects -type f | LC_ALL=C sort | sha256sum)
	run forge-verify --isolated -- sh -c 'head -c 100000 /dev/urandom >big && git add big && git commit -q -m big && git gc -q --prune=now && cat .git/objects/info/alternates'
	assert_success
	[ "$(find .git/objects -type f | LC_ALL=C sort | sha256sum)" = "$before" ]
	grep -qxF "$REPO/.git/objects" .forge/runs/*/1-command.log
}

# --- the caller's git environment (SPEC 2, 3.5) --------------------------------

@test "GIT_DIR and GIT_WORK_TREE exported: the source is theirs, the real tree keeps its edit and its staged file" {
	echo edit >>README
	echo new >staged.txt && git add staged.txt
	mkdir -p sub/dir
	before=$(repo_state)
	GIT_DIR=$PWD/.git GIT_WORK_TREE=$PWD run forge-verify --isolated -- sh -c 'grep -q edit README && test -f staged.txt && git status --porcelain'
	assert_success
	[ "$(repo_state)" = "$before" ]
	[ "$(tail -n 1 README)" = edit ]
	[ "$(git diff --cached --name-only)" = staged.txt ]
	# Relative, from a subdirectory, warm, as git resolves them.
	cd sub/dir
	GIT_DIR=../../.git GIT_WORK_TREE=../.. run forge-verify --isolated --warm -- sh -c 'grep -q edit README && test -f staged.txt'
	assert_success
	cd "$REPO"
	[ "$(repo_state)" = "$before" ]
	assert_no_leftovers
}

@test "GIT_INDEX_FILE decides the source's index; steps run with every GIT_* of SPEC 2 unset" {
	echo edit >>README
	GIT_INDEX_FILE=$SCRATCH/other-index git read-tree HEAD
	before=$(repo_state) idx=$(sha256sum <"$SCRATCH/other-index")
	env GIT_DIR="$PWD/.git" GIT_WORK_TREE="$PWD" GIT_INDEX_FILE="$SCRATCH/other-index" \
		GIT_OBJECT_DIRECTORY="$PWD/.git/objects" GIT_COMMON_DIR="$PWD/.git" GIT_NAMESPACE=ns \
		GIT_ALTERNATE_OBJECT_DIRECTORIES="$PWD/.git/objects" GIT_CONFIG_PARAMETERS="'user.name=x'" \
		GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=user.email GIT_CONFIG_VALUE_0=y@example.invalid \
		forge-verify --isolated -- sh -c 'env | grep -E "^GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE|COMMON_DIR|NAMESPACE|CONFIG_PARAMETERS|CONFIG_COUNT|CONFIG_KEY|CONFIG_VALUE)" >"$0"; git rev-parse --show-toplevel >>"$0"; git add -A && git commit -q -m in-copy' "$SCRATCH/env"
	[ "$(wc -l <"$SCRATCH/env")" -eq 1 ]
	case $(cat "$SCRATCH/env") in "$TMPDIR"/forge-verify.*) ;; *) false ;; esac
	[ "$(repo_state)" = "$before" ]
	[ "$(sha256sum <"$SCRATCH/other-index")" = "$idx" ]
	[ "$(git log --format=%s -1)" = initial ]
}

@test "GIT_INDEX_FILE picks the index whose tracked files the copy holds" {
	printf 'secret.txt\n' >.gitignore
	git add .gitignore && git commit -q -m ignore
	echo ignored-but-tracked >secret.txt
	cp .git/index "$SCRATCH/other-index"
	GIT_INDEX_FILE=$SCRATCH/other-index git add -f secret.txt
	run forge-verify --isolated -- test ! -e secret.txt
	assert_success
	GIT_INDEX_FILE=$SCRATCH/other-index run forge-verify --isolated -- grep -q ignored-but-tracked secret.txt
	assert_success
	[ -z "$(git diff --cached --name-only)" ]
}

# hook_repo DIR: a repository with two tracked files, built identically
# every time (fixed dates), so two of them can be compared commit for commit.
hook_repo() {
	make_repo "$1"
	printf 'a\n' >"$1/a.txt"
	printf 'b\n' >"$1/b.txt"
	git -C "$1" add a.txt b.txt
	git -C "$1" commit -q -m files
}

# hook_state DIR: what a commit must leave identical: HEAD, the index (with
# its flags), the status and the working tree.
hook_state() {
	git -C "$1" rev-parse HEAD
	git -C "$1" ls-files -s -v
	git -C "$1" status --porcelain
	tree_hash "$1"
}

@test "forge-verify --isolated in a real pre-commit hook: plain commit, commit -a and commit PATH record exactly what they would without it" {
	export GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
	hook_repo "$SCRATCH/hooked"
	hook_repo "$SCRATCH/control"
	# The hook verifies the working state (staged, unstaged and untracked),
	# and its step would wreck a shared index or tree.
	cat >"$SCRATCH/hooked/.git/hooks/pre-commit" <<-HOOK
	#!/bin/sh
	exec forge-verify -q --isolated -- sh -c 'n=\$(cat "$SCRATCH/count" 2>/dev/null || echo 0); echo \$((n + 1)) >"$SCRATCH/count"; grep -q unstaged a.txt && test -f untracked.txt && git add -A && git reset -q --hard HEAD && git rm -rq .'
	HOOK
	chmod +x "$SCRATCH/hooked/.git/hooks/pre-commit"
	for d in hooked control; do
		cd "$SCRATCH/$d"
		echo staged >>b.txt && git add b.txt
		echo unstaged >>a.txt
		echo untracked >untracked.txt
		git commit -q -m plain
	done
	[ "$(hook_state "$SCRATCH/hooked")" = "$(hook_state "$SCRATCH/control")" ]
	for d in hooked control; do
		cd "$SCRATCH/$d"
		echo more >>b.txt
		git commit -q -a -m all
	done
	[ "$(hook_state "$SCRATCH/hooked")" = "$(hook_state "$SCRATCH/control")" ]
	for d in hooked control; do
		cd "$SCRATCH/$d"
		echo staged2 >>b.txt && git add b.txt
		echo unstaged2 >>a.txt
		echo third >>a.txt
		git commit -q -m path -- a.txt
	done
	[ "$(hook_state "$SCRATCH/hooked")" = "$(hook_state "$SCRATCH/control")" ]
	[ "$(git -C "$SCRATCH/hooked" diff --cached --name-only)" = b.txt ]
	[ "$(cat "$SCRATCH/count")" -eq 3 ]
	[ "$(grep -c '"verdict":"PASS"' "$SCRATCH/hooked/.forge/timeline.jsonl")" -eq 3 ]
}

# --- the copy is never written through a symbolic link (SPEC 3.5) ---------------

@test "a tracked symlink replaced by a folder and hidden: exit 74 before anything is written through it" {
	mkdir "$SCRATCH/outside"
	echo original >"$SCRATCH/outside/victim.txt"
	ln -s "$SCRATCH/outside" d
	git add d && git commit -q -m 'a symlink'
	rm d && mkdir d && echo attack >d/victim.txt && echo new >d/new.txt
	for flag in --assume-unchanged --skip-worktree; do
		git update-index "$flag" d
		for warm in '' --warm; do
			run forge-verify --isolated $warm -- touch "$SCRATCH/ran"
			assert_failure 74
			assert_output --partial "'d' is a symbolic link in HEAD"
			[ "$(cat "$SCRATCH/outside/victim.txt")" = original ]
			[ ! -e "$SCRATCH/outside/new.txt" ]
			[ ! -e "$SCRATCH/ran" ]
		done
		git update-index "--no-${flag#--}" d
	done
	assert_no_leftovers
}

# --- where copies may live -------------------------------------------------------

@test "a relative TMPDIR, or one inside the repository: exit 73, nothing left in the work tree" {
	mkdir -p sub/tmp tmp && cd sub
	for tmp in tmp "$REPO/tmp"; do
		TMPDIR=$tmp run forge-verify --isolated -- touch "$SCRATCH/ran"
		assert_failure 73
		assert_output --partial 'lies inside the repository'
		[ ! -e "$SCRATCH/ran" ]
		[ -z "$(find "$REPO/tmp" "$REPO/sub/tmp" -mindepth 1)" ]
	done
	rmdir "$REPO/tmp" "$REPO/sub/tmp"
	# A relative TMPDIR that resolves outside the repository is fine.
	TMPDIR=../../tmp run forge-verify --isolated -- true
	assert_success
	cd "$REPO"
	[ -z "$(git status --porcelain)" ]
	assert_no_leftovers
}

@test "a SHA-256 repository: the copy is one too, cold and warm" {
	cd "$SCRATCH" && git init -q --object-format=sha256 sha && cd sha
	echo one >a && git add a && git commit -q -m one
	echo two >>a
	for mode in '' --warm; do
		run forge-verify --isolated $mode -- sh -c 'test "$(git rev-parse --show-object-format)" = sha256 && grep -q two a && git log --oneline -1'
		assert_success
	done
}

@test "Git LFS: the copy's LFS files have their content, borrowed from the source's LFS store" {
	command -v git-lfs >/dev/null || [ "${CI:-}" != true ] || fail "git-lfs is required in CI"
	command -v git-lfs >/dev/null || skip "git-lfs not installed"
	git lfs install --local >/dev/null
	git lfs track '*.bin' >/dev/null
	echo committed-content >a.bin
	git add -A && git commit -q -m lfs
	echo uncommitted >>a.bin
	before=$(git_state)
	for mode in '' --warm; do
		run forge-verify --isolated $mode -- sh -c 'cat a.bin; git config --get filter.lfs.process'
		assert_success
	done
	for log in .forge/runs/*/1-command.log; do
		[ "$(tail -n +2 "$log")" = "$(printf 'committed-content\nuncommitted\ngit-lfs filter-process')" ]
	done
	[ "$(git_state)" = "$before" ]
}

# --- evidence that outlives the copy (SPEC 3.2) ----------------------------

# kept_dir: the evidence folder of the last run.
kept_dir() { printf '%s\n' "$REPO/.forge/runs/$(grep -F '"event":"verify"' "$REPO/.forge/timeline.jsonl" | tail -n 1 | jq -r .run)/files"; }

@test "automake's 'See tests/test-suite.log': the file the copy made is kept and its repository path shown" {
	mkdir -p tests && echo keep >tests/.gitkeep && git add tests && git commit -q -m tests
	run --separate-stderr forge-verify --isolated -- sh -c 'printf "FAIL: t1\n# FAIL:  1\n" >tests/test-suite.log; echo "FAIL: t1"; echo "See tests/test-suite.log."; exit 1'
	assert_failure 1
	assert_no_leftovers
	[ "$(cat "$(kept_dir)/tests/test-suite.log")" = "$(printf 'FAIL: t1\n# FAIL:  1')" ]
	[[ $stderr == *'kept: tests/test-suite.log (in the copy: '*'/tests/test-suite.log) as .forge/runs/'*'/files/tests/test-suite.log'* ]]
	[ "$(stat -c %a "$(kept_dir)/tests/test-suite.log")" = 600 ]
	[ "$(stat -c %a "$(kept_dir)/tests")" = 700 ]
	[ ! -e tests/test-suite.log ]
}

@test "a path under the copy's absolute folder (a stack trace) is mapped to the repository and kept; the log names the copy once" {
	mv "$REPO" "$SCRATCH/-my repo" && REPO=$SCRATCH/-my\ repo && cd "$REPO"
	mkdir src && echo 'throw 1' >src/app.js && git add src && git commit -q -m src
	run --separate-stderr forge-verify --isolated -- sh -c 'echo gen >src/gen.js; echo "Error: x"; echo "    at f ($PWD/src/gen.js:3:14)"; echo "    at g ($(pwd -P)/src/app.js:1:1)"; exit 1'
	assert_failure 1
	[ "$(cat "$(kept_dir)/src/gen.js")" = gen ]
	[ "$(cat "$(kept_dir)/src/app.js")" = 'throw 1' ]
	log=$(ls "$REPO"/.forge/runs/*/1-command.log)
	header=$(head -n 1 "$log")
	copy=${header#forge-verify: the step runs in a copy of the repository: }
	[[ $copy == "$TMPDIR"/forge-verify.*/-my\ repo-* ]]
	# Once in the header, then in the step's two lines.
	[ "$(grep -cF -- "$copy" "$log")" = 3 ]
	[[ $stderr == *"kept: src/gen.js (in the copy: $copy/src/gen.js) as .forge/runs/"*/files/src/gen.js* ]]
	# The header is not shown as step output.
	[[ $stderr != *'| forge-verify: the step runs'* ]]
}

@test "a symlink, a FIFO or a folder named in the output is never kept nor followed, in the copy or on the way" {
	echo canary-8c1f >"$SCRATCH/secret"
	mkdir "$SCRATCH/outside" && echo canary-8c1f >"$SCRATCH/outside/f.log"
	run --separate-stderr forge-verify --isolated -- sh -c 'ln -s "$1/secret" s.log; ln -s "$1/outside" d; mkfifo p.log; mkdir dir.log; echo "See s.log d/f.log p.log dir.log"; exit 1' sh "$SCRATCH"
	assert_failure 1
	[ ! -e "$(kept_dir)" ]
	run ! grep -rq canary-8c1f "$REPO/.forge"
	[[ $stderr != *kept:* ]]
}

@test "kept files are bounded: 10 MB in all, a file over what is left is not kept" {
	run --separate-stderr forge-verify --isolated -- sh -c 'head -c 6000000 /dev/zero >a.log; head -c 6000000 /dev/zero >b.log; head -c 11000000 /dev/zero >c.log; echo small >d.log; echo "See a.log b.log c.log d.log"; exit 1'
	assert_failure 1
	[ -f "$(kept_dir)/a.log" ]
	[ ! -e "$(kept_dir)/b.log" ]
	[ ! -e "$(kept_dir)/c.log" ]
	[ -f "$(kept_dir)/d.log" ]
	[ "$(du -sb "$(kept_dir)" | cut -f1)" -le 10485760 ]
}

@test "kept files with spaces, leading dashes and quotes in their names; a name with a newline breaks nothing" {
	run --separate-stderr forge-verify --isolated -- sh -c 'mkdir -p "t d"; echo one >"t d/-a b.log"; echo two >"-x.log"; printf "x\n" >"$(printf "n\nl.log")"; echo "See \"t d/-a b.log\" and -x.log"; printf "See n\nl.log\n"; exit 1'
	assert_failure 1
	[ "$(cat "$(kept_dir)/t d/-a b.log")" = one ]
	[ "$(cat "$(kept_dir)/-x.log")" = two ]
	[[ $stderr == *'kept: t d/-a b.log (in the copy: '* ]]
	[ "$(find "$(kept_dir)" -type f | wc -l)" = 2 ]
}

@test "a plain run keeps the named file too: a later run cannot overwrite the evidence; .git and .forge are never kept" {
	run --separate-stderr forge-verify -- sh -c 'echo first >out.log; echo "See out.log .git/config .forge/breaker"; exit 1'
	assert_failure 1
	first=$(kept_dir)
	[[ $stderr == *"kept: out.log as .forge/runs/"*/files/out.log* ]]
	run --separate-stderr forge-verify -- sh -c 'echo second >out.log; exit 1'
	[ "$(cat "$first/out.log")" = first ]
	[ "$(find "$first" -type f | wc -l)" = 1 ]
	# With -q nothing is printed, but the evidence is kept all the same.
	run --separate-stderr forge-verify -q -- sh -c 'echo third >out.log; echo "See out.log"; exit 1'
	[ -z "$stderr" ]
	[ "$(cat "$(kept_dir)/out.log")" = third ]
}

@test "a copy's files are written by git's parallel checkout, cold and warm, with the same result" {
	need_strace
	commit_files
	for i in $(seq 1 150); do echo "$i" >"many-$i.txt"; done
	git add -A && git commit -qm many
	echo edit >>many-7.txt
	check_copy
	for mode in '' --warm; do
		# shellcheck disable=SC2086 # an option or none
		strace -f -qq -s 256 -e trace=execve -o "$SCRATCH/execs" forge-verify -q --isolated $mode -- true
		grep -v ' = -1 ' "$SCRATCH/execs" >"$SCRATCH/ran"
		run grep -c '"checkout.workers=0"' "$SCRATCH/ran"
		assert_output 1
		# With more than one core, git starts its workers for 150 files.
		[ "$(nproc)" -lt 2 ] || grep -q '"checkout--worker"' "$SCRATCH/ran"
	done
	check_copy --warm
}
