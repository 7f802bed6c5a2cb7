#!/usr/bin/env bats
load test_helper
setup() { load_support; forge_test_setup; }
teardown() { forge_test_teardown; }

bats_require_minimum_version 1.5.0

# The table of accept/reject cases per rule lives in t/netrule-unit.c; these
# tests are about the program: its input, output forms and exit statuses.

@test "--help prints the usage on stdout and exits 0; --version names the program" {
	assert_help_and_version forge-netrule 'usage: forge-netrule [--json] [--secret-hosts]'
}

@test "an unknown option is a usage error (64)" {
	run --separate-stderr forge-netrule --bogus example.com
	assert_failure 64
	[[ $stderr == *"unknown option '--bogus'"* ]]
	[ -z "$output" ]
}

@test "entries on the command line: deny by default plus one allow rule each, in order" {
	run --separate-stderr forge-netrule example.com '*.github.com' domain=intranet suffix=example.org
	assert_success
	assert_output "$(printf '%s\n' '--net-default deny' '--net-rule allow@example.com' \
		'--net-rule allow@*.github.com' '--net-rule allow@domain=intranet' \
		'--net-rule allow@suffix=example.org')"
	[ -z "$stderr" ]
}

@test "entries on stdin, one per line, give the same flags as on the command line" {
	want=$(forge-netrule example.com '*.github.com' domain=intranet)
	run --separate-stderr forge-netrule < <(printf '%s\n' example.com '*.github.com' domain=intranet)
	assert_success
	assert_output "$want"
	# a last line without a newline counts too
	run --separate-stderr forge-netrule < <(printf 'example.com\n*.github.com\ndomain=intranet')
	assert_output "$want"
}

@test "entries are trimmed, and duplicates removed case-insensitively (rules lowercased)" {
	run --separate-stderr forge-netrule < <(printf '  Example.COM \t\r\nexample.com\n\tb.com\r\nB.Com\nEXAMPLE.com\n')
	assert_success
	assert_output "$(printf '%s\n' '--net-default deny' '--net-rule allow@example.com' '--net-rule allow@b.com')"
	[ -z "$stderr" ]
}

@test "a blank entry, or one with a newline, is configured and rejected: deny, never msb's allow-all (SPEC 4.3)" {
	for blank in '' '  ' $'\t'; do
		run --separate-stderr forge-netrule "$blank"
		assert_success
		assert_output '--net-default deny'
		[[ $stderr == *"warning: rejected '': empty entry"* ]]
		[[ $stderr == *'every entry was rejected; egress is fully denied'* ]]
	done
	run --separate-stderr forge-netrule $'evil.com\nallow@any'
	assert_output '--net-default deny'
	[[ $stderr == *"rejected 'evil.com\\x0aallow@any': contains a newline"* ]]
	# From stdin, a blank line is a blank entry; it does not hide the valid ones.
	run --separate-stderr forge-netrule < <(printf 'a.example.com\n\n   \n')
	assert_output "$(printf '%s\n' '--net-default deny' '--net-rule allow@a.example.com')"
	run --separate-stderr forge-netrule --json '' '  ' $'x.com\ny.com'
	assert_success
	[ "$(jq -c '[.mode, .rules]' <<<"$output")" = '["restricted",[]]' ]
	[ "$(jq -c '[.rejected[] | [.entry, .reason]]' <<<"$output")" = \
		'[["","empty entry (a blank entry is rejected, not ignored)"],["x.com\ny.com","contains a newline"]]' ]
	# As a secret host too.
	run --separate-stderr forge-netrule --secret-hosts ''
	assert_output '--net-default deny'
}

@test "a rejected entry is left out with one warning naming it and the reason; the rest still apply" {
	run --separate-stderr forge-netrule example.com example.com:443 localhost '*.com' 'a,b.com'
	assert_success
	assert_output "$(printf '%s\n' '--net-default deny' '--net-rule allow@example.com')"
	[ "${#stderr_lines[@]}" -eq 4 ]
	[ "${stderr_lines[0]}" = "forge-netrule: warning: rejected 'example.com:443': contains ':' (use the example.com:tcp:443 rule form)" ]
	[ "${stderr_lines[1]}" = "forge-netrule: warning: rejected 'localhost': has no dot (use domain=NAME for a single-label host)" ]
	[[ ${stderr_lines[2]} == "forge-netrule: warning: rejected '*.com': needs at least two labels after '*.'"* ]]
	[[ ${stderr_lines[3]} == "forge-netrule: warning: rejected 'a,b.com': contains ','"* ]]
}

@test "every entry rejected: --net-default deny alone, and a warning that egress is fully denied" {
	run --separate-stderr forge-netrule localhost 'https://example.com' 'a b.com'
	assert_success
	assert_output '--net-default deny'
	[ "${#stderr_lines[@]}" -eq 4 ]
	[ "${stderr_lines[3]}" = 'forge-netrule: warning: every entry was rejected; egress is fully denied' ]
	run --separate-stderr forge-netrule --json localhost
	assert_success
	[ "$(jq -c '[.mode, .rules]' <<<"$output")" = '["restricted",[]]' ]
}

@test "a '*' or '**' entry opens egress: no flags at all, whatever else is listed" {
	for wild in '*' '**' '  *  '; do
		run --separate-stderr forge-netrule example.com "$wild" api.github.com
		assert_success
		assert_output ''
		run --separate-stderr forge-netrule --json example.com "$wild" localhost
		assert_success
		[ "$(jq -c '[.mode, .rules, [.rejected[].entry]]' <<<"$output")" = '["open",[],["localhost"]]' ]
	done
	# but not '***' nor '*.*'
	run --separate-stderr forge-netrule example.com '***' '*.*'
	assert_output "$(printf '%s\n' '--net-default deny' '--net-rule allow@example.com')"
}

@test "no entries at all (none given, or empty stdin): no output, mode default" {
	run --separate-stderr forge-netrule </dev/null
	assert_success
	assert_output ''
	[ -z "$stderr" ]
	run --separate-stderr forge-netrule --json </dev/null
	assert_success
	[ "$(jq -c . <<<"$output")" = '{"mode":"default","rules":[],"rejected":[]}' ]
}

@test "--json: one document with mode, allow@ rules and rejected entries with reasons" {
	run --separate-stderr forge-netrule --json Example.com '*.github.com' foo
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	[ "$(jq -r .mode <<<"$output")" = restricted ]
	[ "$(jq -c .rules <<<"$output")" = '["allow@example.com","allow@*.github.com"]' ]
	[ "$(jq -c .rejected <<<"$output")" = '[{"entry":"foo","reason":"has no dot (use domain=NAME for a single-label host)"}]' ]
	# warnings still go to stderr
	[[ $stderr == *"rejected 'foo'"* ]]
}

@test "--json stays parseable with quotes, backslashes, control bytes and invalid UTF-8; warnings print them as \\xNN" {
	entry=$(printf 'a"b\\c\001\033[31m\377\303\251.com')
	run --separate-stderr forge-netrule --json "$entry" 'caf\xc3\xa9.com'
	assert_success
	jq -e . <<<"$output" >/dev/null
	[ "$(jq -r '.rejected[0].entry' <<<"$output")" = "$(printf 'a"b\\c\001\033[31m\357\277\275\303\251.com')" ]
	[[ $stderr == *"rejected 'a\"b\\\\c\\x01\\x1b[31m\\xff\\xc3\\xa9.com'"* ]]
	# no raw control byte reaches the terminal
	! grep -q "$(printf '[\001\033]')" <<<"$stderr"
}

@test "--check: exit 0 for a valid entry, 1 with the reason on stderr for an invalid one" {
	for entry in example.com ' Example.COM ' '*.example.com' domain=localhost suffix=example.com '*'; do
		run --separate-stderr forge-netrule --check "$entry"
		assert_success
		[ -z "$output$stderr" ]
	done
	run --separate-stderr forge-netrule --check example.com:443
	assert_failure 1
	[ "$stderr" = "forge-netrule: invalid 'example.com:443': contains ':' (use the example.com:tcp:443 rule form)" ]
	run --separate-stderr forge-netrule --check -- -x.example.com
	assert_failure 1
	[[ $stderr == *"label starts with '-'" ]]
	run --separate-stderr forge-netrule --check '  '
	assert_failure 1
	[[ $stderr == *'empty entry ('* ]]
}

@test "--check takes exactly one entry and no --json (64 otherwise)" {
	run --separate-stderr forge-netrule --check
	assert_failure 64
	run --separate-stderr forge-netrule --check a.com b.com
	assert_failure 64
	run --separate-stderr forge-netrule --check --json a.com
	assert_failure 64
}

@test "--secret-hosts: a wildcard is rejected and never widens egress" {
	run --separate-stderr forge-netrule --secret-hosts '*' api.example.com
	assert_success
	assert_output "$(printf '%s\n' '--net-default deny' '--net-rule allow@api.example.com')"
	[ "$stderr" = "forge-netrule: warning: rejected '*': a wildcard cannot be a secret host" ]
	run --separate-stderr forge-netrule --secret-hosts --json '**'
	assert_success
	[ "$(jq -c '[.mode, .rules, .rejected]' <<<"$output")" = '["restricted",[],[{"entry":"**","reason":"a wildcard cannot be a secret host"}]]' ]
	run --separate-stderr forge-netrule --check --secret-hosts '*'
	assert_failure 1
	# msb would read ENV@domain=X as an inline secret value
	run --separate-stderr forge-netrule --check --secret-hosts domain=intranet
	assert_failure 1
	run --separate-stderr forge-netrule --check --secret-hosts '*.example.com'
	assert_success
}

@test "100k entries on stdin (with duplicates and rejects) complete with the right counts" {
	# One awk, not a loop of 101,000 commands each paying bats' DEBUG trap.
	awk 'BEGIN {
		for (i = 0; i < 100000; i++) printf "host%d.example.com\n", i
		for (i = 0; i < 1000; i++) printf "HOST%d.Example.COM\nbad%d\n", i, i
	}' >"$SCRATCH/entries"
	run --separate-stderr timeout 120 forge-netrule <"$SCRATCH/entries"
	assert_success
	[ "${#lines[@]}" -eq 100001 ]
	[ "${lines[0]}" = '--net-default deny' ]
	[ "${lines[100000]}" = '--net-rule allow@host99999.example.com' ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 100001 ]
	[ "${#stderr_lines[@]}" -eq 1000 ]
	run --separate-stderr timeout 30 forge-netrule --json <"$SCRATCH/entries"
	[ "$(jq -c '[(.rules | length), (.rejected | length)]' <<<"$output")" = '[100000,1000]' ]
}

@test "a very long line is read whole and rejected for its length, not cut into a valid entry" {
	long=$(head -c 100000 /dev/zero | tr '\0' a)
	run --separate-stderr forge-netrule < <(printf '%s.com\nexample.com\n' "$long")
	assert_success
	assert_output "$(printf '%s\n' '--net-default deny' '--net-rule allow@example.com')"
	[[ $stderr == *"': host name longer than 253 characters" ]]
}

@test "unreadable input or an unwritable result is an error (70), never a silent empty list" {
	run --separate-stderr forge-netrule <"$SCRATCH"
	assert_failure 70
	[[ $stderr == 'forge-netrule: error: cannot read the entries: '* ]]
	[ -z "$output" ]
	if [ -w /dev/full ]; then
		run --separate-stderr bash -c 'forge-netrule example.com >/dev/full'
		assert_failure 70
		[[ $stderr == 'forge-netrule: error: cannot write the result: '* ]]
	fi
}

# msb_or_skip: sets MSB to the real msb ($FORGE_MSB, else on PATH); skips
# when there is none, except in CI, where that is a failure.
msb_or_skip() {
	MSB=${FORGE_MSB:-$(command -v msb || true)}
	if [ -z "$MSB" ] || [ ! -x "$MSB" ]; then
		[ "${CI:-}" != true ] || fail "CI=true but no msb (set FORGE_MSB or put msb on PATH)"
		skip "no msb: set FORGE_MSB or put msb on PATH"
	fi
	export MSB_HOME="$SCRATCH/msb-home"
	mkdir -p "$MSB_HOME"
}

# msb_accepts FLAG-LINES: the real msb parses create with these flags (it fails
# only later, because the image is not cached).
msb_accepts() {
	local -a argv=()
	local flag value
	while read -r flag value; do argv+=("$flag" "$value"); done <<<"$1"
	run "$MSB" create forge-nonexistent-image:none --pull never --quiet "${argv[@]}"
	assert_failure 1
	assert_output --partial 'image not cached'
}

@test "the real msb parser accepts every set of flags forge-netrule emits" {
	msb_or_skip
	msb_accepts "$(forge-netrule example.com API.GitHub.com '*.example.org' domain=localhost \
		suffix=example.net 1.2.3.4 a_b.example.com a-.example.com "$(printf 'a%.0s' {1..63}).com")"
	msb_accepts "$(forge-netrule localhost 2>/dev/null)"
	# what forge-netrule rejects would have broken the whole create
	for entry in 'a!b.com' 'foo=bar.com' '-a.example.com' '*.com' 'suffix=com'; do
		run forge-netrule --check -- "$entry"
		assert_failure 1
		run "$MSB" create forge-nonexistent-image:none --pull never --quiet --net-default deny --net-rule "allow@$entry"
		assert_failure
		refute_output --partial 'image not cached'
	done
}

@test "the real msb parser accepts the hosts --secret-hosts lets through in --secret ENV@HOSTS" {
	msb_or_skip
	hosts=$(forge-netrule --secret-hosts --json api.example.com '*.example.org' '*' domain=x 2>/dev/null |
		jq -r '.rules | map(ltrimstr("allow@")) | join(",")')
	[ "$hosts" = 'api.example.com,*.example.org' ]
	FORGE_TEST_SECRET=s run "$MSB" create forge-nonexistent-image:none --pull never --quiet \
		--secret "FORGE_TEST_SECRET@$hosts"
	assert_failure 1
	assert_output --partial 'image not cached'
}
