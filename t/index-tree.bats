#!/usr/bin/env bats
# forge-index-tree: the tree a git index's cache tree records for the whole
# index, checked against what git write-tree prints for the same index.
load test_helper
setup() {
	load_support
	forge_test_setup
	IT=$abs_top_builddir/helpers/forge-index-tree
}
teardown() { forge_test_teardown; }

bats_require_minimum_version 1.5.0

# new_repo [GIT-INIT-OPTION...]: $SCRATCH/repo with nested folders, one
# commit (which leaves a valid cache tree in the index); cd there.
new_repo() {
	git init -q "$@" "$SCRATCH/repo"
	cd "$SCRATCH/repo"
	mkdir -p a/b/c d
	echo 1 >a/b/c/f
	echo 2 >a/g
	echo 3 >d/h
	echo 4 >top
	git add .
	git commit -qm base
}

# matches_write_tree [OPTION...]: forge-index-tree prints, for .git/index,
# the tree git write-tree then prints for it, and nothing on stderr.
matches_write_tree() {
	local want
	run --separate-stderr "$IT" "$@" .git/index
	assert_success
	assert_equal "$stderr" ''
	want=$(git write-tree)
	assert_output "$want"
}

# no_tree: forge-index-tree exits 1 for .git/index, printing nothing.
no_tree() {
	run --separate-stderr "$IT" .git/index
	assert_failure 1
	assert_output ''
	assert_equal "$stderr" ''
}

# not_an_index FILE: exit 65, one error naming FILE, nothing on stdout.
not_an_index() {
	run --separate-stderr "$IT" "$1"
	assert_failure 65
	assert_output ''
	assert_equal "${#stderr_lines[@]}" 1
	local want="forge-index-tree: error: $1: "
	assert_equal "${stderr_lines[0]:0:${#want}}" "$want"
}

# index_version: the version in .git/index's header.
index_version() { od -An -tu1 -j7 -N1 .git/index | tr -d ' '; }

# poke FILE OFFSET BYTES: overwrites FILE's bytes at OFFSET with BYTES
# (printf escapes).
poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

# long_path: a path of 4,246 bytes in folders of 201 (a name length the
# 12 bits of an entry's flags cannot hold: they say 0xFFF).
long_path() { printf 'd%0200d/' $(seq 1 21); printf file; }

@test "a sha1 repository with nested folders, index v2: the tree write-tree prints" {
	new_repo
	assert_equal "$(index_version)" 2
	run "$IT" .git/index
	assert_output --regexp '^[0-9a-f]{40}$'
	matches_write_tree
	assert_output "$(git rev-parse 'HEAD^{tree}')"
}

@test "a sha256 repository, with --sha256: 64 hex digits, the tree write-tree prints" {
	new_repo --object-format=sha256
	run "$IT" --sha256 .git/index
	assert_output --regexp '^[0-9a-f]{64}$'
	matches_write_tree --sha256
	# --sha1 (the default) on a sha256 index: not one it can parse.
	run "$IT" --sha1 .git/index
	assert_failure 65
}

@test "--sha1 is the default, said out loud" {
	new_repo
	matches_write_tree --sha1
	matches_write_tree --sha256 --sha1
}

@test "index v3: skip-worktree entries (extended flags) are in the tree; an intent-to-add one invalidates the root" {
	new_repo
	git update-index --skip-worktree a/g d/h
	assert_equal "$(index_version)" 3
	git write-tree >/dev/null
	matches_write_tree
	echo new >new
	git add -N new
	git write-tree >/dev/null
	# git's cache tree leaves the root invalid while an entry is intent-to-add.
	no_tree
}

@test "index v4 (prefix-compressed names): the tree write-tree prints" {
	new_repo
	git update-index --index-version 4
	assert_equal "$(index_version)" 4
	matches_write_tree
}

@test "a path longer than 0xFFF bytes, in index v2, v3 and v4" {
	local path blob v
	new_repo
	path=$(long_path)
	[ "${#path}" -gt 4095 ]
	blob=$(echo long | git hash-object -w --stdin)
	git update-index --add --cacheinfo "100644,$blob,$path"
	git write-tree >/dev/null
	matches_write_tree
	git update-index --skip-worktree top
	assert_equal "$(index_version)" 3
	git write-tree >/dev/null
	matches_write_tree
	git update-index --index-version 4
	assert_equal "$(index_version)" 4
	matches_write_tree
	git update-index --no-skip-worktree top
	git update-index --index-version 2
	assert_equal "$(index_version)" 2
	git write-tree >/dev/null
	matches_write_tree
}

@test "a changed file added without write-tree: the root is invalid, exit 1; after write-tree, the new tree" {
	new_repo
	echo changed >>a/b/c/f
	git update-index --add a/b/c/f
	no_tree
	git write-tree >/dev/null
	matches_write_tree
	run git rev-parse 'HEAD^{tree}'
	refute_output "$(git write-tree)"
}

@test "git read-tree HEAD primes the cache tree: HEAD's tree" {
	new_repo
	echo changed >>top
	git add top
	git write-tree >/dev/null
	git read-tree HEAD
	matches_write_tree
	assert_output "$(git rev-parse 'HEAD^{tree}')"
}

@test "an empty index (git read-tree --empty): the empty tree" {
	new_repo
	git read-tree --empty
	matches_write_tree
	assert_output 4b825dc642cb6eb9a060e54bf8d69288fbee4904
}

@test "no cache tree (git add in a new repository): exit 1" {
	git init -q "$SCRATCH/repo"
	cd "$SCRATCH/repo"
	echo 1 >f
	git add f
	no_tree
	git write-tree >/dev/null
	matches_write_tree
}

@test "a split index (link extension) and a sparse index (sdir extension): exit 1" {
	new_repo
	git update-index --split-index
	no_tree
	git update-index --no-split-index
	matches_write_tree
	git sparse-checkout set --cone --sparse-index a
	git write-tree >/dev/null
	no_tree
}

@test "an unmerged index (a merge conflict): exit 1" {
	new_repo
	git checkout -qb other
	echo theirs >top
	git commit -qam theirs
	git checkout -q main
	echo ours >top
	git commit -qam ours
	run git merge other
	assert_failure
	no_tree
}

@test "index versions it does not read (1, 5): exit 1" {
	new_repo
	poke .git/index 7 '\001'
	no_tree
	poke .git/index 7 '\005'
	no_tree
}

@test "file names with a newline and a leading dash: the tree write-tree prints" {
	new_repo
	echo nl >"$SCRATCH/repo/a/new"$'\n'"line"
	echo dash >"$SCRATCH/repo/-dash"
	git add -- a -dash
	git commit -qm names
	matches_write_tree
	git update-index --index-version 4
	matches_write_tree
}

@test "exit 65: truncated copies of an index, at several points" {
	local size cut
	new_repo
	size=$(stat -c %s .git/index)
	for cut in 0 4 11 12 31 40 72 80 100 $((size / 2)) $((size - 21)) $((size - 20)) $((size - 1)); do
		head -c "$cut" .git/index >"$SCRATCH/cut-$cut"
		not_an_index "$SCRATCH/cut-$cut"
	done
}

@test "exit 65: random bytes, garbage after a DIRC header, a bad name length, an extended entry in v2, a byte after the checksum" {
	new_repo
	python3 -c 'import random, sys; random.seed(1); sys.stdout.buffer.write(bytes(random.randrange(256) for _ in range(4096)))' >"$SCRATCH/random"
	not_an_index "$SCRATCH/random"
	{ printf 'DIRC\0\0\0\2\0\0\0\5'; head -c 100 "$SCRATCH/random"; } >"$SCRATCH/garbage"
	not_an_index "$SCRATCH/garbage"
	# The first entry, a/b/c/f: its flags at 12 + 40 + 20 say 7 bytes.
	cp .git/index "$SCRATCH/length"
	poke "$SCRATCH/length" 72 '\000\010'
	not_an_index "$SCRATCH/length"
	cp .git/index "$SCRATCH/extended"
	poke "$SCRATCH/extended" 72 '\100\007'
	not_an_index "$SCRATCH/extended"
	cp .git/index "$SCRATCH/longer"
	printf x >>"$SCRATCH/longer"
	not_an_index "$SCRATCH/longer"
}

@test "exit 65: a FIFO (without blocking), a symbolic link to a good index, a folder" {
	new_repo
	mkfifo "$SCRATCH/fifo"
	run --separate-stderr timeout 10 "$IT" "$SCRATCH/fifo"
	assert_failure 65
	not_an_index "$SCRATCH/fifo"
	ln -s "$SCRATCH/repo/.git/index" "$SCRATCH/link"
	not_an_index "$SCRATCH/link"
	not_an_index "$SCRATCH/repo/.git"
}

@test "exit 74: a missing file, and a stdout that cannot be written" {
	new_repo
	run --separate-stderr "$IT" "$SCRATCH/missing"
	assert_failure 74
	assert_equal "${stderr_lines[0]}" "forge-index-tree: error: cannot open $SCRATCH/missing: No such file or directory"
	run bash -c '"$1" .git/index >/dev/full' _ "$IT"
	assert_failure 74
}

@test "exit 64: no argument, two, an unknown option; -- ends the options; - is a file name" {
	new_repo
	run --separate-stderr "$IT"
	assert_failure 64
	run --separate-stderr "$IT" .git/index .git/index
	assert_failure 64
	run --separate-stderr "$IT" --sha512 .git/index
	assert_failure 64
	cp .git/index ./-index
	cp .git/index ./-
	run --separate-stderr "$IT" -index
	assert_failure 64
	run --separate-stderr "$IT" -- -index
	assert_success
	assert_output "$(git write-tree)"
	run --separate-stderr "$IT" ./-index
	assert_output "$(git write-tree)"
	run --separate-stderr "$IT" -
	assert_output "$(git write-tree)"
	run --separate-stderr "$IT" -- --help
	assert_failure 74
}

@test "--help describes the exit statuses" {
	run --separate-stderr "$IT" --help
	assert_success
	assert_line 'EXIT STATUS'
	assert_line --regexp '^  65  '
}

# mutate SEED INDEX FOLDER: 100 copies of INDEX in FOLDER, each with one
# random byte replaced or cut at a random point (python's seeded random).
mutate() {
	python3 - "$@" <<-'EOF'
	import random, sys
	random.seed(int(sys.argv[1]))
	data = open(sys.argv[2], "rb").read()
	for n in range(100):
	    b = bytearray(data)
	    if random.random() < 0.7:
	        b[random.randrange(len(b))] = random.randrange(256)
	    else:
	        del b[random.randrange(len(b)):]
	    open("%s/%03d" % (sys.argv[3], n), "wb").write(b)
	EOF
}

@test "200 mutated indexes (a byte flipped, or cut): each exits 0, 1 or 65, with only its one error line" {
	local f rc bad=
	new_repo
	mkdir "$SCRATCH/mut" "$SCRATCH/mut4"
	mutate 1 .git/index "$SCRATCH/mut"
	git update-index --index-version 4
	mutate 2 .git/index "$SCRATCH/mut4"
	for f in "$SCRATCH"/mut/* "$SCRATCH"/mut4/*; do
		rc=0
		"$IT" "$f" >"$SCRATCH/out" 2>"$SCRATCH/err" || rc=$?
		case $rc in
		0) grep -qxE '[0-9a-f]{40}' "$SCRATCH/out" && [ ! -s "$SCRATCH/err" ] || bad="$bad $f:$rc" ;;
		1) [ ! -s "$SCRATCH/out" ] && [ ! -s "$SCRATCH/err" ] || bad="$bad $f:$rc" ;;
		65) [ ! -s "$SCRATCH/out" ] && [ "$(grep -c '^forge-index-tree: error: ' "$SCRATCH/err")" = 1 ] &&
			[ "$(wc -l <"$SCRATCH/err")" = 1 ] || bad="$bad $f:$rc" ;;
		*) bad="$bad $f:$rc" ;;
		esac
	done
	assert_equal "$bad" ''
}
