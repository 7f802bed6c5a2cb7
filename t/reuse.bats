#!/usr/bin/env bats
# forge-verify --reuse and --key (SPEC 3.7): a verdict is reused only for
# exactly what was verified, says so, is recorded as such, and is shared
# through git notes that only trusted refs and backed local entries count.
load test_helper

setup() {
	load_support
	forge_test_setup
	forge_test_repo
}
teardown() { forge_test_teardown; }

runs() { grep -c -F '"event":"verify"' .forge/timeline.jsonl; }
tree_of() { forge-verify --key --json "$@" | jq -r .tree; }
# note [REF]: the note forge-verify keeps on the tree of the working state.
note() { git cat-file blob "${1:-refs/notes/forge-verify}:$(tree_of -- true)"; }
streak() { forge-state get .forge/breaker streak 0; }

# --- the key -----------------------------------------------------------------

@test "--key prints a 64-hex key, the same twice for the same state" {
	run --separate-stderr forge-verify --key -- true
	assert_success
	assert_output --regexp '^[0-9a-f]{64}$'
	[ "$(forge-verify --key -- true)" = "$output" ]
}

@test "--key --json names what the key is made of; the tree is the one an --isolated run records" {
	echo edit >>README
	echo new >untracked.txt
	run --separate-stderr forge-verify --key --json --isolated -- true
	assert_success
	echo "$output" | jq -e '.key | test("^[0-9a-f]{64}$")'
	echo "$output" | jq -e '.text | contains("\nargv 1\n4:true\n")'
	echo "$output" | jq -e '.text | contains("\ntimeout 1800\n")'
	echo "$output" | jq -e --arg p "$PATH" '.text | contains("\nenv PATH \($p | length):\($p)\n")'
	echo "$output" | jq -e --arg t "$(type -P true)" '.text | contains("\nprogram \($t) ")'
	echo "$output" | jq -e --arg k "$(forge-verify --key --isolated -- true)" '.key == $k'
	forge-verify -q --isolated -- true
	[ "$(echo "$output" | jq -r .tree)" = "$(last_record | jq -r .tree)" ]
}

@test "a configuration file that changes nothing of the key changes nothing of it (with jq or without)" {
	k0=$(forge-verify --key -- true)
	echo '{"verify": {"keepRuns": 5}}' >"$HOME/c.json"
	[ "$(forge-verify --key --config "$HOME/c.json" -- true)" = "$k0" ]
	k1=$(forge-verify --key --isolated -- true)
	[ "$(forge-verify --key --isolated --config "$HOME/c.json" -- true)" = "$k1" ]
}

@test "the key changes with a tracked file's content and with an untracked file, not with an ignored one" {
	k0=$(forge-verify --key -- true)
	echo edit >>README
	k1=$(forge-verify --key -- true)
	[ "$k1" != "$k0" ]
	echo new >untracked.txt
	k2=$(forge-verify --key -- true)
	[ "$k2" != "$k1" ]
	echo 'ignored.txt' >>.git/info/exclude
	echo x >ignored.txt
	[ "$(forge-verify --key -- true)" = "$k2" ]
	# Back to the first state: the first key again.
	git checkout -q -- README
	rm untracked.txt
	[ "$(forge-verify --key -- true)" = "$k0" ]
}

@test "the key changes with the step's command, its timeout (--timeout too) and the configured steps" {
	k0=$(forge-verify --key -- true)
	k1=$(forge-verify --key -- true extra)
	[ "$k1" != "$k0" ]
	k2=$(forge-verify --key --timeout 60 -- true)
	[ "$k2" != "$k0" ]
	echo '{"verify": {"steps": [{"name": "t", "run": "true"}]}}' >"$HOME/c.json"
	k3=$(forge-verify --key --config "$HOME/c.json")
	echo '{"verify": {"steps": [{"name": "t", "run": "true", "timeout": 5}]}}' >"$HOME/c.json"
	k4=$(forge-verify --key --config "$HOME/c.json")
	[ "$k4" != "$k3" ]
	echo '{"verify": {"steps": [{"name": "u", "run": "true"}]}}' >"$HOME/c.json"
	k5=$(forge-verify --key --config "$HOME/c.json")
	[ "$k5" != "$k3" ]
}

@test "the key changes with the variables of verify.reuse.env (default PATH), not with others" {
	k0=$(forge-verify --key -- true)
	[ "$(PATH="$PATH:/nonexistent" forge-verify --key -- true)" != "$k0" ]
	[ "$(FORGE_TEST_VAR=1 forge-verify --key -- true)" = "$k0" ]
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"verify": {"reuse": {"env": ["PATH", "FORGE_TEST_VAR"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	k1=$(forge-verify --key -- true)
	k2=$(FORGE_TEST_VAR=1 forge-verify --key -- true)
	[ "$k2" != "$k1" ]
	k3=$(FORGE_TEST_VAR=2 forge-verify --key -- true)
	[ "$k3" != "$k2" ]
}

@test "the key changes with the fingerprint of the step's program on PATH (mtime, size, another one first)" {
	mkdir -p "$SCRATCH/bin1" "$SCRATCH/bin2"
	printf '#!/bin/sh\nexit 0\n' >"$SCRATCH/bin1/mytool"
	chmod +x "$SCRATCH/bin1/mytool"
	export PATH="$SCRATCH/bin1:$PATH"
	echo '{"verify": {"steps": [{"name": "t", "run": "  mytool --flag && echo done"}]}}' >"$HOME/c.json"
	k0=$(forge-verify --key --config "$HOME/c.json")
	touch -d '2001-01-01' "$SCRATCH/bin1/mytool"
	k1=$(forge-verify --key --config "$HOME/c.json")
	[ "$k1" != "$k0" ]
	printf '#!/bin/sh\nexit 0 \n' >"$SCRATCH/bin1/mytool"
	touch -d '2001-01-01' "$SCRATCH/bin1/mytool"
	k2=$(forge-verify --key --config "$HOME/c.json")
	[ "$k2" != "$k1" ]
	cp -p "$SCRATCH/bin1/mytool" "$SCRATCH/bin2/mytool"
	k3=$(PATH="$SCRATCH/bin2:$PATH" forge-verify --key --config "$HOME/c.json")
	[ "$k3" != "$k2" ]
	# A -- COMMAND's program, too.
	k4=$(forge-verify --key -- mytool)
	touch -d '2002-01-01' "$SCRATCH/bin1/mytool"
	[ "$(forge-verify --key -- mytool)" != "$k4" ]
}

@test "the programs' lines of the key are stat's own, in order, for odd paths too ('|', spaces, a newline, one missing)" {
	local dirs got i prog want
	dirs=("$SCRATCH/a|b c" "$SCRATCH/nl
dir" "$SCRATCH/plain")
	for i in 0 1 2; do
		mkdir -p "${dirs[i]}"
		printf '#!/bin/sh\nexit 0\n' >"${dirs[i]}/tool-$i"
		chmod +x "${dirs[i]}/tool-$i"
	done
	export PATH="${dirs[0]}:${dirs[1]}:${dirs[2]}:$PATH"
	for i in 0 1 2; do
		prog="${dirs[i]}/tool-$i"
		run --separate-stderr forge-verify --key --json -- "tool-$i"
		assert_success
		jq -e --arg want "$(stat -L -c 'program %n %s %Y %i' -- "$prog")" '.text | endswith("\n\($want)\n")' <<<"$output"
	done
	# Configured steps: sh and each step's program, one of them not on PATH.
	echo '{"verify": {"steps": [{"name": "a", "run": "tool-0 x"}, {"name": "b", "run": "no-such-tool-zz"},
		{"name": "c", "run": "tool-2"}]}}' >"$HOME/c.json"
	run --separate-stderr forge-verify --key --json --config "$HOME/c.json"
	assert_success
	want=$(stat -L -c 'program %n %s %Y %i' -- "$(type -P sh)" "${dirs[0]}/tool-0" "${dirs[2]}/tool-2" | sort)
	jq -e '.text | contains("\nmissing no-such-tool-zz\n")' <<<"$output"
	got=$(jq -r '.text | split("\n")[] | select(startswith("program "))' <<<"$output" | sort)
	[ "$got" = "$want" ]
}

@test "the key changes with the mode: --isolated, --sandbox, the sandbox image and its egress posture, isolated setup" {
	k0=$(forge-verify --key -- true)
	ki=$(forge-verify --key --isolated -- true)
	[ "$ki" != "$k0" ]
	ks=$(forge-verify --key --sandbox -- true)
	[ "$ks" != "$k0" ]
	[ "$ks" != "$ki" ]
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"sandbox": {"image": "other:1"}}' >"$XDG_CONFIG_HOME/forge/config.json"
	ks2=$(forge-verify --key --sandbox -- true)
	[ "$ks2" != "$ks" ]
	# Without --sandbox the sandbox's configuration is no part of the key.
	[ "$(forge-verify --key -- true)" = "$k0" ]
	echo '{"sandbox": {"network": {"allow": ["example.org"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	ks3=$(forge-verify --key --sandbox -- true)
	[ "$ks3" != "$ks" ]
	echo '{"verify": {"isolated": {"keep": ["node_modules"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	ki2=$(forge-verify --key --isolated -- true)
	[ "$ki2" != "$ki" ]
}

@test "the key changes with forge's version" {
	k0=$(forge-verify --key -- true)
	cp -R "$FORGE_LIBDIR" "$SCRATCH/lib"
	sed -i "s/^\tforge_release='\\([^']*\\)'$/\tforge_release='\\1-other'/" "$SCRATCH/lib/forge.sh"
	run grep -c -- "-other'" "$SCRATCH/lib/forge.sh"
	assert_output 1
	k1=$(FORGE_LIBDIR=$SCRATCH/lib forge-verify --key -- true)
	[ "$k1" != "$k0" ]
}

@test "computing the key never writes the user's index, even with changes git status would refresh" {
	echo edit >>README
	echo new >untracked.txt
	touch -d '2001-01-01' README
	before=$(sha256sum <.git/index)
	forge-verify --key -- true
	forge-verify --key --isolated -- true
	forge-verify -q --reuse -- true
	forge-verify -q --reuse -- true
	[ "$(sha256sum <.git/index)" = "$before" ]
	# Nothing left in TMPDIR.
	run find "$TMPDIR" -mindepth 1
	assert_output ''
}

@test "a same-size rewrite in the second git wrote its index is in the key's tree: the index's copy keeps its time" {
	# git trusts an entry's stat data only when the entry is older than the
	# index file; a rewrite of the same size within that second looks
	# unchanged to a copy of the index made later with a new time.
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		printf 'aaaa\n' >same.txt
		git add same.txt && git commit -q --allow-empty -m "same $attempt"
		printf 'bbbb\n' >same.txt
		[ "$(stat -c %Y .git/index)" != "$(stat -c %Y same.txt)" ] || break
	done
	assert_equal "$(stat -c %Y same.txt)" "$(stat -c %Y .git/index)"
	sleep 1.1
	# The tree git computes when it hashes every file.
	honest=$(GIT_INDEX_FILE=$SCRATCH/fresh-index sh -c 'git read-tree HEAD && git add -A && git write-tree')
	run forge-verify --key --json -- true
	assert_success
	assert_equal "$(jq -r .tree <<<"$output")" "$honest"
	run forge-verify --key --json --isolated -- true
	assert_equal "$(jq -r .tree <<<"$output")" "$honest"
}

@test "hostile file names (spaces, a newline, a leading dash) are in the tree; editing one changes the key" {
	printf 'a\n' >' lead space'
	printf 'b\n' >"$(printf 'new\nline')"
	printf 'c\n' >-rf
	printf 'd\n' >'--key'
	k0=$(forge-verify --key --isolated -- true)
	forge-verify -q --isolated --reuse -- true
	[ "$(tree_of --isolated -- true)" = "$(last_record | jq -r .tree)" ]
	# The same tree, made by the test itself with git's own index of them all.
	cp .git/index "$SCRATCH/index"
	GIT_INDEX_FILE=$SCRATCH/index git add -A
	[ "$(GIT_INDEX_FILE=$SCRATCH/index git write-tree)" = "$(last_record | jq -r .tree)" ]
	git ls-tree -r --name-only -z "$(last_record | jq -r .tree)" | tr '\0' '|' >"$SCRATCH/names"
	run cat "$SCRATCH/names"
	assert_output --partial "|-rf|"
	assert_output --partial "$(printf 'new\nline')"
	printf 'e\n' >-rf
	[ "$(forge-verify --key --isolated -- true)" != "$k0" ]
	run --separate-stderr forge-verify --isolated --reuse -- true
	assert_output 'Verdict: PASS'
}

# --- the key's own index ---------------------------------------------------------

# honest: the tree git computes for the working state when it hashes every
# file (an index read from HEAD, no stat data of anyone's).
honest() {
	rm -f "$SCRATCH/honest-index"
	GIT_INDEX_FILE=$SCRATCH/honest-index sh -c 'git read-tree HEAD && git add -A && git write-tree'
}

# git_tree: the tree git add -A and write-tree give for the working state.
git_tree() {
	cp .git/index "$SCRATCH/gi" 2>/dev/null || rm -f "$SCRATCH/gi"
	GIT_INDEX_FILE=$SCRATCH/gi git add -A
	GIT_INDEX_FILE=$SCRATCH/gi git write-tree
}

@test "an unchanged kept index's tree, read from its cache tree, is git's: sha1, sha256, no commit yet, and without the helper" {
	local dir h
	forge-verify -q -- true
	echo edit >>README
	echo new >untracked.txt
	want=$(git_tree)
	# Made, then read back from the kept index (forge-index-tree).
	[ "$(tree_of -- true)" = "$want" ]
	[ "$(tree_of -- true)" = "$want" ]
	# Without forge-index-tree: git write-tree, the same tree.
	mkdir "$SCRATCH/helpers"
	for h in "$FORGE_HELPERDIR"/*; do
		[ "${h##*/}" = forge-index-tree ] || ln -s "$h" "$SCRATCH/helpers/"
	done
	[ "$(FORGE_HELPERDIR=$SCRATCH/helpers tree_of -- true)" = "$want" ]
	for dir in s256 nocommit; do
		mkdir "$SCRATCH/$dir"
		cd "$SCRATCH/$dir"
		if [ "$dir" = s256 ]; then git init -q --object-format=sha256; else git init -q; fi
		mkdir -p a/b
		echo one >a/b/f
		echo two >g
		if [ "$dir" = s256 ]; then git add -A && git commit -q -m one; fi
		forge-verify -q -- true
		echo three >>a/b/f
		echo four >a/new
		want=$(git_tree)
		[ "$dir" != s256 ] || [ "${#want}" -eq 64 ]
		[ "$(tree_of -- true)" = "$want" ]
		[ "$(tree_of -- true)" = "$want" ]
	done
	[ "${#want}" -eq 40 ]
}

@test "the key's index is forge's own, in .forge/reuse, kept across runs: one file, the user's index never read for stat data" {
	# --key alone makes no state: its index is a scratch one, in TMPDIR.
	forge-verify --key -- true >/dev/null
	[ ! -e .forge ]
	run find "$TMPDIR" -mindepth 1
	assert_output ''
	# Once a verification made .forge, the key's index is kept there.
	forge-verify -q --reuse -- true
	run ls .forge/reuse
	assert_output --regexp '^excludes
index-[0-9a-f]{32}$'
	kept=$(ls .forge/reuse/index-*)
	# (The first status adds git's untracked cache to it; a second later,
	# when no folder is newer than the index, racy git.)
	sleep 1.1
	forge-verify --key -- true >/dev/null
	# Unchanged: the same kept index, not written again.
	before=$(stat -c '%i %Y' "$kept")
	sleep 1.1
	forge-verify --key -- true >/dev/null
	forge-verify --key -- true >/dev/null
	[ "$(stat -c '%i %Y' "$kept")" = "$before" ]
	# .forge is not in the snapshot.
	run git ls-tree -r --name-only "$(tree_of -- true)"
	assert_output README
}

@test "each change of the working state is a new key through the kept index: content, mode, a new and a removed untracked file" {
	forge-verify -q --reuse -- true
	k0=$(forge-verify --key -- true)
	echo edit >>README
	k1=$(forge-verify --key -- true)
	[ "$k1" != "$k0" ]
	assert_equal "$(tree_of -- true)" "$(honest)"
	chmod +x README
	k2=$(forge-verify --key -- true)
	[ "$k2" != "$k1" ]
	assert_equal "$(tree_of -- true)" "$(honest)"
	mkdir -p new/dir
	echo new >new/dir/untracked.txt
	k3=$(forge-verify --key -- true)
	[ "$k3" != "$k2" ]
	assert_equal "$(tree_of -- true)" "$(honest)"
	rm -r new
	[ "$(forge-verify --key -- true)" = "$k2" ]
	chmod -x README
	[ "$(forge-verify --key -- true)" = "$k1" ]
	git checkout -q -- README
	[ "$(forge-verify --key -- true)" = "$k0" ]
}

@test "a same-size rewrite with the mtime put back is a new key, whatever core.checkStat and core.trustctime say" {
	forge-verify -q -- true
	printf 'aaaa\n' >same.txt
	git add same.txt && git commit -q -m same
	git config core.checkStat minimal
	git config core.trustctime false
	forge-verify --key -- true >/dev/null
	# Neither index of the second same.txt was written (racy git).
	sleep 1.1
	git status --porcelain
	k0=$(forge-verify --key -- true)
	cp -p same.txt "$SCRATCH/ref"
	printf 'bbbb\n' >same.txt
	touch -r "$SCRATCH/ref" same.txt
	# git itself, with that configuration, sees nothing.
	run git status --porcelain
	assert_output ''
	k1=$(forge-verify --key -- true)
	[ "$k1" != "$k0" ]
	assert_equal "$(tree_of -- true)" "$(honest)"
}

@test "an entry of the user's index that hides a change (assume-unchanged, forged stat data) hides nothing from the key" {
	forge-verify -q --reuse -- true
	k0=$(forge-verify --key -- true)
	git update-index --assume-unchanged README
	echo hidden >>README
	run git status --porcelain
	assert_output ''
	[ "$(forge-verify --key -- true)" != "$k0" ]
	assert_equal "$(tree_of -- true)" "$(honest)"
}

@test "a same-size rewrite in the second forge wrote its kept index is in the key's tree (racy git)" {
	forge-verify -q -- true
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		printf 'a%04d\n' "$attempt" >same.txt
		forge-verify --key -- true >/dev/null
		printf 'b%04d\n' "$attempt" >same.txt
		kept=$(ls .forge/reuse/index-*)
		[ "$(stat -c %Y "$kept")" != "$(stat -c %Y same.txt)" ] || break
	done
	assert_equal "$(stat -c %Y same.txt)" "$(stat -c %Y "$kept")"
	assert_equal "$(tree_of -- true)" "$(honest)"
	sleep 1.1
	assert_equal "$(tree_of -- true)" "$(honest)"
}

@test "an untracked file the user then ignores, or untracks and ignores, leaves the key; a tracked ignored file stays" {
	forge-verify -q -- true
	echo x >later.txt
	printf 'kept\n' >keep.log
	git add -f keep.log && git commit -q -m 'keep.log'
	k0=$(forge-verify --key -- true)
	t0=$(tree_of -- true)
	git ls-tree -r --name-only "$t0" | grep -qx later.txt
	echo later.txt >>.git/info/exclude
	git ls-tree -r --name-only "$(tree_of -- true)" >"$SCRATCH/names"
	run cat "$SCRATCH/names"
	refute_line later.txt
	assert_line keep.log
	[ "$(forge-verify --key -- true)" != "$k0" ]
	# Tracked, then untracked and ignored: out of the snapshot.
	git rm -q --cached keep.log
	echo '*.log' >>.git/info/exclude
	run git ls-tree -r --name-only "$(tree_of -- true)"
	refute_line keep.log
	# A global excludes file named by core.excludesFile counts too.
	echo 'README' >"$SCRATCH/global-ignore"
	git add -f keep.log
	echo new >new.txt
	tree_of -- true >/dev/null
	git config core.excludesFile "$SCRATCH/global-ignore"
	git rm -q --cached README
	git ls-tree -r --name-only "$(tree_of -- true)" >"$SCRATCH/names"
	run cat "$SCRATCH/names"
	refute_line README
	assert_line new.txt
	assert_line keep.log
	tree_of -- true >/dev/null
	echo new.txt >>"$SCRATCH/global-ignore"
	run git ls-tree -r --name-only "$(tree_of -- true)"
	refute_line new.txt
	assert_line keep.log
}

@test "concurrent keys of a changed state all compute the same tree and leave one kept index that works" {
	forge-verify -q --reuse -- true
	echo edit >>README
	echo new >untracked.txt
	pids=''
	for i in 1 2 3 4 5 6; do
		forge-verify --key --json -- true >"$SCRATCH/key.$i" &
		pids="$pids $!"
	done
	# shellcheck disable=SC2086 # a list of PIDs
	wait_each $pids
	want=$(honest)
	for i in 1 2 3 4 5 6; do
		assert_equal "$(jq -r .tree "$SCRATCH/key.$i")" "$want"
	done
	run ls .forge/reuse
	assert_output --regexp '^excludes
index-[0-9a-f]{32}$'
	GIT_INDEX_FILE=$(ls "$PWD"/.forge/reuse/index-*) git ls-files >/dev/null
	assert_equal "$(tree_of -- true)" "$want"
}

@test "a kept index git cannot read (cut short, garbage) gives the right tree all the same, and is replaced" {
	forge-verify -q --reuse -- true
	kept=$(ls .forge/reuse/index-*)
	echo garbage >"$kept"
	echo edit >>README
	assert_equal "$(tree_of -- true)" "$(honest)"
	GIT_INDEX_FILE=$(ls "$PWD"/.forge/reuse/index-*) git ls-files >"$SCRATCH/files"
	run cat "$SCRATCH/files"
	assert_output README
}

@test "a symbolic link planted for .forge/reuse or a kept index is refused or never followed" {
	forge-verify -q --reuse -- true
	kept=$(ls .forge/reuse/index-*)
	cp "$kept" "$SCRATCH/index"
	# A link at the kept index's name: refused.
	rm "$kept"
	ln -s "$SCRATCH/index" "$kept"
	run --separate-stderr forge-verify --key -- true
	assert_failure 73
	[[ $stderr == *'symbolic link'* ]]
	# A link among the kept indexes (another fingerprint's): never read,
	# removed as a link.
	mv "$kept" .forge/reuse/index-00000000000000000000000000000000
	echo edit >>README
	assert_equal "$(tree_of -- true)" "$(honest)"
	[ -f "$SCRATCH/index" ]
	run find .forge/reuse -type l
	assert_output ''
	rm -rf .forge/reuse
	mkdir "$SCRATCH/elsewhere"
	ln -s "$SCRATCH/elsewhere" .forge/reuse
	run --separate-stderr forge-verify --key -- true
	assert_failure 73
	[[ $stderr == *'symbolic link'* ]]
	run ls "$SCRATCH/elsewhere"
	assert_output ''
}

# --- reuse -------------------------------------------------------------------

@test "a second --reuse run of the same state reuses the PASS: says whose, records it, runs nothing" {
	run --separate-stderr forge-verify --reuse -- sh -c 'echo ran >>"$0"' "$SCRATCH/ran"
	assert_success
	assert_output 'Verdict: PASS'
	first=$(last_record | jq -r .run)
	run --separate-stderr forge-verify --reuse -- sh -c 'echo ran >>"$0"' "$SCRATCH/ran"
	assert_success
	assert_output --regexp "^Verdict: PASS \\(reused run $first from [0-9]+s ago, [A-Za-z0-9._-]+\\)\$"
	[ "$(wc -l <"$SCRATCH/ran")" -eq 1 ]
	[ "$(runs)" -eq 2 ]
	last_record | jq -e --arg r "$first" '.reused.run == $r and (.reused.host | length > 0) and .steps == [] and .verdict == "PASS"'
	last_record | jq -e --arg r "$first" '.run != $r'
	# A plain run's record says reused null.
	grep -F '"event":"verify"' .forge/timeline.jsonl | head -n 1 | jq -e '.reused == null'
	run --separate-stderr forge-verify --report
	assert_success
	assert_output --partial "reused: the verdict of run $first on "
	# --json prints the record of the reused run.
	run --separate-stderr forge-verify --reuse --json -- sh -c 'echo ran >>"$0"' "$SCRATCH/ran"
	echo "$output" | jq -e --arg r "$first" '.reused.run == $r'
}

@test "a record that is not UTF-8 is still the one a reuse believes and the one --report shows" {
	forge-verify -q --reuse -- true
	first=$(last_record | jq -r .run)
	# A character cut short in it (a hand edit, another tool): grep, in a
	# UTF-8 locale, would say "binary file matches" instead of printing it.
	sed -i '$ s/"breaker":"closed"/"breaker":"closed","text":"caf\o303"/' .forge/timeline.jsonl
	export LC_ALL=C.UTF-8
	run --separate-stderr forge-verify --report
	assert_success
	assert_line --index 0 --partial "Run $first "
	run --separate-stderr forge-verify --reuse -- true
	assert_output --regexp "^Verdict: PASS \\(reused run $first "
}

@test "a reused run makes no run folder: reused runs never push the evidence they repeat out of retention" {
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"verify": {"keepRuns": 2}}' >"$XDG_CONFIG_HOME/forge/config.json"
	forge-verify -q --reuse -- sh -c 'echo evidence'
	first=$(last_record | jq -r .run)
	for i in 1 2 3; do
		forge-verify -q --reuse -- sh -c 'echo evidence'
	done
	[ "$(last_record | jq -r .reused.run)" = "$first" ]
	run ls .forge/runs
	assert_output "$first"
	# The report of a reused run names whose verdict it is, and no logs of its own.
	run --separate-stderr forge-verify --report
	assert_output --partial "reused: the verdict of run $first on "
	refute_output --partial 'logs:'
	# A run that runs steps prunes: the last two records are that run and
	# a reused one, which keeps the run it repeats.
	forge-verify -q --reuse -- true
	grep -qx evidence ".forge/runs/$first/1-command.log"
}

@test "without --reuse (or with --no-reuse, whatever the order) nothing is reused" {
	forge-verify -q --reuse -- true
	run --separate-stderr forge-verify -- true
	assert_output 'Verdict: PASS'
	run --separate-stderr forge-verify --reuse --no-reuse -- true
	assert_output 'Verdict: PASS'
	run --separate-stderr forge-verify --no-reuse --reuse -- true
	assert_output 'Verdict: PASS'
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"verify": {"reuse": true}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run --separate-stderr forge-verify --no-reuse -- true
	assert_output 'Verdict: PASS'
	run --separate-stderr forge-verify -- true
	assert_output --partial 'reused run'
	echo '{"verify": {"reuse": {"enabled": true}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run --separate-stderr forge-verify -- true
	assert_output --partial 'reused run'
	echo '{"verify": {"reuse": {"enabled": false}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run --separate-stderr forge-verify -- true
	assert_output 'Verdict: PASS'
}

@test "each change to the key gives a fresh run" {
	forge-verify -q --reuse -- true
	echo edit >>README
	run --separate-stderr forge-verify --reuse -- true
	assert_output 'Verdict: PASS'
	run --separate-stderr forge-verify --reuse --timeout 30 -- true
	assert_output 'Verdict: PASS'
	run --separate-stderr forge-verify --reuse --isolated -- true
	assert_output 'Verdict: PASS'
	run --separate-stderr env PATH="$PATH:/x" forge-verify --reuse -- true
	assert_output 'Verdict: PASS'
	run --separate-stderr forge-verify --reuse -- true
	assert_output --partial 'reused run'
}

@test "a reused FAIL fails again and counts for the breaker; ERROR is never reused" {
	run --separate-stderr forge-verify --reuse -- false
	assert_failure 1
	run --separate-stderr forge-verify --reuse -- false
	assert_failure 1
	assert_output --partial 'Verdict: FAIL (reused run '
	[ "$(streak)" -eq 2 ]
	run --separate-stderr forge-verify --reuse -- false
	assert_failure 2
	[[ $stderr == *'Breaker: OPEN (3 consecutive failures, threshold 3)'* ]]
	[ "$(streak)" -eq 3 ]
	forge-verify --reset
	# exit 127: an ERROR, recorded but never written as a note.
	run --separate-stderr forge-verify --reuse -- sh -c 'exit 127'
	assert_failure 69
	run --separate-stderr forge-verify --reuse -- sh -c 'exit 127'
	assert_failure 69
	assert_output --partial 'Verdict: ERROR'
	last_record | jq -e '.reused == null'
	run grep -c '"verdict":"ERROR"' <<<"$(note)"
	assert_output 0
}

# forged_pass_fails RUN: a note entry on $tree for $key (the key of
# `false`) saying RUN passed is not believed: --reuse -- false fails.
forged_pass_fails() {
	printf '{"key":"%s","verdict":"PASS","run":"%s","time":"2026-01-01T00:00:00Z","epoch":1767225600,"host":"evil"}\n' \
		"$key" "$1" >"$SCRATCH/entry"
	git notes --ref=forge-verify add -f -F "$SCRATCH/entry" "$tree"
	run --separate-stderr forge-verify --reuse -- false
	assert_failure
	assert_output 'Verdict: FAIL'
}

@test "a note entry without a matching timeline record is never believed (forged from a sandbox)" {
	forge-verify -q --reuse -- true
	good=$(last_record | jq -r .run)
	tree=$(tree_of -- true)
	key=$(forge-verify --key -- false)
	# An entry for `false` naming an unknown run, then one naming the real
	# PASS of `true` (another key), then a FAIL-as-PASS of a real run.
	for run_id in 20260101T000000Z-1 "$good"; do
		forged_pass_fails "$run_id"
	done
	forged_pass_fails "$(last_record | jq -r .run)"
	# Garbage, escape sequences and a header that would pass the entry after
	# it off as a trusted ref's change nothing either.
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"verify": {"reuse": {"trust": ["refs/notes/forge-verify-ci"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	{
		printf '\033[31m{"key":"%s",\n' "$key"
		printf 'blob 182 refs/notes/forge-verify-ci\n'
		printf '{"key":"%s","verdict":"PASS","run":"20260101T000000Z-1","time":"2026-01-01T00:00:00Z","epoch":1767225600,"host":"evil"}\n' "$key"
	} >"$SCRATCH/entry"
	git notes --ref=forge-verify add -f -F "$SCRATCH/entry" "$tree"
	run --separate-stderr forge-verify --reuse -- false
	assert_failure
	assert_output 'Verdict: FAIL'
}

# --- sharing -------------------------------------------------------------------

# clone_pair: $SCRATCH/remote.git (bare) with the repository pushed, and a
# second clone $SCRATCH/other of it.
clone_pair() {
	git init -q --bare "$SCRATCH/remote.git"
	git remote add origin "$SCRATCH/remote.git"
	git push -q origin HEAD:main
	git clone -q "$SCRATCH/remote.git" "$SCRATCH/other"
}

@test "round trip through a bare remote: pushed notes fetched into a trusted ref are reused, and say whose" {
	clone_pair
	forge-verify -q --reuse -- true
	first=$(last_record | jq -r .run)
	host=$(note | jq -r .host)
	git push -q origin refs/notes/forge-verify
	cd "$SCRATCH/other"
	git fetch -q origin '+refs/notes/forge-verify:refs/notes/forge-verify-ci'
	# Not trusted: the verification runs.
	run --separate-stderr forge-verify --reuse -- true
	assert_output 'Verdict: PASS'
	cd "$SCRATCH" && rm -rf other && git clone -q "$SCRATCH/remote.git" other && cd other
	git fetch -q origin '+refs/notes/forge-verify:refs/notes/forge-verify-ci'
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"verify": {"reuse": {"trust": ["refs/notes/forge-verify-ci"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run --separate-stderr forge-verify --reuse -- true
	assert_success
	assert_output --regexp "^Verdict: PASS \\(reused run $first from [0-9]+s ago, $host\\)\$"
	last_record | jq -e --arg r "$first" '.reused.run == $r'
	# Nothing ran here: the one record is the reused one.
	[ "$(runs)" -eq 1 ]
}

@test "a repository's forge.json cannot set verify.reuse.trust; an invalid trust entry is a configuration error" {
	clone_pair
	forge-verify -q --reuse -- true
	git push -q origin refs/notes/forge-verify
	cd "$SCRATCH/other"
	git fetch -q origin '+refs/notes/forge-verify:refs/notes/forge-verify-ci'
	echo '{"verify": {"reuse": {"enabled": true, "trust": ["refs/notes/forge-verify-ci"]}}}' >forge.json
	run --separate-stderr forge-verify -- true
	assert_output 'Verdict: PASS'
	[[ $stderr == *'key verify.reuse.trust is ignored'* ]]
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"verify": {"reuse": {"trust": ["not a ref"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run --separate-stderr forge-verify --reuse -- true
	assert_failure 65
	[[ $stderr == *'verify.reuse.trust'* ]]
}

@test "a repository's forge.json cannot take PATH out of the key (verify.reuse.env is ignored there)" {
	k0=$(forge-verify --key -- true)
	echo '{"verify": {"reuse": {"enabled": true, "env": []}}}' >forge.json
	git add forge.json && git commit -qm 'reuse without env'
	k1=$(forge-verify --key -- true)
	run --separate-stderr forge-verify --key -- true
	[[ $stderr == *'key verify.reuse.env is ignored'* ]]
	# PATH is still in the key: another PATH is another key.
	[ "$(PATH="$PATH:/nonexistent" forge-verify --key -- true 2>/dev/null)" != "$k1" ]
	[ -n "$k0" ]
}

# --- writing the note ----------------------------------------------------------

@test "writing the note runs no hook and leaves every other ref, notes refs included, as it was" {
	git notes add -m 'a user note' HEAD
	git notes --ref=review add -m 'another' HEAD
	mkdir -p .git/hooks
	for h in post-commit post-rewrite reference-transaction post-index-change pre-commit; do
		printf '#!/bin/sh\necho %s >>"%s/hooks.ran"\n' "$h" "$SCRATCH" >".git/hooks/$h"
		chmod +x ".git/hooks/$h"
	done
	git for-each-ref >"$SCRATCH/refs.before"
	forge-verify -q --reuse -- true
	forge-verify -q --reuse -- false || :
	forge-verify -q --reuse -- true
	[ ! -e "$SCRATCH/hooks.ran" ]
	git for-each-ref | grep -v -F 'refs/notes/forge-verify' >"$SCRATCH/refs.after"
	run diff "$SCRATCH/refs.before" "$SCRATCH/refs.after"
	assert_success
	# One note holds both keys' entries.
	[ "$(note | wc -l)" -eq 2 ]
}

@test "concurrent writers: every run ends correctly and the note holds one intact entry per key" {
	# Four different keys and two runs of one key, all at once.
	pids=''
	for i in 1 2 3 4; do
		forge-verify -q --reuse -- sh -c "sleep 0.2; exit 0" "$i" &
		pids="$pids $!"
	done
	forge-verify -q --reuse -- sh -c 'sleep 0.2' same &
	pids="$pids $!"
	forge-verify -q --reuse -- sh -c 'sleep 0.2' same &
	pids="$pids $!"
	# shellcheck disable=SC2086 # a list of PIDs
	wait_each $pids
	[ "$(runs)" -eq 6 ]
	note >"$SCRATCH/note"
	# Every line an entry (valid JSON); one per key.
	run jq -e -s 'length == 5 and all(.verdict == "PASS")' "$SCRATCH/note"
	assert_success
	[ "$(jq -r .key "$SCRATCH/note" | sort -u | wc -l)" -eq 5 ]
	run --separate-stderr forge-verify --reuse -- sh -c 'sleep 0.2' same
	assert_output --partial 'reused run'
}

@test "a writer that died holding the ref lock leaves the previous note: the run ends PASS with a warning" {
	forge-verify -q --reuse -- true
	before=$(note)
	: >.git/refs/notes/forge-verify.lock
	run --separate-stderr forge-verify --reuse -- true extra
	assert_success
	assert_output 'Verdict: PASS'
	[[ $stderr == *'could not record the verdict'* ]]
	[ "$(note)" = "$before" ]
	rm .git/refs/notes/forge-verify.lock
	run --separate-stderr forge-verify --reuse -- true
	assert_output --partial 'reused run'
}

@test "writers SIGKILLed at random moments leave a note that parses, and later runs write theirs" {
	forge-verify -q --reuse -- true
	for i in 1 2 3 4 5 6 7 8; do
		forge-verify -q --reuse -- true "$i" &
		pid=$!
		sleep "0.0$((RANDOM % 10))"
		kill -KILL "$pid" 2>/dev/null || :
		wait "$pid" || :
	done
	# (A git a killed run started may still be finishing its update.)
	sleep 1
	note >"$SCRATCH/note"
	run jq -e -s 'length >= 1 and all(.key | test("^[0-9a-f]{64}$"))' "$SCRATCH/note"
	assert_success
	rm -f .git/refs/notes/forge-verify.lock
	run --separate-stderr forge-verify --reuse -- true
	assert_output --partial 'reused run'
	forge-verify -q --reuse -- true after
	run --separate-stderr forge-verify --reuse -- true after
	assert_output --partial 'reused run'
}

# --- options -------------------------------------------------------------------

@test "--key and --reuse join the mode and option checks" {
	local args
	for args in '--key --report' '--reuse --report' '--no-reuse --breaker' '--key --reuse -- true' \
		'--key --change x -- true'; do
		read -ra words <<<"$args"
		run --separate-stderr forge-verify "${words[@]}"
		assert_failure 64
	done
}

# --- in git hooks ---------------------------------------------------------------

# hook_setup: files a.txt, b.txt, sub/s.txt and a tracked keep.log that
# .gitignore ignores (only an index seeded from the right file keeps it),
# and a pre-commit and a pre-push hook that write to $SCRATCH/hook.out the
# key (--key, from the root and from sub/), the --reuse verdict, and the
# checksum of the index they were given before and after (with its name).
hook_setup() {
	printf 'a\n' >a.txt
	printf 'b\n' >b.txt
	mkdir sub && printf 's\n' >sub/s.txt
	printf '*.log\n' >.gitignore
	printf 'kept\n' >keep.log
	git add a.txt b.txt sub/s.txt .gitignore && git add -f keep.log
	git commit -q -m files
	for hook in pre-commit pre-push; do
		cat >".git/hooks/$hook" <<-HOOK
		#!/bin/sh
		cat >/dev/null
		out="$SCRATCH/hook.out"
		index=\${GIT_INDEX_FILE:-.git/index}
		sum() { sha256sum <"\$index"; }
		echo "index \$index \$(sum)" >>"\$out"
		echo "key \$(forge-verify --key --isolated -- true </dev/null)" >>"\$out"
		echo "subkey \$(cd sub && forge-verify --key --isolated -- true </dev/null)" >>"\$out"
		echo "reuse \$(forge-verify --isolated --reuse -- true </dev/null 2>/dev/null)" >>"\$out"
		echo "fresh \$(forge-verify --isolated --reuse -- true hook </dev/null 2>/dev/null)" >>"\$out"
		echo "index \$index \$(sum)" >>"\$out"
		HOOK
		chmod +x ".git/hooks/$hook"
	done
}

# hook_check KEY [SUB]: the hook ran once since the last check, computed KEY
# from the root and (unless SUB is -) from sub/, reused the verdict of the
# run outside, and left the index it was given as it found it; the verdict
# it made itself (a note written from the hook) is reused outside it.
hook_check() {
	run cat "$SCRATCH/hook.out"
	echo "$output"
	[ "$(grep -c '^key ' "$SCRATCH/hook.out")" -eq 1 ]
	grep -qx "key $1" "$SCRATCH/hook.out"
	[ "${2:-}" = - ] || grep -qx "subkey $1" "$SCRATCH/hook.out"
	grep -q '^reuse Verdict: PASS (reused run ' "$SCRATCH/hook.out"
	grep -qx 'fresh Verdict: PASS' "$SCRATCH/hook.out"
	[ "$(grep '^index ' "$SCRATCH/hook.out" | sort -u | wc -l)" -eq 1 ]
	rm -f "$SCRATCH/hook.out"
	run --separate-stderr forge-verify --isolated --reuse -- true hook
	assert_output --partial 'Verdict: PASS (reused run '
}

@test "--key and --reuse in a real pre-commit hook (commit -a, commit PATH, the index alone from a subfolder, a linked worktree): the key outside the hook, the index untouched" {
	hook_setup
	# commit -a: the hook gets the index being committed (index.lock);
	# the key's tree is the tree committed.
	echo more >>a.txt
	k=$(forge-verify --key --isolated -- true)
	t=$(tree_of --isolated -- true)
	forge-verify -q --isolated --reuse -- true
	git commit -q -a -m all
	hook_check "$k"
	[ "$(git rev-parse 'HEAD^{tree}')" = "$t" ]
	# commit PATH: a temporary index of HEAD and PATH; an untracked file
	# and an unstaged change elsewhere are in the working state all the same.
	echo more >>b.txt
	echo untracked >u.txt
	k=$(forge-verify --key --isolated -- true)
	forge-verify -q --isolated --reuse -- true
	git commit -q -m path -- b.txt
	hook_check "$k"
	# The index alone, committed from sub/: git gives the hook a relative
	# GIT_INDEX_FILE (.git/index, from the root), which the hook's cd
	# into sub/ must not turn into sub/.git/index.
	rm u.txt
	echo more >>sub/s.txt
	git add sub/s.txt
	k=$(forge-verify --key --isolated -- true)
	forge-verify -q --isolated --reuse -- true
	(cd sub && git commit -q -m sub)
	hook_check "$k"
	[ "$(git -C sub log -1 --format=%s)" = sub ]
	run --separate-stderr git status --porcelain
	assert_output ''
	# A linked worktree: git gives the hook GIT_DIR (.git/worktrees/<name>)
	# and that worktree's index.lock. (With GIT_DIR set and no
	# GIT_WORK_TREE, git itself takes the current folder for the top of the
	# worktree, so from sub/ forge, like git status, sees sub/ alone.)
	git worktree add -q "$SCRATCH/linked"
	cd "$SCRATCH/linked"
	echo linked >>a.txt
	k=$(forge-verify --key --isolated -- true)
	forge-verify -q --isolated --reuse -- true
	git commit -q -a -m linked
	hook_check "$k" -
	[ "$(git -C "$REPO" status --porcelain)" = '' ]
}

@test "--key and --reuse in a real pre-push hook: the key outside the hook, notes written, the index untouched" {
	hook_setup
	git init -q --bare "$SCRATCH/remote.git"
	git remote add origin "$SCRATCH/remote.git"
	echo unpushed >>a.txt
	k=$(forge-verify --key --isolated -- true)
	forge-verify -q --isolated --reuse -- true
	before=$(sha256sum <.git/index)
	git push -q origin HEAD
	hook_check "$k"
	[ "$(sha256sum <.git/index)" = "$before" ]
}

# reused_progs ARG...: the names of the programs a run of forge-verify ARG...
# starts (under FORGE_TEST_SHELL the shell itself, as t/verify.bats counts).
# $SCRATCH/execs keeps the trace, forks included (git's threads are clone3).
reused_progs() {
	# shellcheck disable=SC2086 # FORGE_TEST_SHELL is words ("busybox sh")
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -z -e trace=execve,clone,vfork,fork -o "$SCRATCH/execs" \
		${FORGE_TEST_SHELL:-} "$abs_top_builddir/bin/forge-verify" "$@" >/dev/null
	grep 'execve(' "$SCRATCH/execs" | grep -v ' = -1 ' | sed -n 's/.*execve("\([^"]*\)".*/\1/p' | sed 's|.*/||'
}

@test "the reuse path starts at most 3 git, 3 forge-state, no jq, no mkdir, no bare subshell and 12 programs in all (plain and --isolated --warm)" {
	command -v strace >/dev/null || { [ "${CI:-}" != true ] || fail "strace is required in CI"; skip "strace not installed"; }
	echo edit >>README
	echo new >untracked.txt
	for mode in '' '--isolated --warm'; do
		# shellcheck disable=SC2086 # options, split on purpose
		forge-verify -q $mode --reuse -- true
		# shellcheck disable=SC2086
		progs=$(reused_progs $mode --reuse -- true)
		echo "$mode: $progs"
		last_record | jq -e '.reused != null'
		# The key: rev-parse, then status on the kept index, whose tree
		# forge-index-tree reads (no write-tree); the note: one cat-file for
		# every ref that may hold it.
		[ "$(grep -cx git <<<"$progs")" -le 3 ]
		run grep -cx forge-index-tree <<<"$progs"
		assert_output 1
		# The clock, the breaker and the timeline.
		[ "$(grep -cx forge-state <<<"$progs")" -le 3 ]
		run grep -cx -e jq -e mkdir <<<"$progs"
		assert_output 0
		[ "$(wc -l <<<"$progs")" -le 12 ]
		# No bare subshell: a fork for each program but forge-verify, and
		# one for the $(...) around the notes' git | awk.
		forks=$(grep -cE '^[0-9]+ +(vfork|fork|clone)\(' "$SCRATCH/execs")
		[ "$forks" -le "$(wc -l <<<"$progs")" ]
	done
}
