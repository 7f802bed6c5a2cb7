# forge-detect.sh — which steps a project's files call for (SPEC 3.1, the
# table in forge-verify(1)): configured steps, else the first detected rule
# that runs tests; and what a copy of it needs set up (forge_isolated_detect).
# Detection sees only the files a copy would contain.
# Part of forge.sh; source that, not this file.
# shellcheck shell=dash # POSIX sh plus local (README, hacking notes)
# shellcheck source=forge-vars.sh
[ -n "${forge_vars_loaded-}" ] || . "${FORGE_LIBDIR:?}/forge-vars.sh"

# forge_makefile_has_target FILE TARGET: true when FILE defines TARGET as a
# rule target (also among several targets, or as a double-colon rule), not
# as a variable (TARGET := ...).
forge_makefile_has_target() {
	[ -f "$1" ] || return 1
	grep -Eq "^([^:#=[:space:]]+[[:space:]]+)*$2([[:space:]]+[^:#=[:space:]]+)*[[:space:]]*::?([^=]|\$)" "$1"
}

# forge_makefile_test_target FILE: sets forge_make_target to test when FILE
# has a test: target, else to check when it has check:, else to nothing.
forge_makefile_test_target() {
	forge_make_target=
	if forge_makefile_has_target "$1" test; then
		forge_make_target='test'
	elif forge_makefile_has_target "$1" check; then
		forge_make_target='check'
	fi
}

# forge_detect_list ROOT: sets forge_detect_files to the paths a copy of ROOT
# would contain (tracked, and untracked but not ignored), one a line; a name
# holding a newline has it turned into \001, so it can never pass for
# another. Outside a git repository: the regular files at ROOT itself.
forge_detect_list() {
	if forge_git -C "$1" rev-parse --git-dir >/dev/null 2>&1; then
		forge_detect_files=$(forge_git -C "$1" ls-files -z --cached --others --exclude-standard 2>/dev/null |
			tr '\n\000' '\001\n') || forge_die 70 "cannot list the files of $1"
	else
		forge_detect_files=$(cd -- "$1" && for f in * .[!.]*; do [ ! -f "$f" ] || printf '%s\n' "$f"; done)
	fi
}

# forge_detect_has ROOT PATH: true when a copy would contain PATH (a path
# relative to ROOT, listed by forge_detect_list) as a regular file.
forge_detect_has() {
	case "
$forge_detect_files
" in *"
$2
"*) [ -f "$1/$2" ] ;; *) return 1 ;; esac
}

# forge_detect_grep ROOT NAME_ERE CONTENT_ERE: true when a file a copy would
# contain whose path matches NAME_ERE holds a line matching CONTENT_ERE
# (case-insensitive: CMake's commands are).
forge_detect_grep() {
	local path
	printf '%s\n' "$forge_detect_files" | grep -E -e "$2" | {
		while IFS= read -r path; do
			[ -f "$1/$path" ] || continue
			! grep -Eiq -e "$3" -- "$1/$path" || exit 0
		done
		exit 1
	}
}

# forge_detect_build_dir ROOT: adds /.forge-build/ (where detected CMake and
# Meson steps build) to the exclude file of ROOT's repository, as /.forge/
# is: never committed, never copied, and not a file detection sees.
forge_detect_build_dir() {
	forge_git -C "$1" rev-parse --git-dir >/dev/null 2>&1 || return 0
	forge_exclude_add "$1" /.forge-build/ || forge_die 73 "cannot add /.forge-build/ to the exclude file of $1"
}

# forge_steps_detect ROOT: sets forge_steps to a JSON array of the steps
# detected from the files a copy of ROOT would contain (forge_detect_list),
# the first rule that runs tests winning (SPEC 3.1, the table in
# forge-verify(1)); forge_steps_tested to true, or false when only a build
# was found; forge_steps_pick to the 0-based index of a step whose make
# target is chosen only once the earlier steps generated the Makefile
# (forge_step_pick), or to nothing; forge_detect_looked to what was looked
# at. Returns 1 when nothing that runs tests was found, with forge_steps the
# first build found (or empty).
forge_steps_detect() {
	local build cmake meson makefile npm pytest src f
	forge_steps='' forge_steps_tested=false forge_steps_pick='' build=''
	forge_detect_looked=''
	forge_detect_list "$1"
	# The makefile make reads, in make's own order.
	makefile=''
	for f in GNUmakefile makefile Makefile; do
		forge_detect_has "$1" "$f" || continue
		makefile=$f
		break
	done
	forge_make_target=''
	[ -z "$makefile" ] || forge_makefile_test_target "$1/$makefile"

	# A hand-written configure is the entry point: a Makefile beside it is a
	# stub ("Please use ./configure first") or needs what it generates.
	if [ -x "$1/configure" ] && forge_detect_has "$1" configure && ! forge_detect_has "$1" configure.ac; then
		forge_steps='[{"name":"build","run":"./configure && make"},{"name":"test","run":"make test"}]'
		forge_steps_tested=true forge_steps_pick=1
		return 0
	fi
	forge_detect_looked="./configure"

	# A build system that registers tests wins over a hand makefile: its
	# tests are the ones the project's CI runs (forge-verify(1)).
	cmake=''
	if forge_detect_has "$1" CMakeLists.txt; then
		cmake='{"name":"build","run":"cmake -S . -B .forge-build && cmake --build .forge-build"}'
		if forge_detect_grep "$1" '(^|/)(CMakeLists\.txt|[^/]*\.cmake)$' \
			'^[[:space:]]*(enable_testing|add_test|include[[:space:]]*\([[:space:]]*CTest[[:space:]]*\)|(gtest|catch|doctest)_discover_tests)'; then
			forge_detect_build_dir "$1"
			forge_steps="[$cmake,"'{"name":"test","run":"cd .forge-build && ctest --output-on-failure --no-tests=error"}]'
			forge_steps_tested=true
			return 0
		fi
	fi
	forge_detect_looked="$forge_detect_looked, CMakeLists.txt (enable_testing, include(CTest), add_test)"
	meson=''
	if forge_detect_has "$1" meson.build; then
		meson='{"name":"build","run":"{ test -f .forge-build/build.ninja || meson setup .forge-build; } && meson compile -C .forge-build"}'
		if forge_detect_grep "$1" '(^|/)meson\.build$' '(^|[^A-Za-z0-9_.])test[[:space:]]*\('; then
			forge_detect_build_dir "$1"
			forge_steps="[$meson,"'{"name":"test","run":"meson test -C .forge-build --print-errorlogs"}]'
			forge_steps_tested=true
			return 0
		fi
	fi
	forge_detect_looked="$forge_detect_looked, meson.build (test())"

	if [ -n "$forge_make_target" ]; then
		forge_steps="[{\"name\":\"test\",\"run\":\"make $forge_make_target\"}]"
		forge_steps_tested=true
		return 0
	fi
	forge_detect_looked="$forge_detect_looked, GNUmakefile/makefile/Makefile (test:, check:)"

	if forge_detect_has "$1" package.json; then
		# The separate build goes when the test script, or pretest, runs it.
		npm=$(jq -r '
			if type != "object" then error("expected a JSON object") else . end
			| (.scripts // {}) as $s
			| if ($s | type) != "object" then error("scripts: expected a JSON object") else . end
			| def runs_build: type == "string"
			    and test("(^|[^A-Za-z0-9_-])((npm|pnpm)[[:space:]]+(run|run-script)|yarn([[:space:]]+run)?)[[:space:]]+build($|[^A-Za-z0-9_:-])");
			  (($s.test | type) == "string" and ($s.test | test("no test specified") | not)) as $tests
			| (($s.build | type) == "string") as $build
			| [ (if $build and ($tests | not) then "B" else empty end),
			    (if $build and $tests and ((($s.test | runs_build) or ($s.pretest | runs_build)) | not) then "b" else empty end),
			    (if $tests then "t" else empty end) ] | join("")
			' -- "$1/package.json" 2>&1) ||
			forge_die 65 "$1/package.json: cannot detect steps: $npm"
		case $npm in
		bt) forge_steps='[{"name":"build","run":"npm run build"},{"name":"test","run":"npm test"}]' ;;
		t) forge_steps='[{"name":"test","run":"npm test"}]' ;;
		B) build=${build:-'{"name":"build","run":"npm run build"}'} ;;
		esac
		if [ -n "$forge_steps" ]; then
			forge_steps_tested=true
			return 0
		fi
	fi
	forge_detect_looked="$forge_detect_looked, package.json (scripts.test)"
	if forge_detect_has "$1" Cargo.toml; then
		forge_steps='[{"name":"build","run":"cargo build"},{"name":"test","run":"cargo test"}]'
	elif forge_detect_has "$1" go.mod; then
		forge_steps='[{"name":"build","run":"go build ./..."},{"name":"test","run":"go test ./..."}]'
	elif forge_detect_has "$1" pyproject.toml || forge_detect_has "$1" setup.py || forge_detect_has "$1" setup.cfg ||
		forge_detect_has "$1" pytest.ini || forge_detect_has "$1" tox.ini; then
		# `pytest` runs in the environment it was installed for (a venv,
		# pyenv, pipx), which `python3` need not be.
		pytest=pytest
		command -v pytest >/dev/null 2>&1 || pytest='python3 -m pytest'
		# A src layout is importable from the tree only through PYTHONPATH
		# (what pytest's own pythonpath = src does): the run text sets it,
		# expanded by the step's shell when the step runs, so that it names
		# no absolute path.
		src=false
		if printf '%s\n' "$forge_detect_files" | grep -Eq '^src/[^/]+/__init__\.py$'; then
			src=true
		fi
		forge_steps=$(jq -cn --arg r "$pytest" --argjson src "$src" '
			[{name: "test", run: ((if $src then "PYTHONPATH=\"$PWD/src${PYTHONPATH:+:$PYTHONPATH}\" " else "" end) + $r)}]') ||
			forge_die 70 "jq failed while writing the steps"
	elif forge_detect_has "$1" configure.ac; then
		forge_steps='[{"name":"build","run":"autoreconf -fi && ./configure && make"},{"name":"test","run":"make check"}]'
		forge_steps_pick=1
	fi
	if [ -n "$forge_steps" ]; then
		forge_steps_tested=true
		return 0
	fi
	forge_detect_looked="$forge_detect_looked, Cargo.toml, go.mod, pyproject.toml/setup.py/setup.cfg/pytest.ini/tox.ini, configure.ac"
	# Nothing runs tests: the first build found, for verify.buildOnly.
	if [ -n "$cmake" ]; then
		forge_detect_build_dir "$1"
		forge_steps="[$cmake]"
	elif [ -n "$meson" ]; then
		forge_detect_build_dir "$1"
		forge_steps="[$meson]"
	elif [ -n "$build" ]; then
		forge_steps="[$build]"
	fi
	forge_steps_tested=false
	return 1
}

# forge_isolated_detect ROOT: sets forge_detect_setup, forge_detect_keep and
# forge_detect_key (JSON arrays) to what the project type at ROOT needs in a
# copy: npm installs its dependencies (npm ci from a lockfile) into a kept
# node_modules, keyed on the lockfile (or on package.json and .npmrc without
# one); cargo keeps target/. Like step detection (forge_steps_detect), it
# sees only the files a copy would contain.
forge_isolated_detect() {
	forge_detect_setup='[]' forge_detect_keep='[]' forge_detect_key='[]'
	# The same as newline-separated lists, for forge_isolated_settings.
	forge_detect_keep_list='' forge_detect_key_list=''
	# Only these names decide, so only they are looked for (plain names:
	# git's listing needs no -z), in the repository --isolated requires.
	forge_detect_files=$(forge_git -C "$1" ls-files --cached --others --exclude-standard -- \
		package.json package-lock.json npm-shrinkwrap.json Cargo.toml) ||
		forge_die 70 "cannot list the files of $1"
	if forge_detect_has "$1" package.json; then
		forge_detect_keep='["node_modules"]' forge_detect_keep_list=node_modules
		if forge_detect_has "$1" package-lock.json; then
			forge_detect_setup='[{"name":"setup","run":"npm ci"}]'
			forge_detect_key='["package-lock.json"]' forge_detect_key_list=package-lock.json
		elif forge_detect_has "$1" npm-shrinkwrap.json; then
			forge_detect_setup='[{"name":"setup","run":"npm ci"}]'
			forge_detect_key='["npm-shrinkwrap.json"]' forge_detect_key_list=npm-shrinkwrap.json
		else
			forge_detect_setup='[{"name":"setup","run":"npm install"}]'
			forge_detect_key='["package.json",".npmrc"]' forge_detect_key_list='package.json
.npmrc'
		fi
	elif forge_detect_has "$1" Cargo.toml; then
		forge_detect_keep='["target"]' forge_detect_keep_list=target
	fi
}

# forge_steps_select ROOT: sets forge_steps from verify.steps in the merged
# configuration (forge_steps_tested null), else from detection. When
# detection finds nothing that runs tests: the build it found alone with
# verify.buildOnly true (forge_steps_tested false), else exit 64 naming what
# was looked at.
forge_steps_select() {
	forge_steps_tested=null forge_steps_pick='' forge_steps=
	# Without a configuration file there are no configured steps: no jq.
	if [ "${forge_config_files:-1}" != 0 ]; then
		forge_steps=$(forge_config_get verify.steps)
	fi
	# (An empty list was refused when the configuration was read.)
	[ -z "$forge_steps" ] || return 0
	forge_steps_detect "$1" && return 0
	if [ -n "$forge_steps" ] && [ "$(forge_config_get verify.buildOnly)" = true ]; then
		forge_steps_tested=false
		return 0
	fi
	if [ -n "$forge_steps" ]; then
		forge_die 64 "no tests found: only a build ($(printf '%s' "$forge_steps" | jq -r '.[0].run')); looked at $forge_detect_looked. Set verify.buildOnly: true to accept a build alone, add verify.steps to forge.json or pass -- COMMAND"
	fi
	forge_die 64 "no tests found: looked at $forge_detect_looked. Add verify.steps to forge.json or pass -- COMMAND"
}

# forge_step_pick INDEX DIR: for the detected step INDEX (0-based) whose
# make target depends on a Makefile an earlier step generated
# (forge_steps_pick), sets forge_step_run to `make test` or `make check`
# from the makefile now in DIR. When it has neither: returns 1 (skip the
# step) with verify.buildOnly true, setting forge_steps_tested false; else
# exits 64.
forge_step_pick() {
	local f
	[ -n "${forge_steps_pick:-}" ] && [ "$1" = "$forge_steps_pick" ] || return 0
	forge_make_target=''
	for f in GNUmakefile makefile Makefile; do
		[ -f "$2/$f" ] || continue
		forge_makefile_test_target "$2/$f"
		break
	done
	if [ -n "$forge_make_target" ]; then
		forge_step_run="make $forge_make_target"
		return 0
	fi
	if [ "$(forge_config_get verify.buildOnly)" = true ]; then
		forge_steps_tested=false
		return 1
	fi
	forge_die 64 "no tests found: the makefile the build generated has no test: or check: target. Set verify.buildOnly: true to accept a build alone, add verify.steps to forge.json or pass -- COMMAND"
}
