# Shared by t/real-projects.bats and t/real-projects-ci.bats: forge-verify
# on real projects, compared with running their tests by hand.

# projects_setup_file: the toolchains that live under the real HOME
# (rustup's toolchains, cargo's home), which every test replaces, stay
# found; the projects' own makes inherit no variable of `make check`'s
# (TESTS=... among them).
projects_setup_file() {
	if [ -z "${RUSTUP_HOME:-}" ] && [ -d "${HOME:-/nonexistent}/.rustup" ]; then
		export RUSTUP_HOME="$HOME/.rustup"
	fi
	if [ -z "${CARGO_HOME:-}" ] && [ -d "${HOME:-/nonexistent}/.cargo" ]; then
		export CARGO_HOME="$HOME/.cargo"
	fi
	unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
}

# projects_teardown: after a failed test, what forge-verify and the hand
# run said (a failure is easier to read with them); then the usual teardown.
projects_teardown() {
	if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
		tail -n 40 -- "$SCRATCH/verify.err" "$SCRATCH/by-hand.log" 2>/dev/null || :
	fi
	forge_test_teardown
}

# by_hand COMMAND...: runs each shell COMMAND in $HAND in order, as a user
# would, stopping at the first failure; prints PASS or FAIL.
by_hand() {
	for cmd in "$@"; do
		(cd "$HAND" && sh -c "$cmd") >>"$SCRATCH/by-hand.log" 2>&1 || { echo FAIL; return 0; }
	done
	echo PASS
}
