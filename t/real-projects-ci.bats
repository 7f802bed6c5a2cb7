#!/usr/bin/env bats
# forge-verify on real projects that CI can get (SPEC 3.1, 3.5): the source
# comes at test time from the package clients CI already uses, never from
# this repository. Go and Rust sources from Debian's -dev packages, a CMake
# tree from Debian's googletest, an npm package that publishes its tests;
# and, for shapes no package ships, small fixtures written here, each naming
# the real project whose shape it copies. Every case checks the detected
# steps, the verdict against running the tests by hand, --isolated and
# --warm agreeing, and an uncommitted breaking edit being seen.
# Downloads are cached between runs in $FORGE_TEST_CACHE (default
# /var/cache/forge-test-projects, else /tmp/forge-test-projects-UID).
# t/real-projects.bats (the $FORGE_PROJECTS corpus) is the extended local run.
load test_helper
load projects_helper

# Pinned: the npm package whose published tarball carries its tests.
NPM_PACKAGE=concat-map@0.0.1

setup_file() {
	projects_setup_file
	if [ -z "${FORGE_TEST_CACHE:-}" ]; then
		FORGE_TEST_CACHE=/var/cache/forge-test-projects
		mkdir -p "$FORGE_TEST_CACHE" 2>/dev/null && [ -w "$FORGE_TEST_CACHE" ] ||
			FORGE_TEST_CACHE=/tmp/forge-test-projects-$(id -u)
	fi
	mkdir -p "$FORGE_TEST_CACHE/debs" "$FORGE_TEST_CACHE/npm"
	export FORGE_TEST_CACHE
	# Builds share caches that outlive the test's private HOME; nothing but
	# the npm registry is reached while the tests run.
	export GOCACHE="$FORGE_TEST_CACHE/go-build" GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-mod=mod
	export CARGO_NET_OFFLINE=true CMAKE_BUILD_PARALLEL_LEVEL=2
	export npm_config_cache="$FORGE_TEST_CACHE/npm-cache" npm_config_audit=false npm_config_fund=false \
		npm_config_update_notifier=false npm_config_progress=false
}

setup() {
	load_support
	forge_test_setup
}
teardown() { projects_teardown; }

# deb_source PACKAGE PATH: extracts Debian's PACKAGE (downloaded once into
# the cache) into the scratch folder and sets SRC to PATH inside it.
deb_source() {
	local deb
	deb=$(find "$FORGE_TEST_CACHE/debs" -maxdepth 1 -name "$1_*.deb" | head -n 1)
	if [ -z "$deb" ]; then
		(cd "$FORGE_TEST_CACHE/debs" && apt-get download -q "$1") >>"$SCRATCH/by-hand.log" 2>&1 ||
			fail "apt-get download $1 failed"
		deb=$(find "$FORGE_TEST_CACHE/debs" -maxdepth 1 -name "$1_*.deb" | head -n 1)
	fi
	mkdir -p "$SCRATCH/deb"
	dpkg -x "$deb" "$SCRATCH/deb"
	SRC=$SCRATCH/deb/$2
	[ -d "$SRC" ] || fail "$1 has no $2"
}

# project DIR: the real repository $REPO (DIR's files, one commit) and the
# folder $HAND where the tests are run by hand, as a user would; cd $REPO.
project() {
	REPO=$SCRATCH/repo HAND=$SCRATCH/hand
	mkdir -p "$REPO"
	cp -R "$1/." "$REPO/"
	chmod -R u+w "$REPO"
	git -C "$REPO" init -q
	git -C "$REPO" add -A
	git -C "$REPO" commit -q -m "upstream source"
	cp -R "$REPO" "$HAND"
	rm -rf "$HAND/.git"
	cd "$REPO" || return
}

# verify [OPTIONS...]: forge-verify OPTIONS --json in $REPO; sets verdict,
# runs (the steps' run text, one a line) and record.
verify() {
	record=$(cd "$REPO" && forge-verify --json "$@" 2>>"$SCRATCH/verify.err") || :
	verdict=$(jq -r .verdict <<<"$record")
	runs=$(jq -r '.steps[].run' <<<"$record")
}

# break_both COMMAND: runs the shell COMMAND (an edit that breaks the
# project) in $REPO, uncommitted, and in $HAND.
break_both() {
	(cd "$REPO" && sh -c "$1")
	(cd "$HAND" && sh -c "$1")
}

# check_case BREAK STEP...: detected steps, verdict PASS cold, warm and by
# hand, and the cold PASS reused for the same state (--reuse: the key of a
# real project's working state); then, after the breaking edit BREAK
# (break_both), a fresh FAIL cold, FAIL warm and by hand.
check_case() {
	local breaking=$1 expected first
	shift
	expected=$(printf '%s\n' "$@")
	verify --isolated --reuse
	[ "$runs" = "$expected" ]
	[ "$verdict" = PASS ]
	[ "$(jq -r .tested <<<"$record")" != false ]
	first=$(jq -r .run <<<"$record")
	[ "$(by_hand "$@")" = PASS ]
	verify --isolated --warm
	[ "$runs" = "$expected" ]
	[ "$verdict" = PASS ]
	verify --isolated --reuse
	[ "$verdict" = PASS ]
	[ "$(jq -r .reused.run <<<"$record")" = "$first" ]
	[ -z "$runs" ]
	break_both "$breaking"
	[ -n "$(git -C "$REPO" status --porcelain)" ]
	verify --isolated --reuse
	[ "$verdict" = FAIL ]
	[ "$(jq -r .reused <<<"$record")" = null ]
	[ "$(jq -r '.steps[-1].reason' <<<"$record")" = exit ]
	[ "$(by_hand "$@")" = FAIL ]
	verify --isolated --warm
	[ "$verdict" = FAIL ]
}

@test "Go module from Debian (golang-github-google-uuid-dev): go build, go test, offline" {
	need go
	deb_source golang-github-google-uuid-dev usr/share/gocode/src/github.com/google/uuid
	project "$SRC"
	check_case "printf 'func TestForgeBreak(t *testing.T) { t.Fatal(\"broken\") }\\n' >>uuid_test.go" \
		'go build ./...' 'go test ./...'
}

@test "Rust crate from Debian (librust-scopeguard-dev): cargo build, cargo test, offline" {
	need cargo
	deb_source librust-scopeguard-dev usr/share/cargo/registry/scopeguard-1.1.0
	printf '/target\n' >"$SRC/.gitignore"
	project "$SRC"
	check_case "printf '#[test] fn forge_break() { panic!(\"broken\") }\\n' >>src/lib.rs" 'cargo build' 'cargo test'
}

@test "npm package with its tests ($NPM_PACKAGE): a generated lockfile, npm ci in the copy, npm test" {
	need npm
	local tgz lock=$FORGE_TEST_CACHE/npm/${NPM_PACKAGE%@*}-lock.json
	tgz=$FORGE_TEST_CACHE/npm/${NPM_PACKAGE%@*}-${NPM_PACKAGE#*@}.tgz
	[ -f "$tgz" ] || (cd "$FORGE_TEST_CACHE/npm" && npm pack -q "$NPM_PACKAGE") >>"$SCRATCH/by-hand.log" 2>&1 ||
		fail "npm pack $NPM_PACKAGE failed"
	mkdir -p "$SCRATCH/npm"
	tar -xzf "$tgz" -C "$SCRATCH/npm"
	if [ ! -f "$lock" ]; then
		(cd "$SCRATCH/npm/package" && npm install -q --package-lock-only) >>"$SCRATCH/by-hand.log" 2>&1 ||
			fail "npm install --package-lock-only failed"
		cp "$SCRATCH/npm/package/package-lock.json" "$lock.$$" && mv -f "$lock.$$" "$lock"
	fi
	cp "$lock" "$SCRATCH/npm/package/package-lock.json"
	printf 'node_modules/\n' >"$SCRATCH/npm/package/.gitignore"
	project "$SCRATCH/npm/package"
	# A plain run without node_modules: the environment, not the code.
	verify
	[ "$verdict" = ERROR ]
	[ "$(jq -r '.steps[0].reason' <<<"$record")" = 'not installed' ]
	grep -q -- '--isolated' "$SCRATCH/verify.err"
	[ "$(forge-state get .forge/breaker streak 0)" = 0 ]
	(cd "$HAND" && npm ci -q) >>"$SCRATCH/by-hand.log" 2>&1
	check_case "printf 'module.exports = function () { return []; };\\n' >>index.js" 'npm test'
	[ "$(jq -r '.steps | length' <<<"$record")" = 1 ]
}

@test "CMake tree from Debian (googletest): cmake build, ctest; its tests are off by default, so no PASS" {
	need cmake
	deb_source googletest usr/src/googletest
	project "$SRC"
	expected=$'cmake -S . -B .forge-build && cmake --build .forge-build\ncd .forge-build && ctest --output-on-failure --no-tests=error'
	# gtest_build_tests is OFF unless asked for: nothing is registered, and
	# a verdict of PASS would have tested nothing.
	verify --isolated
	[ "$runs" = "$expected" ]
	[ "$verdict" = ERROR ]
	[ "$(jq -r '.steps[-1].reason' <<<"$record")" = 'no tests' ]
	# By hand: ctest after configuring says so too (a build adds no test).
	by_hand 'cmake -S . -B build' 'cd build && ctest'
	grep -q 'No tests were found' "$SCRATCH/by-hand.log"
	verify --isolated --warm
	[ "$runs" = "$expected" ]
	[ "$verdict" = ERROR ]
	# A break of the library is seen by the build.
	sed -i -e '1i #error forge-break' -- "$REPO/googletest/src/gtest.cc" "$HAND/googletest/src/gtest.cc"
	verify --isolated
	[ "$verdict" = FAIL ]
	[ "$(jq -r '.steps[0].name, .steps[0].reason' <<<"$record")" = $'build\nexit' ]
	[ "$(by_hand 'cmake -S . -B build2 && cmake --build build2')" = FAIL ]
}

# --- shapes no package ships: fixtures -------------------------------------

@test "fixture, zlib's shape: a stub Makefile beside a hand configure: ./configure && make, then make test" {
	need cc
	# Like zlib: the committed Makefile only says "Please use ./configure
	# first." and exits 0; configure (hand-written, no configure.ac) writes
	# the real Makefile from Makefile.in.
	mkdir -p "$SCRATCH/src"
	cd "$SCRATCH/src"
	printf 'all:\n\t-@echo "Please use ./configure first.  Thank you."\n' >Makefile
	printf 'int adler(int a) { return a + 1; }\n' >adler.c
	printf 'int adler(int a);\nint main(void) { return adler(1) == 2 ? 0 : 1; }\n' >example.c
	printf 'all: example\nexample: example.c adler.c\n\t$(CC) -o example example.c adler.c\ntest: all\n\t./example\n\t@echo "*** zlib test OK ***"\n' >Makefile.in
	printf '#!/bin/sh\n# hand-written, as zlib'"'"'s\ncp Makefile.in Makefile\n' >configure
	chmod +x configure
	project "$SCRATCH/src"
	check_case "sed -i 's/return a + 1;/return a;/' adler.c" './configure && make' 'make test'
}

@test "fixture, cJSON's shape: a Makefile whose test: runs one demo, beside CMake-registered tests: ctest runs" {
	need cmake
	# Like cJSON: the Makefile's test: builds and runs a demo program of its
	# own; CMakeLists.txt registers the unit tests with add_test.
	mkdir -p "$SCRATCH/src/tests"
	cd "$SCRATCH/src"
	printf 'int json_parse(const char *s) { return s[0] == 0x7b; }\n' >cjson.c
	printf 'int main(void) { return 0; }\n' >demo.c
	printf 'test: demo\n\t./demo\ndemo: demo.c\n\t$(CC) -o demo demo.c\n' >Makefile
	printf 'int json_parse(const char *s);\nint main(void) { return json_parse("{}") ? 0 : 1; }\n' >tests/parse_object.c
	cat >CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.13)
project(cjson_shape C)
add_library(cjson cjson.c)
option(ENABLE_CJSON_TEST "Enable building cJSON test" ON)
if(ENABLE_CJSON_TEST)
  enable_testing()
  add_subdirectory(tests)
endif()
CMAKE
	printf 'add_executable(parse_object parse_object.c)\ntarget_link_libraries(parse_object cjson)\nadd_test(NAME parse_object COMMAND parse_object)\n' >tests/CMakeLists.txt
	project "$SCRATCH/src"
	check_case "sed -i 's/0x7b/0x7d/' cjson.c" \
		'cmake -S . -B .forge-build && cmake --build .forge-build' \
		'cd .forge-build && ctest --output-on-failure --no-tests=error'
	# The Makefile's test: alone would have passed the broken code.
	run make -C "$HAND" test
	assert_success
}

@test "fixture, a src-layout Python package (pypa/sampleproject): pytest with src importable" {
	need pytest
	# Like pypa/sampleproject: the package under src/, tests/ importing it,
	# pyproject.toml, nothing installed.
	mkdir -p "$SCRATCH/src/src/sample" "$SCRATCH/src/tests"
	cd "$SCRATCH/src"
	printf '[project]\nname = "sample"\nversion = "1.0.0"\n' >pyproject.toml
	printf 'def add_one(number):\n    return number + 1\n' >src/sample/simple.py
	: >src/sample/__init__.py
	printf 'from sample.simple import add_one\n\n\ndef test_add_one():\n    assert add_one(5) == 6\n' >tests/test_simple.py
	printf '__pycache__/\n.pytest_cache/\n' >.gitignore
	project "$SCRATCH/src"
	# shellcheck disable=SC2016 # the run text, unexpanded
	check_case "sed -i 's/number + 1/number + 2/' src/sample/simple.py" \
		'PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" pytest'
	# By hand without that PYTHONPATH, the package is not importable: what
	# forge says when a step runs that way.
	verify -- pytest
	[ "$verdict" = ERROR ]
	[ "$(jq -r '.steps[0].reason' <<<"$record")" = 'not importable' ]
}

@test "fixture, a lowercase makefile whose default is help (Python-Markdown): make test, never help or install" {
	need python3
	# Like Python-Markdown: makefile (lowercase) whose first target is help,
	# with install and test targets, beside a Python project (tox.ini).
	mkdir -p "$SCRATCH/src/markdown" "$SCRATCH/src/tests"
	cd "$SCRATCH/src"
	printf '.PHONY: help install test\nhelp:\n\t@echo "Usage: make <target>"\n\t@touch help-ran\ninstall:\n\t@touch install-ran\ntest:\n\tpython3 -m unittest discover tests\n' >makefile
	printf '[tox]\nenvlist = py3\n' >tox.ini
	printf 'def to_html(s):\n    return "<p>" + s + "</p>"\n' >markdown/__init__.py
	printf 'import unittest\nimport markdown\n\n\nclass T(unittest.TestCase):\n    def test_p(self):\n        self.assertEqual(markdown.to_html("a"), "<p>a</p>")\n' >tests/test_p.py
	printf '__pycache__/\n' >.gitignore
	project "$SCRATCH/src"
	check_case "sed -i 's/<p>/<div>/' markdown/__init__.py" 'make test'
	# Plain runs too: the default target and install never ran.
	verify
	[ "$verdict" = FAIL ]
	[ ! -e help-ran ]
	[ ! -e install-ran ]
}
