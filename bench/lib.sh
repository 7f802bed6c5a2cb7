# bench/lib.sh — what the benchmarks share; sourced, not run.
# shellcheck shell=sh

# bench_repo DIR FILES [DIRS]: a repository of FILES files of 4 KiB in DIRS
# (FILES/20) folders, committed, then 50 of them modified and 20 untracked
# files added: the working state an agent loop verifies. The index is
# settled, as in a repository in use (git status refreshes it).
bench_repo() {
	echo "building $1: $2 files in ${3:-$(($2 / 20))} folders..." >&2
	mkdir -p "$1"
	git -C "$1" init -q
	(cd "$1" && awk -v files="$2" -v dirs="${3:-$(($2 / 20))}" 'BEGIN {
		srand(42)
		line = ""
		for (i = 0; i < 64; i++) line = line sprintf("%c", 97 + int(rand() * 26))
		for (i = 0; i < files; i++) {
			d = sprintf("d%04d", i % dirs)
			if (!(d in made)) { system("mkdir -p " d); made[d] = 1 }
			f = sprintf("%s/f%05d.txt", d, i)
			for (j = 0; j < 56; j++) printf "%05d %s\n", j, line > f
			close(f)
		}
	}')
	git -C "$1" add -A
	git -C "$1" commit -q -m synthetic
	# 50 modified files spread over the tree.
	git -C "$1" ls-files | awk -v n="$2" 'NR % int(n / 50) == 1' | head -n 50 |
		while IFS= read -r f; do echo modified >>"$1/$f"; done
	i=0
	while [ "$i" -lt 20 ]; do
		echo untracked >"$1/d$(printf %04d "$i")/new-$i.txt"
		i=$((i + 1))
	done
	git -C "$1" status --porcelain >/dev/null
	echo "modified: $(git -C "$1" diff --name-only | wc -l), untracked: $(git -C "$1" ls-files --others --exclude-standard | wc -l)" >&2
}

# now_ms: prints the wall clock in milliseconds.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
