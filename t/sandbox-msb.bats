#!/usr/bin/env bats
# forge-sandbox against the REAL msb: everything that does not need a booted
# guest (these machines cannot boot one). Parser conformance of every plan,
# doctor, ls, rm, prune, secret convergence through msb modify/inspect, and
# up's real ls / images / create calls. Sandbox records are made once for
# the file: a tiny image is loaded, and `msb create` leaves a Stopped record
# when the boot fails (at once: setup_file gives msb an empty libkrunfw).
# Without msb these tests skip (fail with CI=true).
load test_helper
load sandbox_helper

setup_file() {
	load_support
	if [ -z "$REAL_MSB" ] || [ ! -x "$REAL_MSB" ]; then
		[ "${CI:-}" != true ] || fail "the real msb is required in CI: set FORGE_MSB"
		return 0 # each test skips in need_msb (bats 1.8 cannot skip here)
	fi
	FILE_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/forge-msb.XXXXXX")
	FILE_DIR=$(cd "$FILE_DIR" && pwd -P)
	export FILE_DIR FILE_MSB_HOME="$FILE_DIR/msb-home" FILE_STATE_HOME="$FILE_DIR/state"
	# No VM boots here, and msb takes 20-45 s to find out (KVM fails, or the
	# guest hangs in Starting). An empty libkrunfw makes the same boot fail at
	# once, after everything forge's calls reach (parsing, the record, the
	# volumes, the start): the same `failed to start "NAME"`, exit 1 and
	# Stopped record, in a fraction of a second. msb doctor does not read it.
	: >"$FILE_DIR/libkrunfw.so"
	export MSB_LIBKRUNFW_PATH="$FILE_DIR/libkrunfw.so"
	export MSB_HOME=$FILE_MSB_HOME XDG_STATE_HOME=$FILE_STATE_HOME
	export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
	export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid
	: "${abs_top_srcdir:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
	: "${abs_top_builddir:=$abs_top_srcdir}"
	export FORGE_LIBDIR="$abs_top_builddir/lib-sh" FORGE_HELPERDIR="$abs_top_builddir/helpers"
	make_msb_image "$FILE_DIR/image" forge-test:latest >/dev/null
	local r pids=()
	for r in kept gone keepme rmme secrets adopt recreate; do
		make_repo "$FILE_DIR/repos/$r"
		printf '%s\n' "$(expected_name "$FILE_DIR/repos/$r")" >"$FILE_DIR/$r.name"
	done
	echo forge-orphan-0000abcd >"$FILE_DIR/orphan.name"
	echo other-sandbox >"$FILE_DIR/other.name"
	# Records, in parallel: each create fails at boot and leaves it Stopped.
	for r in kept gone keepme rmme secrets adopt recreate orphan other; do
		"$REAL_MSB" create forge-test:latest --name "$(cat "$FILE_DIR/$r.name")" --quiet -m 64M \
			>"$FILE_DIR/$r.create.log" 2>&1 &
		pids+=("$!")
	done
	wait "${pids[@]}" || :
	for r in kept gone keepme rmme secrets adopt recreate; do
		sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_sandbox_register "$1" "$2"' _ \
			"$(cat "$FILE_DIR/$r.name")" "$FILE_DIR/repos/$r"
	done
	# Leftovers of a sandbox already gone, and a record that lies about its name.
	sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_sandbox_name_of "$1"; forge_sandbox_register "$forge_sandbox_name" "$1"
		printf "%s\n" "$forge_sandbox_name"' _ "$FILE_DIR/repos/ghost" >"$FILE_DIR/ghost.name"
	sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_sandbox_register forge-liar-1234abcd /nonexistent/liar'
	for r in gone rmme ghost recreate; do
		for v in docker cache; do
			"$REAL_MSB" volume create "$(cat "$FILE_DIR/$r.name")-$v-data" --kind disk --size 128M --quiet
		done
	done
	rm -rf "$FILE_DIR/repos/gone" "$FILE_DIR/repos/keepme"
}

teardown_file() {
	[ -z "${FILE_DIR:-}" ] || rm -rf "$FILE_DIR"
}

setup() {
	sandbox_setup
	select_msb_backend
	need_msb
}
teardown() { forge_test_teardown; }

name_of() { cat "$FILE_DIR/$1.name"; }
msb_names() { "$REAL_MSB" ls --format json | jq -r '.[].name'; }
msb_volumes() { "$REAL_MSB" volume ls --format json | jq -r '.[].name'; }

# conforms [DIR]: the real msb parses DIR's plan: with an image that is not
# cached and --pull never it fails only because the image is not cached
# (a clap error exits 2, a rule error 1 with another message).
conforms() {
	# The user's file: write_config's $FORGE_CONFIG stays over it.
	printf '{"sandbox": {"backend": "msb", "image": "forge-uncached-conformance:1"}}\n' >"$XDG_CONFIG_HOME/forge/config.json"
	plan_argv "$@"
	MSB_HOME=$SCRATCH/msb-home run "$REAL_MSB" "${plan[@]:1}" --pull never
	assert_failure 1
	assert_output --partial 'image not cached: docker.io/library/forge-uncached-conformance:1'
}

@test "doctor (real msb): the verdict msb doctor gives, with its explanation and the --fix hint" {
	status_msb=0
	msb_out=$("$REAL_MSB" doctor 2>&1) || status_msb=$?
	run --separate-stderr forge-sandbox doctor
	if [ "$status_msb" -eq 0 ]; then
		assert_success
		assert_output --partial available
	else
		assert_failure 69
		[[ $stderr == *'host unsupported: msb cannot run microVMs here'* ]]
		first_error=$(grep -m1 '^error:' <<<"$msb_out")
		[[ $stderr == *"$first_error"* ]]
		[[ $stderr == *'msb doctor --fix'* ]]
	fi
}

@test "up (real msb): a host that cannot run microVMs fails 69 with msb's explanation, before any other msb call" {
	"$REAL_MSB" doctor >/dev/null 2>&1 && skip "this host can run microVMs"
	use_real_wrapper
	run forge-sandbox up
	assert_failure 69
	assert_output --partial 'host unsupported'
	assert_output --partial 'msb doctor --fix'
	run stub_calls
	assert_output doctor
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$(expected_name "$REPO")" ]
}

@test "conformance (real msb parser): the default plan, no network configuration" {
	conforms
}

@test "conformance (real msb parser): allow-list with wildcards, domain= and suffix= forms, mixed case" {
	write_config '{"sandbox": {"network": {"allow": ["registry.npmjs.org", "*.GitHub.com", "domain=localhost", "suffix=example.org", "UPPER.Example.COM"]}}}'
	conforms
	[ "$(plan_values --net-default)" = deny ]
}

@test "conformance (real msb parser): a wildcard, and an all-invalid allow-list" {
	write_config '{"sandbox": {"network": {"allow": ["*", "x.example.com"]}}}'
	conforms
	write_config '{"sandbox": {"network": {"allow": ["example.com:443", "localhost", "*.com", "a,b.com", "http://x.org"]}}}'
	conforms
	[ "$(plan_values --net-default)" = deny ]
}

@test "conformance (real msb parser): env names set and unset (msb resolves -e NAME when parsing)" {
	export FORGE_T_SET=1 FORGE_T_EMPTY=
	unset FORGE_T_UNSET
	write_config '{"sandbox": {"network": {"env": ["FORGE_T_SET", "FORGE_T_EMPTY", "FORGE_T_UNSET", "A=B", ""]}}}'
	conforms
	[ "$(plan_values -e | wc -l)" -eq 2 ]
}

@test "conformance (real msb parser): secrets, set and unset, with several hosts, next to an allow-list" {
	export API_TOKEN=secret-value
	unset UNSET_TOKEN
	write_config '{"sandbox": {"network": {"allow": ["registry.npmjs.org"], "secrets": [
	  {"env": "API_TOKEN", "hosts": ["api.example.com", "Uploads.example.com", "*"]},
	  {"env": "UNSET_TOKEN", "hosts": ["x.example.com"]},
	  {"env": "BAD=", "hosts": ["y.example.com"]}]}}}'
	conforms
	[ "$(plan_values --secret | wc -l)" -eq 2 ]
}

@test "conformance (real msb parser): custom mounts, symlinks, tool output dir, paths with spaces and non-ASCII" {
	mkdir -p "$SCRATCH/data dir/ü" "$SCRATCH/rw" "$SCRATCH/real" "$XDG_DATA_HOME/opencode/tool-output"
	ln -s "$SCRATCH/real" "$SCRATCH/link"
	write_config "{\"sandbox\": {\"mounts\": [{\"host\": \"$SCRATCH/data dir/ü\"}, {\"host\": \"$SCRATCH/rw\", \"readonly\": false}, {\"host\": \"$SCRATCH/link\"}]},
	  \"loop\": {\"allowExternalDirectories\": [\"/usr/share\"]}}"
	conforms
	[ "$(plan_values -v | wc -l)" -eq 9 ]
}

@test "conformance (real msb parser): a linked worktree outside the project, and one inside it" {
	git worktree add -q "$SCRATCH/wt" 2>/dev/null
	conforms "$SCRATCH/wt"
	git worktree add -q .worktrees/inner 2>/dev/null
	conforms "$REPO/.worktrees/inner"
}

@test "conformance (real msb parser): no hooks dir yet (git init --template=), .forge read-only, a scratch dir refused" {
	git init -q --template= "$SCRATCH/bare-hooks"
	git -C "$SCRATCH/bare-hooks" commit -q --allow-empty -m initial
	conforms "$SCRATCH/bare-hooks"
	run plan_values -v
	assert_line "$SCRATCH/bare-hooks/.git/hooks:$SCRATCH/bare-hooks/.git/hooks:ro"
	assert_line "$SCRATCH/bare-hooks/.forge:$SCRATCH/bare-hooks/.forge:ro"
	write_config '{"sandbox": {"scratchDir": "/"}}'
	conforms
}

@test "conformance (real msb parser): every configured entry rejected is --net-default deny with no rules" {
	export TOKEN=x
	for net in '{"allow": [""]}' '{"allow": ["  "]}' '{"secrets": [{"env": "TOKEN", "hosts": ["api.github.com:443", "*", "*.com"]}]}' \
		'{"secrets": [{"env": "1BAD", "hosts": ["api.example.com"]}]}'; do
		write_config "{\"sandbox\": {\"network\": $net}}"
		conforms
		[ "$(plan_values --net-default)" = deny ]
		[ -z "$(plan_values --net-rule)" ]
	done
}

@test "conformance (real msb parser): a hostile repository forge.json leaves the default plan, which msb parses" {
	export GITHUB_TOKEN=x
	mkdir -p "$SCRATCH/ssh"
	conforms
	want=("${plan[@]}")
	write_repo_config '{"sandbox": {"mounts": [{"host": "'"$SCRATCH/ssh"'", "readonly": false}], "network": {"allow": ["*"],
	  "secrets": [{"env": "GITHUB_TOKEN", "hosts": ["evil.example.com"]}]}}, "loop": {"allowExternalDirectories": ["'"$SCRATCH/ssh"'"]}}'
	conforms
	[ "${plan[*]}" = "${want[*]}" ]
}

@test "conformance (real msb parser): sizes and cpus normalised to what msb accepts" {
	for res in '"memory": "1.5g", "cpus": 2.7, "dockerDisk": "1t", "cacheDisk": "512MB"' \
		'"memory": 4096, "cpus": "0.5", "dockerDisk": "1024k", "cacheDisk": "2GiB"' \
		'"memory": "1048576b", "cpus": 64, "dockerDisk": "2.5g", "cacheDisk": "100"'; do
		write_config "{\"sandbox\": {\"resources\": {$res}}}"
		conforms
	done
}

@test "conformance (real msb parser): a worktree whose path has spaces, non-ASCII and a leading dash" {
	make_repo "$SCRATCH/-my repo ü"
	conforms "$SCRATCH/-my repo ü"
	[[ $(plan_values --name) =~ ^forge-my-repo-[0-9a-f]{8}$ ]]
}

@test "ls (real msb): forge's sandboxes with their status and worktree; --json an array" {
	run --separate-stderr forge-sandbox ls
	assert_success
	assert_line "$(name_of kept)  Stopped  $FILE_DIR/repos/kept"
	assert_line "$(name_of orphan)  Stopped  -"
	refute_line --partial other-sandbox
	run forge-sandbox ls --json
	assert_success
	jq -e --arg n "$(name_of kept)" --arg w "$FILE_DIR/repos/kept" '
		type == "array" and all(.[]; .name | startswith("forge-"))
		and any(.[]; .name == $n and .status == "Stopped" and .worktree == $w and .image == "forge-test:latest")' <<<"$output"
	jq -e --arg n "$(name_of orphan)" 'any(.[]; .name == $n and .worktree == null)' <<<"$output"
	# A private, empty msb home: nothing, and an empty array.
	MSB_HOME=$SCRATCH/empty-home run forge-sandbox ls
	assert_success
	assert_output ''
	MSB_HOME=$SCRATCH/empty-home run forge-sandbox ls --json
	assert_output '[]'
}

@test "rm (real msb): removes the sandbox and both named volumes; missing ones are not an error" {
	n=$(name_of rmme)
	msb_volumes | grep -qx "$n-docker-data"
	cd "$FILE_DIR/repos/rmme"
	run forge-sandbox rm
	assert_success
	run msb_names
	refute_line "$n"
	volumes=$(msb_volumes)
	[[ $volumes != *"$n-docker-data"* && $volumes != *"$n-cache-data"* ]]
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$n" ]
	run forge-sandbox rm
	assert_success
}

@test "prune (real msb): removes sandboxes and volumes of worktrees that are gone, except --keep; unknown ones left alone" {
	run --separate-stderr forge-sandbox prune --keep "$(name_of keepme)" --keep unrelated-name
	assert_success
	assert_line "$(name_of gone)"
	assert_line "$(name_of ghost)"
	[ "${#lines[@]}" -eq 2 ]
	[[ $stderr == *"$(name_of orphan): no record of its worktree; left alone"* ]]
	[[ $stderr == *"forge-liar-1234abcd: its record names /nonexistent/liar, which gives another name; left alone"* ]]
	run msb_names
	refute_line "$(name_of gone)"
	assert_line "$(name_of kept)"
	assert_line "$(name_of keepme)"
	assert_line "$(name_of orphan)"
	assert_line other-sandbox
	volumes=$(msb_volumes)
	[[ $volumes != *"$(name_of gone)"* && $volumes != *"$(name_of ghost)"* ]]
	[ ! -e "$XDG_STATE_HOME/forge/sandboxes/$(name_of gone)" ]
	[ -e "$XDG_STATE_HOME/forge/sandboxes/$(name_of keepme)" ]
	# Nothing left to prune: nothing printed.
	run --separate-stderr forge-sandbox prune --keep "$(name_of keepme)"
	assert_success
	assert_output ''
}

@test "secrets (real msb modify/inspect): converge to the configuration; a new name at the next start, --restart only when asked" {
	n=$(name_of secrets)
	use_real_wrapper
	export API_TOKEN=value-1 NEW_TOKEN=value-2
	converge() {
		rm -f "$STUB_DIR/calls"
		run sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_prog=t; forge_msb_find; name=$1; shift; forge_sandbox_secrets_converge "$name" "" "$@"' _ "$n" "$@"
		assert_success
	}
	bound() { "$REAL_MSB" inspect "$n" --format json | jq -r '[.config.network.secrets.secrets[]?.env_var] | join(" ")'; }
	converge API_TOKEN@api.example.com
	run stub_calls
	assert_output "$(printf '%s\n' "inspect $n --format json" "modify $n --secret API_TOKEN@api.example.com --next-start")"
	[ "$(bound)" = API_TOKEN ]
	converge API_TOKEN@api.example.com NEW_TOKEN@new.example.com,other.example.com
	run stub_calls
	assert_line --index 1 "modify $n --secret API_TOKEN@api.example.com --secret NEW_TOKEN@new.example.com,other.example.com --next-start"
	[ "$(bound)" = 'API_TOKEN NEW_TOKEN' ]
	converge NEW_TOKEN@new.example.com
	run stub_calls
	assert_line --index 1 "modify $n --secret NEW_TOKEN@new.example.com --secret-rm API_TOKEN"
	[ "$(bound)" = NEW_TOKEN ]
	converge
	[ "$(bound)" = '' ]
	converge
	run stub_calls
	assert_output "inspect $n --format json"
	# Asked for: the reboot msb modify --restart.
	rm -f "$STUB_DIR/calls"
	run sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_prog=t; forge_msb_find; forge_sandbox_secrets_converge "$1" restart API_TOKEN@api.example.com' _ "$n"
	assert_success
	run stub_calls
	assert_line --index 1 "modify $n --secret API_TOKEN@api.example.com --restart"
	[ "$(bound)" = API_TOKEN ]
}

@test "up (real msb, doctor probe answered by the wrapper): a missing image fails 69 with the build-image command" {
	use_real_wrapper doctor-ok
	write_config '{"sandbox": {"image": "forge-missing:1"}}'
	run forge-sandbox up
	assert_failure 69
	assert_output --partial 'build it with: forge-sandbox build-image --tag forge-missing:1'
	run stub_calls
	assert_output "$(printf '%s\n' doctor 'ls --format json' 'images --format json')"
}

@test "up (real msb, doctor probe answered by the wrapper): a real Stopped sandbox is adopted, not created" {
	n=$(name_of adopt)
	cd "$FILE_DIR/repos/adopt"
	use_real_wrapper doctor-ok
	run --separate-stderr forge-sandbox up
	# The cache-disk preparation starts the sandbox: that needs a VM.
	if "$REAL_MSB" doctor >/dev/null 2>&1; then :; else
		assert_failure 69
		[[ $stderr == *"could not prepare the cache disk of $n"* ]]
	fi
	[[ $stderr == *"adopting $n (Stopped)"* ]]
	run stub_calls
	assert_line --index 1 'ls --format json'
	assert_line --index 2 --partial "exec --quiet $n --no-tty -- sudo -n sh -c"
	refute_output --partial create
}

@test "up (real msb, doctor probe answered by the wrapper): creates with the plan's argv; a leftover record is replaced" {
	use_real_wrapper doctor-ok
	export FORGE_T_SET=1
	write_config '{"sandbox": {"image": "forge-test:latest", "resources": {"memory": "64m", "cpus": 1, "dockerDisk": "128m", "cacheDisk": "128m"},
	  "network": {"allow": ["registry.npmjs.org"], "env": ["FORGE_T_SET"]}}}'
	n=$(expected_name "$REPO")
	plan_argv
	run --separate-stderr forge-sandbox up
	up_status=$status up_stderr=$stderr
	run stub_calls
	assert_line --index 3 "${plan[*]:1}"
	"$REAL_MSB" doctor >/dev/null 2>&1 && skip "this host can boot the sandbox"
	# No VM boots here: msb reports the failure, forge exits 69.
	[ "$up_status" -eq 69 ] || fail "up: exit $up_status"
	[[ $up_stderr == *"failed to start \"$n\""*"msb could not create $n (exit 1)"* ]]
	[ "$(forge-state get "$REPO/.forge/sandbox/$n" egress)" = '--net-default deny --net-rule allow@registry.npmjs.org' ]
	# msb 0.6 can keep a hidden record of a failed create ("already exists"
	# although ls does not list it): up then retries once with --replace.
	rm "$STUB_DIR/calls"
	run --separate-stderr forge-sandbox up
	if msb_names | grep -qx "$n"; then
		[[ $stderr == *"adopting $n"* ]]
	else
		run stub_calls
		assert_line --index 3 "${plan[*]:1}"
		if [ "${#lines[@]}" -gt 4 ]; then
			assert_line --index 4 "${plan[*]:1} --replace"
		fi
	fi
}

@test "up (real msb): an unset secret variable is named before msb's first call, whatever msb then says" {
	use_real_wrapper
	unset MISSING_TOKEN
	write_config '{"sandbox": {"network": {"secrets": [{"env": "MISSING_TOKEN", "hosts": ["api.example.com"]}]}}}'
	run --separate-stderr forge-sandbox up
	[[ $stderr == "forge-sandbox: warning: secret MISSING_TOKEN: the host variable MISSING_TOKEN is not set; export it in the environment that starts the harness"* ]]
}

@test "up --recreate (real msb): replaces the sandbox, keeps both volumes; a disk size the volume does not have is refused first" {
	n=$(name_of recreate)
	cd "$FILE_DIR/repos/recreate"
	use_real_wrapper doctor-ok
	write_config '{"sandbox": {"image": "forge-test:latest", "resources": {"memory": "64m", "cpus": 1, "dockerDisk": "128m", "cacheDisk": "256m"}}}'
	run --separate-stderr forge-sandbox up --recreate
	[ "$status" -eq 65 ] || fail "up --recreate: exit $status: $stderr"
	[[ $stderr == *"sandbox.resources.cacheDisk: 256m, but the volume $n-cache-data keeps the size it was made with (134217728 bytes)"* ]]
	# Nothing was replaced: msb would have removed the sandbox, then failed.
	run msb_names
	assert_line "$n"
	write_config '{"sandbox": {"image": "forge-test:latest", "resources": {"memory": "64m", "cpus": 1, "dockerDisk": "128m", "cacheDisk": "128m"}}}'
	plan_argv
	rm -f "$STUB_DIR/calls"
	run --separate-stderr forge-sandbox up --recreate
	run stub_calls
	assert_line --index 4 "${plan[*]:1} --replace"
	volumes=$(msb_volumes)
	[[ $volumes == *"$n-docker-data"* && $volumes == *"$n-cache-data"* ]]
}

@test "exec (real msb): a sandbox that does not exist is forge's own 69 naming forge-sandbox up, not msb's bare 'sandbox not found' (exit 1)" {
	run --separate-stderr forge-sandbox exec -- true
	assert_failure 69
	[ "$stderr" = "forge-sandbox: error: no sandbox for $REPO ($(expected_name "$REPO")); start it with: forge-sandbox up $REPO" ]
}
