#!/usr/bin/env bats
# Every man page renders cleanly: no groff or man warnings, and none of the
# mistakes that render without a warning (a sentence turned into a .TP tag,
# a phrase whose words a font-alternating macro runs together).
load test_helper

setup() {
	load_support
	forge_test_setup
	cd "$abs_top_srcdir/man" || return
}
teardown() { forge_test_teardown; }

pages() { printf '%s\n' ./*.1 ./*.7; }

@test "there are pages to check: one per program and forge.7" {
	[ "$(pages | wc -l)" -ge 7 ]
	[ -f forge.7 ]
}

@test "groff -ww -z -man: no warning on any page" {
	for page in $(pages); do
		run groff -ww -z -man "$page"
		assert_success
		assert_output ''
	done
}

@test "man --warnings -l: no warning on any page" {
	for page in $(pages); do
		run --separate-stderr env MANWIDTH=80 man --warnings -l "$page"
		assert_success
		[ -z "$stderr" ] || fail "$page: $stderr"
		[ "${#lines[@]}" -gt 10 ]
	done
}

# tp_sentences PAGE...: .TP tags of more than six words (a sentence that
# was meant as text, not as a tag).
tp_sentences() {
	awk 'tp && !/^\./ && NF > 6 { printf "%s:%d: %s\n", FILENAME, FNR, $0 } { tp = /^\.TP/ }' "$@"
}

# split_phrases PAGE...: unquoted arguments of .BR/.RB/.IR/.RI/.BI/.IB that
# open a parenthesis they do not close: a phrase with spaces, like
# "$(git rev-parse ...)", whose words the macro would run together.
split_phrases() {
	awk '/^\.(BR|RB|IR|RI|BI|IB)[ \t]/ {
		rest = $0
		sub(/^\.[A-Z][A-Z][ \t]+/, "", rest)
		gsub(/\\\(../, "", rest)
		gsub(/\\\[[^]]*\]/, "", rest)
		while (rest != "") {
			if (substr(rest, 1, 1) == "\"") {
				rest = substr(rest, 2)
				i = index(rest, "\"")
				if (i == 0) break
				rest = substr(rest, i + 1)
			} else {
				match(rest, /^[^ \t]+/)
				arg = substr(rest, 1, RLENGTH)
				rest = substr(rest, RLENGTH + 1)
				if (arg ~ /\(./ && arg !~ /\)/) printf "%s:%d: %s\n", FILENAME, FNR, $0
			}
			sub(/^[ \t]+/, "", rest)
		}
	}' "$@"
}

@test "the lints catch what they are for" {
	printf '.TH X 1\n.SH A\n.TP\nValidating entries is the job of the tool here.\nmore\n' >"$SCRATCH/tp.1"
	run tp_sentences "$SCRATCH/tp.1"
	assert_output --partial 'tp.1:4:'
	printf '.TH X 1\n.SH A\n.IR $(git rev-parse \\-\\-git-dir)/x :\n.RB ( "a b" ).\n.BI "x=\\(aq" N \\(aq\n' >"$SCRATCH/ir.1"
	run split_phrases "$SCRATCH/ir.1"
	assert_output "$SCRATCH/ir.1:3: .IR \$(git rev-parse \\-\\-git-dir)/x :"
}

@test "no .TP tag is a sentence" {
	run tp_sentences $(pages)
	assert_output ''
}

@test "no phrase is split across the arguments of a font-alternating macro" {
	run split_phrases $(pages)
	assert_output ''
}
