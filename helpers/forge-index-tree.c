/*
 * forge-index-tree — the tree a git index's cache tree (its TREE extension)
 * records for the whole index, read from the index file alone: what git
 * write-tree prints when the root of the cache tree is valid, without the
 * stat calls it makes to see that the tree objects exist. Internal to
 * forge-verify --reuse (lib-sh/forge-reuse-tree.sh), which runs git
 * write-tree when this exits 1. The format: git's gitformat-index(5).
 *
 * The file is read into memory (a file truncated under an mmap would be a
 * SIGBUS), and every offset is checked against its length.
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forge-util.h"

/* No valid tree for the whole index: the caller runs git write-tree. */
enum { EXIT_NO_TREE = 1 };

const char forge_help[] =
	"usage: forge-index-tree [--sha1|--sha256] [--] INDEX\n"
	"       forge-index-tree -h | --help | --version\n"
	"\n"
	"Print the object name (hex) of the tree that the cache tree of the git\n"
	"index INDEX (its TREE extension) records for the whole index, and a\n"
	"newline: what git write-tree prints for INDEX when the root of its cache\n"
	"tree is valid, read from the file alone (no object is looked up).\n"
	"Index versions 2, 3 and 4; the trailing checksum is not verified (nor\n"
	"does git, by default). INDEX is never opened through a symbolic link\n"
	"and must be a regular file.\n"
	"\n"
	"  --sha1      the index of a sha1 repository (40 hex digits; the default)\n"
	"  --sha256    the index of a sha256 repository (64 hex digits, not 40)\n"
	"  --          the end of the options (for an INDEX that starts with '-')\n"
	"  -h, --help  print this help and exit\n"
	"  --version   print the version and exit\n"
	"\n"
	"EXIT STATUS\n"
	"  0   the tree is printed\n"
	"  1   INDEX records no valid tree for the whole index (run git write-tree):\n"
	"      no cache tree, its root invalidated or not counting every entry, an\n"
	"      unmerged entry, a split or sparse index (or any other extension git\n"
	"      requires a reader to know), an index version but 2, 3 and 4\n"
	"  64  a usage error\n"
	"  65  INDEX is not a git index: no DIRC signature, truncated, an entry or\n"
	"      an extension that runs past its end, a malformed entry, extensions\n"
	"      that do not end at the checksum; or it is not a regular file\n"
	"  74  INDEX cannot be opened or read, or stdout cannot be written\n";

static const char *index_path;
static unsigned char *data; /* the file (a global: never a leak at exit) */

static FORGE_NORETURN void bad(const char *what)
{
	die(EXIT_DATA, "%s: not a git index: %s", index_path, what);
}

static size_t read_index(void)
{
	struct stat st;
	size_t cap, len = 0;
	int fd = open(index_path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ELOOP)
		die(EXIT_DATA, "%s: a symbolic link (refused)", index_path);
	if (fd < 0)
		die(EXIT_IOERR, "cannot open %s: %s", index_path, strerror(errno));
	if (fstat(fd, &st) != 0)
		die(EXIT_IOERR, "cannot stat %s: %s", index_path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		die(EXIT_DATA, "%s: not a regular file", index_path);
	if ((uintmax_t)st.st_size >= SIZE_MAX / 2)
		bad("too large");
	cap = (size_t)st.st_size + 1; /* + 1: the read that finds the end */
	if (!(data = malloc(cap)))
		die(EXIT_INTERNAL, "out of memory");
	for (;;) {
		ssize_t n;

		if (len == cap) { /* it grew since fstat */
			unsigned char *more;

			if (cap >= SIZE_MAX / 2)
				bad("too large");
			if (!(more = realloc(data, cap *= 2)))
				die(EXIT_INTERNAL, "out of memory");
			data = more;
		}
		n = read(fd, data + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(EXIT_IOERR, "cannot read %s: %s", index_path, strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (close(fd) != 0)
		die(EXIT_IOERR, "cannot read %s: %s", index_path, strerror(errno));
	return len;
}

static uint32_t be(const unsigned char *p, int bytes)
{
	uint32_t v = 0;

	while (bytes-- > 0)
		v = v << 8 | *p++;
	return v;
}

/*
 * Walks the NR entries from offset 12 to END (the checksum); returns the
 * offset after them. *UNMERGED: one of them is at a stage other than 0.
 */
static size_t skip_entries(size_t end, uint32_t nr, uint32_t version, size_t hashsz, int *unmerged)
{
	size_t off = 12, prev = 0; /* prev: the previous name's length (v4) */

	for (; nr > 0; nr--) {
		size_t fixed = 40 + hashsz + 2, namelen, strip = 0, room;
		uint32_t flags, flen;
		const unsigned char *name, *nul;

		if (end - off < fixed)
			bad("an entry runs past the end");
		flags = be(data + off + fixed - 2, 2);
		flen = flags & 0xFFF;
		*unmerged |= (flags & 0x3000) != 0;
		if (flags & 0x4000) { /* extended: intent-to-add, skip-worktree */
			if (version < 3)
				bad("an extended entry in a version 2 index");
			if (end - off < fixed + 2)
				bad("an entry runs past the end");
			if (be(data + off + fixed, 2) & ~0x6000u)
				bad("an entry with unknown extended flags");
			fixed += 2;
		}
		name = data + off + fixed;
		room = end - off - fixed;
		if (version == 4) { /* varint: how much of prev the name keeps */
			unsigned char c = 0x80;

			while (c & 0x80) {
				if (room-- == 0)
					bad("an entry runs past the end");
				c = *name++;
				if (strip > prev >> 7 || (strip = strip << 7 | (c & 0x7F)) > prev)
					bad("an entry's name strips more than its predecessor's");
				if (c & 0x80)
					strip++;
			}
		}
		nul = memchr(name, '\0', room);
		if (!nul)
			bad("an entry's name runs past the end");
		namelen = prev - strip + (size_t)(nul - name);
		if (flen != 0xFFF && flen != namelen)
			bad("an entry's name is not as long as its flags say");
		if (version == 4)
			off = (size_t)(nul + 1 - data);
		else if ((off += (fixed + namelen + 8) & ~(size_t)7) > end)
			bad("an entry runs past the end");
		prev = version == 4 ? namelen : 0;
	}
	return off;
}

/* A cache tree's [-]DIGITS and TERM at *I; -1 for any negative number. */
static int number(const unsigned char *p, size_t len, size_t *i, long long *v, int term)
{
	int minus = *i < len && p[*i] == '-';
	size_t j = *i + (size_t)minus, start = j;
	long long n = 0;

	for (; j < len && p[j] >= '0' && p[j] <= '9'; j++)
		if ((n = n * 10 + (p[j] - '0')) > 0xFFFFFFFFLL)
			return 0;
	if (j == start || j == len || p[j] != term)
		return 0;
	*v = minus ? -1 : n;
	*i = j + 1;
	return 1;
}

/*
 * The root's object name in the TREE extension P (LEN bytes), or NULL when
 * it records none valid for NR entries. The root comes first: path "" NUL,
 * entry count SP subtree count LF, then (count >= 0) the object name.
 */
static const unsigned char *root_tree(const unsigned char *p, size_t len, uint32_t nr, size_t hashsz)
{
	size_t i = 1;
	long long count, subtrees;

	if (len == 0 || p[0] != '\0' || !number(p, len, &i, &count, ' ') ||
	    !number(p, len, &i, &subtrees, '\n') || count != (long long)nr || len - i < hashsz)
		return NULL;
	return p + i;
}

int main(int argc, char **argv)
{
	size_t hashsz = 20, len, end, off, i, tree_len = 0;
	const unsigned char *tree = NULL, *root;
	uint32_t version, nr;
	int dashdash = 0, unmerged = 0, required = 0;
	static const char hex[] = "0123456789abcdef";
	char out[2 * 32 + 1];

	for (i = 1; i < (size_t)argc; i++) {
		const char *a = argv[i];

		if (!dashdash && a[0] == '-' && a[1] != '\0') {
			help_option(a);
			if (strcmp(a, "--") == 0)
				dashdash = 1;
			else if (strcmp(a, "--sha1") == 0)
				hashsz = 20;
			else if (strcmp(a, "--sha256") == 0)
				hashsz = 32;
			else
				die(EXIT_USAGE, "unknown option '%s'", a);
		} else if (index_path) {
			die(EXIT_USAGE, "one INDEX only");
		} else {
			index_path = a;
		}
	}
	if (!index_path)
		die(EXIT_USAGE, "no INDEX given");
	len = read_index();
	if (len < 12 + hashsz)
		bad("shorter than a header and a checksum");
	if (memcmp(data, "DIRC", 4) != 0)
		bad("no DIRC signature");
	version = be(data + 4, 4);
	nr = be(data + 8, 4);
	if (version < 2 || version > 4)
		return EXIT_NO_TREE;
	end = len - hashsz;
	off = skip_entries(end, nr, version, hashsz, &unmerged);
	while (off < end) { /* extensions: signature, size, data */
		uint32_t size;

		if (end - off < 8 || (size = be(data + off + 4, 4)) > end - off - 8)
			bad("an extension runs past the end");
		if (memcmp(data + off, "TREE", 4) == 0) /* (git reads the last) */
			tree = data + off + 8, tree_len = size;
		else if (data[off] < 'A' || data[off] > 'Z')
			required = 1; /* link (split index), sdir (sparse index), ... */
		off += 8 + (size_t)size;
	}
	if (!tree || unmerged || required || !(root = root_tree(tree, tree_len, nr, hashsz)))
		return EXIT_NO_TREE;
	for (i = 0; i < hashsz; i++)
		out[2 * i] = hex[root[i] >> 4], out[2 * i + 1] = hex[root[i] & 15];
	out[2 * hashsz] = '\n';
	if (fwrite(out, 1, 2 * hashsz + 1, stdout) != 2 * hashsz + 1 || fflush(stdout) != 0)
		die(EXIT_IOERR, "cannot write the tree: %s", strerror(errno));
	return 0;
}
