#!/usr/bin/env bats
# forge-verify's detection of the steps and its telling of a broken
# environment from failing code (SPEC 3.1): a PASS means the project's own
# tests ran; a missing tool, a runner that refused to start, a package that
# cannot be imported or npm dependencies never installed are ERRORs that
# leave the streak alone.
load test_helper

setup() {
	repo_setup
	# Under `make check` the fixtures' makes would inherit its variables.
	unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
}
teardown() { forge_test_teardown; }

commit_all() { git add -A && git commit -q -m fixture; }

# detect: prints the steps detection picks at the current folder.
detect() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	sh -c '. "$FORGE_LIBDIR/forge.sh" && forge_steps_detect . ; printf "%s\n" "$forge_steps" | jq -r ".[].run"'
}

# zlib_shape: a committed Makefile that only asks for ./configure, and a
# hand-written configure (no configure.ac) that writes the real Makefile,
# whose test target runs ./check.sh.
zlib_shape() {
	printf 'all:\n\t-@echo "Please use ./configure first.  Thank you."\n' >Makefile
	printf '#!/bin/sh\nprintf "all:\\n\\t@echo built >built\\ntest: all\\n\\t@./check.sh\\n" >Makefile\n' >configure
	printf '#!/bin/sh\nexit 0\n' >check.sh
	chmod +x configure check.sh
	commit_all
}

@test "detect: a stub Makefile beside a hand-written configure (zlib): ./configure && make, then make test" {
	zlib_shape
	run forge-verify
	assert_success
	run step_runs
	assert_output $'./configure && make\nmake test'
	[ -f built ]
	# A broken test is seen: the stub's `make` would have passed.
	printf '#!/bin/sh\nexit 1\n' >check.sh
	run forge-verify
	assert_failure 1
	[ "$(last_record | jq -r '.verdict, .steps[1].run')" = $'FAIL\nmake test' ]
}

@test "detect: the generated makefile's target is chosen after the build ran (check: when it has no test:)" {
	printf '#!/bin/sh\nprintf "all:\\n\\t@true\\ncheck:\\n\\t@echo ok >checked\\n" >Makefile\n' >configure
	chmod +x configure
	commit_all
	run forge-verify
	assert_success
	[ -f checked ]
	run step_runs
	assert_output $'./configure && make\nmake check'
}

@test "detect: a generated makefile without test: or check: is no PASS: 64 no tests found; PASS with verify.buildOnly" {
	printf '#!/bin/sh\nprintf "all:\\n\\t@true\\n" >Makefile\n' >configure
	chmod +x configure
	commit_all
	run forge-verify
	assert_failure 64
	assert_output --partial 'no tests found'
	[ "$(last_record | jq -r .verdict)" = ERROR ]
	echo '{"verify": {"buildOnly": true}}' >forge.json
	run forge-verify
	assert_success
	run step_runs
	assert_output './configure && make'
}

# cjson_shape: a Makefile whose test: runs one program of its own, beside a
# CMakeLists.txt that registers the real unit test with add_test.
cjson_shape() {
	printf 'int lib_answer(void) { return 42; }\n' >lib.c
	printf 'int lib_answer(void);\nint main(void) { return lib_answer() == 42 ? 0 : 1; }\n' >unit.c
	printf 'int main(void) { return 0; }\n' >demo.c
	printf 'test:\n\t@cc -o demo demo.c && ./demo && echo demo-ran >demo.log\n' >Makefile
	cat >CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(shape C)
enable_testing()
add_executable(unit unit.c lib.c)
add_test(NAME unit COMMAND unit)
EOF
	commit_all
}

@test "detect: a thin Makefile test: beside CMake-registered tests (cJSON): cmake build in .forge-build, then ctest" {
	command -v cmake >/dev/null || fail "cmake is required (build-aux/install-deps installs it)"
	cjson_shape
	run forge-verify
	assert_success
	run step_runs
	assert_output $'cmake -S . -B .forge-build && cmake --build .forge-build\ncd .forge-build && ctest --output-on-failure --no-tests=error'
	[ ! -e demo.log ]
	[ -d .forge-build ]
	# The build folder is excluded as .forge/ is: git status stays clean.
	grep -qxF /.forge-build/ "$(git rev-parse --git-common-dir)/info/exclude"
	run git status --porcelain
	assert_output ''
	# The unit test CMake registers is what a break makes fail.
	sed -i 's/return 42/return 41/' lib.c
	run forge-verify
	assert_failure 1
	[ "$(last_record | jq -r '.steps[-1].run, .steps[-1].reason')" = $'cd .forge-build && ctest --output-on-failure --no-tests=error\nexit' ]
}

@test "detect: CMake tests registered only under an option that is off: ERROR no tests, never PASS" {
	command -v cmake >/dev/null || fail "cmake is required (build-aux/install-deps installs it)"
	printf 'int main(void) { return 0; }\n' >main.c
	cat >CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(opt C)
enable_testing()
option(BUILD_MY_TESTS "tests" OFF)
add_executable(main main.c)
if(BUILD_MY_TESTS)
  add_test(NAME main COMMAND main)
endif()
EOF
	commit_all
	forge-verify -- false || :
	run --separate-stderr forge-verify
	assert_failure 69
	[ "$(last_record | jq -r '.verdict, .steps[-1].reason')" = $'ERROR\nno tests' ]
	[[ $stderr == *'ctest found no registered tests'* ]]
	[ "$(streak)" = 1 ]
}

@test "detect: CMakeLists.txt that registers no tests: 64 no tests found naming what was looked at; buildOnly builds" {
	command -v cmake >/dev/null || fail "cmake is required (build-aux/install-deps installs it)"
	printf 'int main(void) { return 0; }\n' >main.c
	printf 'cmake_minimum_required(VERSION 3.13)\nproject(b C)\nadd_executable(main main.c)\n' >CMakeLists.txt
	commit_all
	run forge-verify
	assert_failure 64
	assert_output --partial 'no tests found: only a build (cmake -S . -B .forge-build && cmake --build .forge-build)'
	assert_output --partial 'CMakeLists.txt (enable_testing, include(CTest), add_test)'
	assert_output --partial 'verify.buildOnly'
	echo '{"verify": {"buildOnly": true}}' >forge.json
	run forge-verify
	assert_success
	run step_runs
	assert_output 'cmake -S . -B .forge-build && cmake --build .forge-build'
}

@test "detect: meson.build with test(): meson setup, compile, test in .forge-build" {
	command -v meson >/dev/null || fail "meson is required (build-aux/install-deps installs it)"
	printf 'int main(void) { return 0; }\n' >main.c
	printf "project('m', 'c')\nexe = executable('main', 'main.c')\ntest('main', exe)\n" >meson.build
	commit_all
	run forge-verify
	assert_success
	run step_runs
	assert_output $'{ test -f .forge-build/build.ninja || meson setup .forge-build; } && meson compile -C .forge-build\nmeson test -C .forge-build --print-errorlogs'
	# A second run reuses the configured folder.
	printf 'int main(void) { return 3; }\n' >main.c
	run forge-verify
	assert_failure 1
}

@test "detect: a makefile with neither test: nor check: and nothing else: 64 no tests found, never make" {
	printf 'all:\n\t@echo ran >ran\n' >GNUmakefile
	commit_all
	run forge-verify
	assert_failure 64
	assert_output --partial 'no tests found: looked at'
	assert_output --partial 'GNUmakefile/makefile/Makefile (test:, check:)'
	[ ! -e ran ]
	[ "$(last_record | jq -r .verdict)" = ERROR ]
}

@test "detect: a lowercase makefile whose default is help (Python-Markdown): make test, never the default" {
	printf '.PHONY: help test\nhelp:\n\t@echo usage >help-ran\ntest:\n\t@echo ok >test-ran\n' >makefile
	touch pyproject.toml
	commit_all
	run forge-verify
	assert_success
	run step_runs
	assert_output 'make test'
	[ -f test-ran ]
	[ ! -e help-ran ]
}

@test "detect: only files a copy would contain count: an ignored generated Makefile changes nothing (libyaml)" {
	printf '#!/bin/sh\nprintf "all:\\n\\t@true\\ncheck:\\n\\t@true\\n" >Makefile\n' >configure
	chmod +x configure
	touch configure.ac
	printf 'Makefile\nconfigure\n' >.gitignore
	git add .gitignore configure.ac
	git commit -q -m autotools
	mkdir -p "$SCRATCH/bin"
	printf '#!/bin/sh\nexit 0\n' >"$SCRATCH/bin/autoreconf"
	chmod +x "$SCRATCH/bin/autoreconf"
	PATH=$SCRATCH/bin:$PATH
	run forge-verify
	assert_success
	first=$(step_runs)
	[ "$first" = $'autoreconf -fi && ./configure && make\nmake check' ]
	# The in-tree build left an ignored Makefile with check: behind.
	[ -f Makefile ]
	run forge-verify
	assert_success
	[ "$(step_runs)" = "$first" ]
	# A file on disk that is neither tracked nor a copy's does not count
	# either: an ignored CMakeLists.txt.
	echo 'CMakeLists.txt' >>.git/info/exclude
	printf 'enable_testing()\n' >CMakeLists.txt
	run detect
	assert_output "$first"
}

@test "detect: a plain and an --isolated run of one commit pick the same steps, same run text" {
	# An in-tree configure left an ignored Makefile with test: behind.
	mkdir -p "$SCRATCH/bin"
	printf '#!/bin/sh\ncp configure.in-tree configure && chmod +x configure\n' >"$SCRATCH/bin/autoreconf"
	chmod +x "$SCRATCH/bin/autoreconf"
	PATH=$SCRATCH/bin:$PATH
	printf '#!/bin/sh\nprintf "all:\\n\\t@true\\ntest:\\n\\t@true\\n" >Makefile\n' >configure.in-tree
	touch configure.ac
	printf 'Makefile\nconfigure\n' >.gitignore
	commit_all
	cp configure.in-tree configure
	chmod +x configure
	./configure
	printf 'x\n' >untracked-file
	run forge-verify --isolated --json
	assert_success
	isolated=$(printf '%s\n' "$output" | tail -n 1 | jq -c '[.steps[] | {name, run}]')
	run forge-verify --json
	assert_success
	plain=$(printf '%s\n' "$output" | tail -n 1 | jq -c '[.steps[] | {name, run}]')
	[ "$plain" = "$isolated" ]
	[ "$plain" = '[{"name":"build","run":"autoreconf -fi && ./configure && make"},{"name":"test","run":"make test"}]' ]
}

@test "detect: a deleted tracked file does not count" {
	printf 'test:\n\t@false\n' >Makefile
	commit_all
	rm Makefile
	run forge-verify
	assert_failure 64
}

@test "detect: npm's build goes when the test script or pretest runs it (dotenv)" {
	echo '{"scripts": {"build": "tsc", "test": "npm run build && node t.js"}}' >package.json
	run detect
	assert_output 'npm test'
	echo '{"scripts": {"build": "tsc", "pretest": "yarn build", "test": "node t.js"}}' >package.json
	run detect
	assert_output 'npm test'
	echo '{"scripts": {"build": "tsc", "test": "node t.js", "prebuildx": "npm run build"}}' >package.json
	run detect
	assert_output $'npm run build\nnpm test'
	echo '{"scripts": {"build": "tsc", "test": "npm run build:types && node t.js"}}' >package.json
	run detect
	assert_output $'npm run build\nnpm test'
}

@test "detect: npm init's placeholder test script is no test" {
	echo '{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}' >package.json
	commit_all
	run forge-verify
	assert_failure 64
	assert_output --partial 'no tests found'
}

@test "detect: a src layout runs pytest with src on PYTHONPATH, expanded by the step (no absolute path)" {
	command -v pytest >/dev/null || fail "pytest is required (build-aux/install-deps installs it)"
	mkdir -p src/srcpkg tests
	printf 'def answer():\n    return 42\n' >src/srcpkg/__init__.py
	printf 'import srcpkg\n\ndef test_answer():\n    assert srcpkg.answer() == 42\n' >tests/test_answer.py
	printf '[project]\nname = "srcpkg"\nversion = "0"\n' >pyproject.toml
	commit_all
	run forge-verify
	assert_success
	# shellcheck disable=SC2016 # the run text, unexpanded
	[ "$(step_runs)" = 'PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" pytest' ]
}

@test "detect: the isolated setup sees the files a copy would contain too: an ignored lockfile is no npm ci" {
	echo '{"scripts": {"test": "node t.js"}}' >package.json
	echo '{}' >package-lock.json
	echo package-lock.json >.gitignore
	commit_all
	# shellcheck disable=SC2016 # expanded by the inner shell
	run sh -c '. "$FORGE_LIBDIR/forge.sh" && forge_isolated_detect . && printf "%s\n" "$forge_detect_setup"'
	assert_success
	assert_output '[{"name":"setup","run":"npm install"}]'
}

# --- environment versus code -------------------------------------------------

@test "env: a command not found under make (its Error 127, exit 2) is an ERROR not found naming it, exit 69" {
	printf 'test:\n\tno-such-tool-forge --all\n' >Makefile
	commit_all
	run --separate-stderr forge-verify
	assert_failure 69
	assert_output 'Verdict: ERROR'
	[[ $stderr == *"step 'test' (make test): not found (exit 2): make ran a command that was not found: 'no-such-tool-forge' is not installed or not on PATH"* ]]
	[ "$(last_record | jq -r '.steps[0].reason')" = 'not found' ]
}

@test "env: a command not found in a recipe's shell under make, and inside sh -c, names the command" {
	printf 'test:\n\t@true && no-such-tool-forge2 x\n' >Makefile
	commit_all
	run --separate-stderr forge-verify
	assert_failure 69
	[[ $stderr == *"'no-such-tool-forge2' is not installed or not on PATH"* ]]
	run --separate-stderr forge-verify -- sh -c 'true; no-such-tool-forge3'
	assert_failure 69
	[[ $stderr == *"'no-such-tool-forge3' is not installed or not on PATH"* ]]
}

@test "env: an npm script whose tool is missing (sh: 1: x: not found, 127) is ERROR not found naming it" {
	command -v npm >/dev/null || fail "npm is required (build-aux/install-deps installs it)"
	echo '{"name": "t", "version": "1.0.0", "scripts": {"test": "no-such-tool-forge4 --run"}}' >package.json
	commit_all
	run --separate-stderr forge-verify
	assert_failure 69
	[[ $stderr == *"not found (exit 127): 'no-such-tool-forge4' is not installed or not on PATH"* ]]
}

@test "env: a plain run of an npm project without node_modules: ERROR not installed, saying --isolated runs setup" {
	mkdir -p "$SCRATCH/bin"
	# npm stands in: the test script fails as a missing module would.
	printf '#!/bin/sh\necho "Error: Cannot find module tape" >&2\nexit 1\n' >"$SCRATCH/bin/npm"
	chmod +x "$SCRATCH/bin/npm"
	PATH=$SCRATCH/bin:$PATH
	echo '{"scripts": {"test": "tape t.js"}, "devDependencies": {"tape": "^5"}}' >package.json
	commit_all
	run --separate-stderr forge-verify
	assert_failure 69
	[ "$(last_record | jq -r '.steps[0].reason')" = 'not installed' ]
	[[ $stderr == *'dependencies are not installed'*'--isolated'* ]]
	# With node_modules there, the same failure is the code's.
	mkdir node_modules
	run forge-verify
	assert_failure 1
}

@test "env: pytest's exit codes 2-5 are ERRORs with a hint; 1 is a FAIL" {
	mkdir -p "$SCRATCH/bin"
	for code in 2 3 4 5 1; do
		printf '#!/bin/sh\nexit %s\n' "$code" >"$SCRATCH/bin/pytest"
		chmod +x "$SCRATCH/bin/pytest"
		PATH=$SCRATCH/bin:$PATH run --separate-stderr forge-verify -- pytest -q
		case $code in
		1) assert_failure 1 ;;
		*) assert_failure 69 ;;
		esac
		case $code in
		5) [[ $stderr == *'pytest collected no tests (exit 5)'* ]] ;;
		4) [[ $stderr == *'pytest refused its command line or configuration'* ]] ;;
		esac
	done
	[ "$(grep -c '"verdict":"ERROR"' .forge/timeline.jsonl)" = 4 ]
	[ "$(streak)" = 1 ]
}

@test "env: an import error of the project's own package is an ERROR not importable with a hint" {
	command -v python3 >/dev/null || fail "python3 is required"
	mkdir -p mypkg
	touch mypkg/__init__.py
	printf 'raise ModuleNotFoundError("No module named %s")\n' "'mypkg'" >t.py
	run --separate-stderr forge-verify -- python3 t.py
	assert_failure 69
	[ "$(last_record | jq -r '.steps[0].reason')" = 'not importable' ]
	[[ $stderr == *"the project's own package 'mypkg' cannot be imported"* ]]
	# Another package's import error is the code's failure, and so is a
	# missing submodule of the project's own.
	printf 'import no_such_module_forge\n' >t.py
	run forge-verify -- python3 t.py
	assert_failure 1
	printf 'raise ModuleNotFoundError("No module named %s")\n' "'mypkg.sub'" >t.py
	run forge-verify -- python3 t.py
	assert_failure 1
}

@test "record: tested is true for detected tests, false for a build alone (buildOnly), null for -- and config steps" {
	printf 'test:\n\t@true\n' >Makefile
	commit_all
	run --separate-stderr forge-verify --json
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r .tested)" = true ]
	rm Makefile
	printf '#!/bin/sh\nprintf "all:\\n\\t@true\\n" >Makefile\n' >configure
	chmod +x configure
	echo '{"verify": {"buildOnly": true}}' >forge.json
	run --separate-stderr forge-verify --json
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r .tested)" = false ]
	run --separate-stderr forge-verify --json -- true
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r .tested)" = null ]
	echo '{"verify": {"steps": [{"run": "true"}]}}' >forge.json
	run --separate-stderr forge-verify --json
	assert_success
	[ "$(printf '%s\n' "$output" | jq -r .tested)" = null ]
}
