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
	echo "$record" | jq -e '.isolated == true and .change == "iso-1"'
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
	IFS='|' read -r iso src wd <"$REPO"/.forge/runs/*/1-command.log
	[ "$iso" = 1 ] && [ "$src" = "$REPO" ]
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
	[ -f file ] && [ ! -e ran ]
}

@test "no commit yet: exit 69, no step runs" {
	cd "$SCRATCH" && git init -q empty && cd empty
	run forge-verify --isolated -- touch ran
	assert_failure 69
	assert_output --partial 'needs a commit'
	[ ! -e ran ]
	assert_no_leftovers
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

@test "SIGINT, SIGTERM and SIGHUP mid-step: cleaned up, exit 128+n" {
	echo change >>README
	before=$(repo_state)
	for sig in INT TERM HUP; do
		rm -f "$SCRATCH/started"
		perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' -- \
			forge-verify --isolated -- sh -c "echo \$\$ >'$SCRATCH/step.pid'; touch '$SCRATCH/started'; exec sleep 60" &
		pid=$!
		for _ in $(seq 1 100); do [ -e "$SCRATCH/started" ] && break; sleep 0.1; done
		[ -e "$SCRATCH/started" ]
		kill -s "$sig" "$pid"
		wait "$pid" && rc=0 || rc=$?
		case $sig in INT) [ "$rc" -eq 130 ] ;; TERM) [ "$rc" -eq 143 ] ;; HUP) [ "$rc" -eq 129 ] ;; esac
		assert_no_leftovers
		[ "$(tail -n 1 .forge/timeline.jsonl | jq -r .verdict)" = ERROR ]
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
	[ "$(git worktree list | wc -l)" -eq 2 ]
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
