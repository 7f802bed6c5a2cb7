#!/usr/bin/env bats
# Configuration: layering, validation and error messages (SPEC section 6).
load test_helper

setup() {
	load_support
	forge_test_setup
	forge_test_repo
	mkdir -p "$XDG_CONFIG_HOME/forge"
}
teardown() { forge_test_teardown; }

# cfg KEY [CLIFILE]: the merged value of KEY, through the library.
cfg() {
	sh -c 'set -eu; forge_prog=cfg; . "$FORGE_LIBDIR/forge.sh"; forge_config_load "$PWD" "$2"; forge_config_get "$1"' \
		cfg "$1" "${2:-}"
}

@test "defaults apply with no file at all" {
	run cfg verify.timeout
	assert_output 1800
	run cfg verify.breaker.threshold
	assert_output 3
	run cfg sandbox.image
	assert_output 'oc-forge-sandbox:latest'
	run cfg sandbox.resources.memory
	assert_output 8g
}

@test "layers: defaults < user file < forge.json < FORGE_CONFIG < --config, key by key" {
	echo '{"verify": {"timeout": 10, "breaker": {"threshold": 4}}, "sandbox": {"image": "user"}}' \
		>"$XDG_CONFIG_HOME/forge/config.json"
	echo '{"verify": {"timeout": 20}}' >forge.json
	echo '{"sandbox": {"image": "env"}}' >"$SCRATCH/env.json"
	echo '{"sandbox": {"resources": {"cpus": 2}}}' >"$SCRATCH/cli.json"
	export FORGE_CONFIG=$SCRATCH/env.json
	run cfg verify.timeout "$SCRATCH/cli.json"
	assert_output 20
	run cfg verify.breaker.threshold "$SCRATCH/cli.json"
	assert_output 4
	run cfg sandbox.image "$SCRATCH/cli.json"
	assert_output env
	run cfg sandbox.resources.cpus "$SCRATCH/cli.json"
	assert_output 2
	run cfg sandbox.resources.memory "$SCRATCH/cli.json"
	assert_output 8g
}

@test "XDG_CONFIG_HOME unset: the user file is ~/.config/forge/config.json" {
	unset XDG_CONFIG_HOME
	mkdir -p "$HOME/.config/forge"
	echo '{"verify": {"timeout": 7}}' >"$HOME/.config/forge/config.json"
	run cfg verify.timeout
	assert_output 7
}

@test "arrays are replaced, not concatenated" {
	echo '{"sandbox": {"network": {"allow": ["a.example.com", "b.example.com"]}}}' >forge.json
	echo '{"sandbox": {"network": {"allow": ["c.example.com"]}}}' >"$SCRATCH/cli.json"
	run cfg sandbox.network.allow "$SCRATCH/cli.json"
	assert_output '["c.example.com"]'
}

@test "invalid JSON: exit 65 naming the file" {
	printf '{"verify": {' >forge.json
	run forge-verify -- true
	assert_failure 65
	assert_output --partial "$REPO/forge.json: invalid JSON"
	printf 'nonsense' >"$SCRATCH/bad config.json"
	rm forge.json
	run forge-verify --config "$SCRATCH/bad config.json" -- true
	assert_failure 65
	assert_output --partial "$SCRATCH/bad config.json: invalid JSON"
}

@test "invalid JSON: the parser's line and column, not the file's text" {
	{
		printf '{\n  "verify": {\n    "timeout": 5,\n'
		for i in $(seq 300); do printf '    "k%s": "padding padding padding padding",\n' "$i"; done
		printf '    "steps": [\n  }\n'
	} >forge.json
	run --separate-stderr forge-verify -- true
	assert_failure 65
	[[ $stderr == *"$REPO/forge.json: invalid JSON: "*"at line 305, column 3"* ]]
	[[ $stderr != *padding* ]]
	[ "${#stderr}" -lt 400 ]
}

@test "a step without run: exit 65 naming the file and the key" {
	echo '{"verify": {"steps": [{"name": "a", "run": "true"}, {"name": "x"}]}}' >"$SCRATCH/steps.json"
	run forge-verify --config "$SCRATCH/steps.json"
	assert_failure 65
	assert_output --partial "$SCRATCH/steps.json: key verify.steps[1].run: a non-empty shell command is required"
	echo '{"verify": {"steps": [{"run": ""}]}}' >forge.json
	run forge-verify
	assert_failure 65
	assert_output --partial "$REPO/forge.json: key verify.steps[0].run: a non-empty shell command is required"
}

@test '"steps": [] is a config error naming the file, not a silent fallback to detection' {
	printf 'test:\n\t@touch detected\n' >Makefile
	echo '{"verify": {"steps": []}}' >forge.json
	run forge-verify
	assert_failure 65
	assert_output --partial "$REPO/forge.json: key verify.steps: an empty list would run nothing"
	[ ! -e detected ]
}

@test "a wrong type: exit 65 naming the file and the key" {
	echo '{"verify": {"timeout": "soon"}}' >"$SCRATCH/c.json"
	FORGE_CONFIG=$SCRATCH/c.json run forge-verify -- true
	assert_failure 65
	assert_output --partial "$SCRATCH/c.json: key verify.timeout: expected a positive number of seconds"
	echo '{"sandbox": {"mounts": [{"host": "/a"}, {"host": 3}]}}' >forge.json
	run forge-verify -- true
	assert_failure 65
	assert_output --partial 'key sandbox.mounts[1].host: expected string'
	echo '{"verify": {"steps": {"name": "x"}}}' >forge.json
	run forge-verify -- true
	assert_failure 65
	assert_output --partial 'key verify.steps: expected an array'
	echo '[]' >forge.json
	run forge-verify -- true
	assert_failure 65
	assert_output --partial 'expected a JSON object'
}

@test "unknown keys: a warning naming the key, the run goes on" {
	echo '{"verify": {"timout": 5}, "extra": 1}' >forge.json
	run forge-verify -- true
	assert_success
	assert_output --partial 'warning:'
	assert_output --partial 'unknown key verify.timout'
	assert_output --partial 'unknown key extra'
}

@test "--config naming a missing file: exit 65 naming it" {
	run forge-verify --config "$SCRATCH/nope.json" -- true
	assert_failure 65
	assert_output --partial "$SCRATCH/nope.json"
}

@test "config values are never evaluated by a shell (except verify.steps[].run)" {
	cat >forge.json <<JSON
{"sandbox": {"image": "\$(touch $SCRATCH/m1)", "network": {"allow": ["\`touch $SCRATCH/m2\`", "a;touch $SCRATCH/m3"]}},
 "verify": {"steps": [{"name": "\$(touch $SCRATCH/m4)", "run": "true"}]}}
JSON
	run forge-verify
	assert_success
	run cfg sandbox.image
	[ ! -e "$SCRATCH/m1" ] && [ ! -e "$SCRATCH/m2" ] && [ ! -e "$SCRATCH/m3" ] && [ ! -e "$SCRATCH/m4" ]
}

@test "a 10 MB config file is read (no argument-size limit)" {
	jq -n '{verify: {timeout: 9}, loop: {allowExternalDirectories: [range(0; 400000) | "/some/long/path/\(.)"]}}' >forge.json
	[ "$(stat -c %s forge.json)" -gt 10000000 ]
	run cfg verify.timeout
	assert_output 9
}
