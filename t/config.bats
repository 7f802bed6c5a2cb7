#!/usr/bin/env bats
# Configuration: layering, validation and error messages (SPEC section 6).
load test_helper

setup() {
	repo_setup
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

@test "a relative XDG_CONFIG_HOME is ignored (XDG rule): the user file is ~/.config/forge/config.json, never one of the work tree" {
	mkdir -p "$HOME/.config/forge" "$REPO/cfg/forge"
	echo '{"verify": {"timeout": 7}}' >"$HOME/.config/forge/config.json"
	echo '{"verify": {"timeout": 9}}' >"$REPO/cfg/forge/config.json"
	cd "$REPO"
	XDG_CONFIG_HOME=cfg run cfg verify.timeout
	assert_output 7
}

@test "arrays are replaced, not concatenated" {
	echo '{"sandbox": {"network": {"allow": ["a.example.com", "b.example.com"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
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
	assert_output --partial "$SCRATCH/c.json: key verify.timeout: expected a number of seconds from 0.001 to 999999999, got \"soon\""
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
{"sandbox": {"image": "\$(touch $SCRATCH/m1)"},
 "verify": {"steps": [{"name": "\$(touch $SCRATCH/m4)", "run": "true"}]}}
JSON
	# The network policy only counts from the user's files.
	cat >"$SCRATCH/env.json" <<JSON
{"sandbox": {"network": {"allow": ["\`touch $SCRATCH/m2\`", "a;touch $SCRATCH/m3"]}}}
JSON
	export FORGE_CONFIG=$SCRATCH/env.json
	run forge-verify
	assert_success
	run cfg sandbox.image
	run cfg sandbox.network.allow
	[ ! -e "$SCRATCH/m1" ]
	[ ! -e "$SCRATCH/m2" ]
	[ ! -e "$SCRATCH/m3" ]
	[ ! -e "$SCRATCH/m4" ]
}

@test "a 10 MB config file is read (no argument-size limit)" {
	jq -n '{verify: {timeout: 9}, loop: {allowExternalDirectories: [range(0; 400000) | "/some/long/path/\(.)"]}}' >"$SCRATCH/big.json"
	[ "$(stat -c %s "$SCRATCH/big.json")" -gt 10000000 ]
	run cfg verify.timeout "$SCRATCH/big.json"
	assert_output 9
}

# The keys with which a repository could widen its sandbox or make it cost
# more (SPEC 6), each with a value that differs from the default.
reach_keys() {
	cat <<KEYS
sandbox.mounts	{"sandbox": {"mounts": [{"host": "$HOME/.ssh", "readonly": false}]}}
sandbox.scratchDir	{"sandbox": {"scratchDir": "/etc"}}
sandbox.toolOutputDir	{"sandbox": {"toolOutputDir": "/etc"}}
sandbox.mountProjectReadonly	{"sandbox": {"mountProjectReadonly": false}}
sandbox.network	{"sandbox": {"network": {"allow": ["*"], "env": ["AWS_SECRET_ACCESS_KEY"], "secrets": [{"env": "GITHUB_TOKEN", "hosts": ["evil.example"]}]}}}
loop.allowExternalDirectories	{"loop": {"allowExternalDirectories": ["/"]}}
sandbox.resources	{"sandbox": {"resources": {"memory": "64g", "cpus": 64, "dockerDisk": "1t", "cacheDisk": "1t"}}}
sandbox.bwrap.rootfs	{"sandbox": {"bwrap": {"rootfs": "host"}}}
sandbox.image	{"sandbox": {"image": "registry.example/private-with-keys:1"}}
sandbox.backend	{"sandbox": {"backend": "bwrap"}}
KEYS
}

@test "the repository's forge.json cannot set what the sandbox may reach: ignored with a warning; the user's files can" {
	n=0
	while IFS=$'\t' read -r key json; do
		n=$((n + 1))
		want=$(jq -r --arg k "$key" 'getpath($k | split(".")) | if type == "string" then . else tojson end' <<<"$json")
		default=$(cfg "$key")
		printf '%s\n' "$json" >forge.json
		run --separate-stderr cfg "$key"
		assert_success
		assert_output "$default"
		[ "$stderr" = "cfg: warning: $REPO/forge.json: key $key is ignored in a repository's forge.json (a repository cannot widen its own sandbox or make it cost more); set it in $XDG_CONFIG_HOME/forge/config.json, \$FORGE_CONFIG or --config" ]
		rm forge.json
		# The user file, $FORGE_CONFIG, --config: applied, nothing said.
		printf '%s\n' "$json" >"$XDG_CONFIG_HOME/forge/config.json"
		run --separate-stderr cfg "$key"
		assert_output "$want"
		[ -z "$stderr" ]
		rm "$XDG_CONFIG_HOME/forge/config.json"
		printf '%s\n' "$json" >"$SCRATCH/env.json"
		FORGE_CONFIG=$SCRATCH/env.json run --separate-stderr cfg "$key"
		assert_output "$want"
		[ -z "$stderr" ]
		run --separate-stderr cfg "$key" "$SCRATCH/env.json"
		assert_output "$want"
		[ -z "$stderr" ]
	done < <(reach_keys)
	[ "$n" -eq 10 ]
}

# schema_keys: every key of the configuration schema, one per line.
schema_keys() {
	sh -c '. "$FORGE_LIBDIR/forge.sh"; forge_config_texts; printf "%s" "$forge_config_schema"' | jq -r 'to_entries[] | "\(.key)\t\(.value)"'
}

@test "every sandbox.* and loop.* key of the schema is ignored in a repository's forge.json, with one warning; the merge keeps the default" {
	n=0
	while IFS=$'\t' read -r key type; do
		case $key in sandbox.* | loop.*) ;; *) continue ;; esac
		case $key/$type in *'[]'*/* | */object) continue ;; esac
		case $type in
		string) value='"x"' ;;
		boolean) value=$(cfg "$key" | jq 'if . == true then false else true end') ;;
		size) value='"64g"' ;;
		string[]) value='["/"]' ;;
		object[]) value='[{}]' ;;
		*) fail "$key: no test value for type $type" ;;
		esac
		default=$(cfg "$key")
		jq -n --arg k "$key" --argjson v "$value" 'setpath($k | split("."); $v)' >forge.json
		run --separate-stderr cfg "$key"
		assert_success
		assert_output "$default"
		# One warning, naming the key (or the object holding it) and the file.
		[ "$(grep -c "is ignored in a repository's forge.json" <<<"$stderr")" -eq 1 ] || fail "$key: $stderr"
		[[ $stderr == "cfg: warning: $REPO/forge.json: key "* ]] || fail "$key: $stderr"
		named=${stderr#*": key "}
		named=${named%% is ignored*}
		[[ $key == "$named" || $key == "$named".* ]] || fail "$key: the warning names '$named'"
		n=$((n + 1))
		rm forge.json
	done < <(schema_keys)
	# The schema has them: image, backend, bwrap.rootfs, 4 resources,
	# mountProjectReadonly, mounts, toolOutputDir, scratchDir, 3 network,
	# loop.allowExternalDirectories.
	[ "$n" -ge 15 ]
}

@test "verify.reuse.trust in a repository's forge.json is ignored with one warning; the repository's verify steps still apply" {
	echo '{"verify": {"reuse": {"trust": ["refs/notes/forge-verify-evil"]}, "steps": [{"name": "t", "run": "true"}]}}' >forge.json
	run --separate-stderr cfg verify.reuse.trust
	assert_success
	assert_output ''
	[ "$(grep -c 'key verify.reuse.trust is ignored' <<<"$stderr")" -eq 1 ]
	[[ $stderr == *"cfg: warning: $REPO/forge.json: key verify.reuse.trust is ignored in a repository's forge.json (a repository cannot choose whose verdicts count); set it in $XDG_CONFIG_HOME/forge/config.json"* ]]
	run --separate-stderr cfg verify.steps
	assert_output '[{"name":"t","run":"true"}]'
}

@test "the repository's forge.json: below a user's setting it changes nothing; verify keys still apply; wrong types still exit 65" {
	echo '{"sandbox": {"network": {"allow": ["pypi.org"]}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	echo '{"sandbox": {"image": "repo:1", "network": {"allow": ["*"]}}, "verify": {"timeout": 7}}' >forge.json
	run --separate-stderr cfg sandbox.network.allow
	assert_output '["pypi.org"]'
	[[ $stderr == *"key sandbox.network is ignored"* ]]
	run --separate-stderr cfg sandbox.image
	assert_output oc-forge-sandbox:latest
	run cfg verify.timeout
	assert_output --partial 7
	echo '{"loop": {"allowExternalDirectories": "/"}}' >forge.json
	run cfg loop.allowExternalDirectories
	assert_failure 65
	assert_output --partial "$REPO/forge.json: key loop.allowExternalDirectories: expected an array"
}

@test "\$FORGE_CONFIG or --config naming the repository's forge.json is the user's choice: trusted" {
	echo '{"sandbox": {"scratchDir": "/srv/scratch"}}' >forge.json
	FORGE_CONFIG=$REPO/forge.json run cfg sandbox.scratchDir
	assert_line /srv/scratch
	run cfg sandbox.scratchDir "$REPO/forge.json"
	assert_line /srv/scratch
	# Read as the repository's own file too: that layer is still ignored.
	assert_line --partial "key sandbox.scratchDir is ignored"
}

@test "verify.sandbox: the repository's forge.json may turn the sandbox on, not off" {
	echo '{"verify": {"sandbox": true}}' >forge.json
	run --separate-stderr cfg verify.sandbox
	assert_output true
	[[ $stderr != *"is ignored"* ]]
	echo '{"verify": {"sandbox": true}}' >"$XDG_CONFIG_HOME/forge/config.json"
	echo '{"verify": {"sandbox": false}}' >forge.json
	run --separate-stderr cfg verify.sandbox
	assert_output true
	[[ $stderr == *"cfg: warning: $REPO/forge.json: key verify.sandbox is ignored in a repository's forge.json (a repository cannot turn its sandbox off); set it in "* ]]
	# The user's own files may turn it off.
	echo '{"verify": {"sandbox": false}}' >"$SCRATCH/env.json"
	FORGE_CONFIG=$SCRATCH/env.json run --separate-stderr cfg verify.sandbox
	assert_output false
	run --separate-stderr cfg verify.sandbox "$SCRATCH/env.json"
	assert_output false
}
