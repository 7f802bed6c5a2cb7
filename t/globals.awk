# globals.awk FILE...: prints "FILE NAME FUNCTION" for every forge_* variable
# a shell file of the library assigns outside a local declaration of the
# function it is in ("-" at the top level). An assignment is NAME=, read's
# and for's NAME; a program's option "--set NAME=VALUE" is not one. A
# function with a subshell body, NAME() (, assigns nothing outside.
# t/lint.bats compares what this finds with lib-sh/forge-vars.sh.
function check(line,    s, v, t, n, w, i) {
	s = line
	while (match(s, /(^|[^A-Za-z0-9_$])forge_[a-z0-9_]+=/)) {
		v = substr(s, RSTART, RLENGTH - 1)
		sub(/^[^f]*/, "", v)
		if (substr(s, 1, RSTART) !~ /--set[ \t]+$/)
			report(v)
		s = substr(s, RSTART + RLENGTH)
	}
	s = line
	while (match(s, /(read( -r)?|for)( forge_[a-z0-9_]+)+/)) {
		t = substr(s, RSTART, RLENGTH)
		n = split(t, w, / /)
		for (i = 1; i <= n; i++)
			if (w[i] ~ /^forge_/)
				report(w[i])
		s = substr(s, RSTART + RLENGTH)
	}
}
function report(v) {
	if (!sub_shell && !(v in loc))
		print FILENAME, v, (fn == "" ? "-" : fn)
}
FNR == 1 { fn = ""; sub_shell = 0; split("", loc) }
{
	line = $0
	sub(/^[ \t]*#.*/, "", line)
	sub(/[ \t]#[^"'}]*$/, "", line)
}
match(line, /^[a-z_][a-z0-9_]*\(\) *[{(]/) {
	fn = substr(line, 1, index(line, "(") - 1)
	sub_shell = substr(line, RLENGTH, 1) == "("
	split("", loc)
	check(substr(line, RLENGTH + 1))
	if (line ~ /}[ \t]*$/) { fn = ""; split("", loc) }
	next
}
/^[})]/ { fn = ""; sub_shell = 0; split("", loc); next }
match(line, /^[ \t]*local[ \t]/) {
	n = split(substr(line, RSTART + RLENGTH), w, /[ \t]+/)
	for (i = 1; i <= n; i++) {
		v = w[i]
		sub(/=.*/, "", v)
		if (v != "")
			loc[v] = 1
	}
	next
}
{ check(line) }
