/*
 * libFuzzer harness for forge-state's file handling (build: make fuzz-state).
 *
 * Input: the bytes of a state file. For a fixed set of updates it renders
 * the new file and aborts when a promise of SPEC 5.1 breaks:
 *   - every updated key is found again with exactly its new value, once;
 *   - every line that is not a pair of an updated key is kept verbatim and
 *     in order (unknown lines are preserved);
 *   - the new file ends with a newline and reading it back finds no torn
 *     pair (a value never contains a newline).
 * Crashes and sanitizer findings end the run by themselves.
 */
#define FORGE_STATE_NO_MAIN
#include "../helpers/forge-state.c"

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-state: invariant violated: %s\n", what);
		abort();
	}
}

/* Whether LINE (LEN bytes) is a pair of one of the N updated keys. */
static int is_updated_pair(const char *line, size_t len, const struct update *u, size_t n)
{
	size_t k = pair_key_len(line, len), i;

	for (i = 0; k && i < n; i++)
		if (u[i].key_len == k && memcmp(line, u[i].key, k) == 0)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct update u[] = {
		{ "streak", 6, "42", 0 },
		{ "n", 1, "", 0 },
		{ "new.key-1", 9, "v=w", 0 },
	};
	const size_t n = sizeof u / sizeof u[0];
	struct text old = { (char *)data, size }, out;
	size_t pos = 0, opos = 0, len, olen, i;
	const char *line, *oline;

	render(&old, u, n, &out);
	require(out.len == 0 || out.data[out.len - 1] == '\n', "no final newline");
	for (i = 0; i < n; i++) {
		size_t vlen, found = 0, p = 0, l;
		const char *v = find_value(&out, u[i].key, u[i].key_len, &vlen);
		const char *ln;

		require(v && vlen == strlen(u[i].value) && memcmp(v, u[i].value, vlen) == 0,
			"updated key not found with its value");
		while (next_line(&out, &p, &ln, &l))
			if (pair_key_len(ln, l) == u[i].key_len &&
			    memcmp(ln, u[i].key, u[i].key_len) == 0)
				found++;
		require(found == 1, "updated key not exactly once");
	}
	/* Every other line of the input, verbatim and in order. */
	while (next_line(&old, &pos, &line, &len)) {
		if (is_updated_pair(line, len, u, n))
			continue;
		for (;;) {
			require(next_line(&out, &opos, &oline, &olen), "a kept line went missing");
			if (!is_updated_pair(oline, olen, u, n))
				break;
		}
		require(olen == len && memcmp(oline, line, len) == 0, "a kept line changed");
	}
	free(out.data);
	return 0;
}
