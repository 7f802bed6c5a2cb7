#!/usr/bin/env bats
# forge-verify on real public projects (NAME.bundle, one commit each, in the
# corpus folder: $FORGE_PROJECTS, else shared/projects beside the clone;
# t/projects/README.md names the source, commit and licence of each and why
# the corpus is not committed here): the
# detected steps, a verdict equal to running the tests by hand, warm == cold,
# a copy from which no path leads into the real repository, git isolation,
# and a one-line break of a test giving FAIL. Nothing is fetched from outside
# except npm packages from the npm registry (SPEC 3.1, 3.2, 3.5).
load test_helper
load projects_helper

setup_file() {
	projects_setup_file
	# Nothing may come from the network but npm packages.
	export GOPROXY=off GOTOOLCHAIN=local CARGO_NET_OFFLINE=true
	export npm_config_cache="$BATS_FILE_TMPDIR/npm-cache" npm_config_audit=false npm_config_fund=false \
		npm_config_update_notifier=false
	# The corpus: third-party code, so not committed with forge.
	FORGE_PROJECTS=${FORGE_PROJECTS:-$BATS_TEST_DIRNAME/../../shared/projects}
	export FORGE_PROJECTS
	# The npm project's dependencies are installed once for the file.
	if command -v npm >/dev/null && [ -f "$FORGE_PROJECTS/webidl-conversions.bundle" ]; then
		git clone -q "$FORGE_PROJECTS/webidl-conversions.bundle" "$BATS_FILE_TMPDIR/node"
		(cd "$BATS_FILE_TMPDIR/node" && npm ci --no-progress >"$BATS_FILE_TMPDIR/npm-ci.log" 2>&1) ||
			{ cat "$BATS_FILE_TMPDIR/npm-ci.log" >&2; return 1; }
	fi
}

setup() {
	load_support
	forge_test_setup
}
teardown() { projects_teardown; }

# project NAME: clones the corpus's NAME.bundle as the real repository $REPO
# and as $HAND (where the tests are run by hand); cd to $REPO. Without the
# corpus the test is skipped, saying where the bundle was looked for: it is
# data the steering repository provides, not a tool CI could install.
project() {
	[ -f "$FORGE_PROJECTS/$1.bundle" ] ||
		skip "no corpus: $FORGE_PROJECTS/$1.bundle is missing (t/projects/README.md)"
	REPO=$SCRATCH/$1 HAND=$SCRATCH/hand-$1
	git clone -q "$FORGE_PROJECTS/$1.bundle" "$REPO"
	git clone -q "$FORGE_PROJECTS/$1.bundle" "$HAND"
	cd "$REPO" || return
}

# node_modules DIR: the npm project's dependencies, installed once in
# setup_file, into DIR (hard links where possible: the tests only read them).
node_modules() {
	cp -al "$BATS_FILE_TMPDIR/node/node_modules" "$1/" 2>/dev/null ||
		cp -a "$BATS_FILE_TMPDIR/node/node_modules" "$1/"
}

# verify [OPTIONS...]: forge-verify --isolated OPTIONS --json in $REPO; sets
# verdict, runs (the steps' run strings, one per line) and record.
verify() {
	record=$(cd "$REPO" && forge-verify --isolated "$@" --json 2>>"$SCRATCH/verify.err") || :
	verdict=$(jq -r .verdict <<<"$record")
	runs=$(jq -r '.steps[].run' <<<"$record")
}

# check_project NAME PATCH FILE STEP...: the whole check for one project.
# STEP... are the steps detection must find (and what "by hand" runs); PATCH
# is a sed script that changes one line of FILE so that a test fails.
check_project() {
	local name=$1 patch=$2 file=$3 expected
	shift 3
	project "$name"
	expected=$(printf '%s\n' "$@")
	# The clean tree: detected steps, and the verdict of running them by hand.
	verify
	[ "$runs" = "$expected" ]
	[ "$verdict" = PASS ]
	[ "$(by_hand "$@")" = PASS ]
	# warm == cold.
	verify --warm
	[ "$verdict" = PASS ]
	[ "$runs" = "$expected" ]
	# A one-line break of a test, uncommitted: FAIL, as by hand.
	sed -i -e "$patch" -- "$REPO/$file" "$HAND/$file"
	[ "$(git -C "$REPO" diff --numstat | awk '{print $1, $2}')" = '1 1' ]
	verify
	[ "$verdict" = FAIL ]
	[ "$(jq -r '.steps[-1].reason' <<<"$record")" = exit ]
	[ "$(by_hand "$@")" = FAIL ]
	# The evidence is where the record says.
	[ -s "$(jq -r '.steps[-1].log' <<<"$record")" ]
}

@test "C with make test (tiny-AES-c): make test alone, not its default target as a build step" {
	need gcc
	check_project tiny-aes-c '120s/{ 0x3a, 0xd7/{ 0x3b, 0xd7/' test.c 'make test'
}

@test "autotools with make check (jo): autoreconf, configure, make; make check" {
	need autoreconf
	need pkg-config
	check_project jo '1s/.*/["ja"]/' tests/jo.01.exp 'autoreconf -fi && ./configure && make' 'make check'
}

@test "Python with pytest (six): pytest from PATH" {
	need pytest
	check_project six 's/assert f.__doc__ == "New doc"/assert f.__doc__ == "Old doc"/' test_six.py pytest
}

@test "Python whose Makefile has lint as check (digest): make test, never the lint" {
	need python3
	check_project digest 's/0xb1d4025b/0xb1d4025c/' tests/test_crc.py 'make test'
	# The lint tools are not installed: make check and plain make would fail.
	run make -C "$HAND" check
	assert_failure
}

@test "Go module (google/uuid): go build, go test, without the network" {
	need go
	check_project uuid '27s/0, RFC4122, true/1, RFC4122, true/' uuid_test.go 'go build ./...' 'go test ./...'
}

@test "Rust crate without network dependencies (scopeguard): cargo build, cargo test" {
	need cargo
	check_project scopeguard '504s/drops.get(), 0)/drops.get(), 1)/' src/lib.rs 'cargo build' 'cargo test'
}

@test "npm package with dev dependencies and a lockfile (webidl-conversions): npm test" {
	need npm
	project webidl-conversions
	node_modules "$REPO"
	node_modules "$HAND"
	verify
	[ "$runs" = 'npm test' ]
	[ "$verdict" = PASS ]
	[ "$(by_hand 'npm test')" = PASS ]
	verify --warm
	[ "$verdict" = PASS ]
	sed -i -e 's/assert.equal(sut(undefined), false);/assert.equal(sut(undefined), true);/' -- \
		"$REPO/test/boolean.js" "$HAND/test/boolean.js"
	verify
	[ "$verdict" = FAIL ]
	[ "$(by_hand 'npm test')" = FAIL ]
	# The dev dependencies are in the real repository, ignored.
	run node -e 'require.resolve("eslint")'
	assert_success
}
@test "npm: no module resolves from a copy into the real repository's node_modules, cold or warm" {
	need node
	project webidl-conversions
	node_modules "$REPO"
	for mode in '' --warm; do
		# shellcheck disable=SC2086 # $mode is one word or none
		run forge-verify --isolated $mode -- node -e '
			try { console.log(require.resolve("eslint")) } catch (e) { console.log(e.code) }'
		assert_success
		resolved=$(tail -n 1 .forge/runs/*/1-command.log)
		# Not found (no dependencies in the copy) or the copy's own.
		case $resolved in
		MODULE_NOT_FOUND) ;;
		"$REPO"/*) fail "from the copy, eslint resolved to the real repository: $resolved" ;;
		/*/node_modules/eslint/*) ;;
		*) fail "unexpected: $resolved" ;;
		esac
		rm -rf .forge/runs
	done
}

@test "no parent folder of a copy, cold or warm, resolves into the real repository" {
	project six
	# shellcheck disable=SC2016 # expanded by the step's shell
	step='d=$(pwd -P); while [ "$d" != / ]; do d=$(dirname "$d"); printf "%s\n" "$(realpath "$d")"; done'
	for mode in '' --warm; do
		# shellcheck disable=SC2086
		run forge-verify --isolated $mode -- sh -c "$step"
		assert_success
		while IFS= read -r parent; do
			case $parent/ in "$REPO"/*) fail "a parent folder of the copy, $parent, is inside $REPO" ;; esac
		done <.forge/runs/*/1-command.log
		rm -rf .forge/runs
	done
}

@test "git isolation: git commands in the copy leave the source's refs, stash and config alone" {
	project digest
	echo change >>README.md
	git stash -q
	echo other >>README.md
	state() {
		git -C "$REPO" for-each-ref --format='%(refname) %(objectname)'
		git -C "$REPO" stash list --format='%H %gs'
		git -C "$REPO" config --local --list
		git -C "$REPO" worktree list --porcelain | grep -c '^worktree '
	}
	before=$(state)
	for mode in '' --warm; do
		# shellcheck disable=SC2086
		run forge-verify --isolated $mode -- sh -c '
			git -c user.name=s -c user.email=s@example.invalid commit -qam in-copy &&
			git tag -f forge-test-tag && git branch -f forge-test-branch &&
			git stash clear && git config forge.test yes &&
			git update-ref refs/heads/main HEAD~0 && git gc -q --prune=now'
		assert_success
		[ "$(state)" = "$before" ]
	done
	[ "$(cat README.md)" = "$(git show HEAD:README.md; echo other)" ]
}
