#!/usr/bin/env bats
# What the documentation must tell a user of the sandbox and of --isolated
# (issue 11): read from the rendered man pages (so a phrase broken across
# lines or by markup still counts) and from README.md.
load test_helper
setup() {
	load_support
	forge_test_setup
	M=$abs_top_srcdir/man
}
teardown() { forge_test_teardown; }

# rendered PAGE: the page as plain text, one line, runs of blanks made one.
rendered() {
	groff -man -Tascii -P-c -P-b -P-u -P-o "$M/$1" 2>/dev/null | tr -s ' \n' '  '
}

# readme: README.md as one line, runs of blanks made one.
readme() { tr -s ' \n' '  ' <"$abs_top_srcdir/README.md"; }

@test "docs: --isolated is a safety net, not a security boundary (forge-verify(1), README)" {
	run rendered forge-verify.1
	assert_output --partial 'is a safety net against accidents, not a security boundary'
	run readme
	assert_output --partial '`--isolated` is a safety net, **not a security boundary**'
}

@test "docs: flock and tar are runtime dependencies of --isolated (forge-verify(1), forge-sandbox(1), README)" {
	run rendered forge-verify.1
	assert_output --partial 'It needs flock(1) and tar(1) at run time'
	run rendered forge-sandbox.1
	assert_output --partial 'needs flock(1) and tar(1) on the host at run time'
	run readme
	assert_output --partial 'It needs `flock` and `tar` at run time'
}

@test "docs: forge-sandbox(1) lists the hosts Docker Hub pulls need under an allow-list" {
	run rendered forge-sandbox.1
	for host in registry-1.docker.io auth.docker.io production.cloudfront.docker.com '*.cloudfront.net'; do
		assert_output --partial "\"$host\""
	done
	assert_output --partial 'under an allow-list it needs all of'
	run readme
	assert_output --partial '`registry-1.docker.io`, `auth.docker.io`, `production.cloudfront.docker.com` and `*.cloudfront.net`'
}

@test "docs: resources are fixed at create, and up --recreate applies them keeping the caches" {
	run rendered forge-sandbox.1
	assert_output --partial 'The resources (memory, cpus, disk sizes), like the egress rules and the image, are fixed when a sandbox is created'
	assert_output --partial 'keeps its cache and docker volumes'
	run readme
	assert_output --partial 'the resources (memory, cpus, disk sizes) are fixed when the sandbox is created'
}

@test "docs: the placeholder caveat and --restart; the read-only project decision" {
	run rendered forge-sandbox.1
	assert_output --partial 'Placeholder caveat'
	assert_output --partial 'up --restart reboots it'
	assert_output --partial 'The read-only project'
	assert_output --partial 'the outer flag wins'
}

@test "docs: forge-sandbox(1) says what in the git dirs the namespace backend protects and what neither backend can stop" {
	run rendered forge-sandbox.1
	assert_output --partial 'Git metadata'
	assert_output --partial 'mounts the root of the common dir read-only and, on top of it, read-write only objects/, refs/, logs/'
	assert_output --partial 'in a linked worktree (the layout loops use) git commits inside work'
	assert_output --partial "commits from inside fail with git's own error"
	assert_output --partial 'a repository whose main git dir has a commondir file'
	assert_output --partial 'What neither backend can stop.'
	assert_output --partial 'add a nested repository as a submodule'
	assert_output --partial 'A repository cannot widen its own sandbox.'
	assert_output --partial 'a directory or a block device is refused'
}

@test "docs: forge-verify --sandbox, its record field and exit 69 (forge-verify(1)); the careful combination and its limits (README)" {
	run rendered forge-verify.1
	assert_output --partial '[--sandbox]'
	assert_output --partial 'The record'"'"'s sandbox is {"name": NAME, "backend": "msb"|"bwrap"} when the steps ran in one, else null'
	assert_output --partial 'is an ERROR with exit 69 and the reason; no step runs, never on the host'
	assert_output --partial 'with --sandbox, no sandbox could be had'
	run readme
	assert_output --partial '### Verifying untrusted changes: `--isolated --sandbox`'
	assert_output --partial 'forge-verify --isolated --warm --sandbox --change "$TASK" --json'
	assert_output --partial 'A namespace sandbox shares the host'"'"'s kernel'
}

@test "docs: what the sandbox may reach is never taken from the repository's forge.json (forge-sandbox(1), forge(7), README)" {
	run rendered forge-sandbox.1
	assert_output --partial 'is taken only from the files the user controls'
	assert_output --partial 'each of them is ignored with a warning naming the file and the key'
	run rendered forge.7
	assert_output --partial 'verify.sandbox may turn the sandbox on (true) but not off'
	run readme
	assert_output --partial "count only from the user's file, \`\$FORGE_CONFIG\` or \`--config\`"
}
