/*
 * libFuzzer harness for forge-netrule (build: make fuzz-netrule).
 *
 * Input: entries separated by '\n', as on forge-netrule's stdin; when the
 * first line is exactly "--secret-hosts" the rest are secret hosts.
 * Aborts when an invariant of SPEC 4.3 breaks:
 *   - no emitted rule target holds ',' ':' '@' whitespace or anything but
 *     [a-z0-9._-] (plus the '*' of '*.' and the '=' of domain=/suffix=), and
 *     each one is valid when fed back in;
 *   - the mode is "open" only if an allow entry was exactly '*' or '**'
 *     after trimming (never for secret hosts);
 *   - the JSON document is valid UTF-8 with no raw control bytes, and the
 *     warnings are printable ASCII lines.
 * Crashes and sanitizer findings end the run by themselves.
 */
#define FORGE_NETRULE_NO_MAIN
#include "../helpers/forge-netrule.c"

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-netrule: invariant violated: %s\n", what);
		abort();
	}
}

static char *render(void (*print)(FILE *, const struct netrule_list *),
	const struct netrule_list *list, size_t *size)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, size);

	require(f != NULL, "open_memstream");
	print(f, list);
	require(fclose(f) == 0, "fclose");
	return buf;
}

/* Whether a raw line is '*' or '**' once trimmed, decided independently of netrule_trim. */
static int is_wildcard_line(const uint8_t *s, size_t n)
{
	size_t b = 0, e = n;

	while (b < e && strchr(" \t\n\v\f\r", s[b]) && s[b])
		b++;
	while (e > b && strchr(" \t\n\v\f\r", s[e - 1]) && s[e - 1])
		e--;
	return (e - b == 1 && s[b] == '*') || (e - b == 2 && s[b] == '*' && s[b + 1] == '*');
}

static void check_target(const char *t, size_t n)
{
	char reason[NETRULE_REASON_MAX];
	size_t i;

	require(n > 0, "empty rule target");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];

		require(c != ',' && c != ':' && c != '@' && !netrule_is_space(c),
			"rule target holds ',' ':' '@' or whitespace");
		require((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'
			|| c == '_' || c == '*' || c == '=', "rule target holds an unexpected byte");
	}
	require(netrule_classify(t, n, 0, reason) == NETRULE_HOST, "a rule target is not valid itself");
}

static void check_flags(const char *out, size_t size, const struct netrule_list *list)
{
	static const char deny[] = "--net-default deny\n", rule[] = "--net-rule allow@";
	const char *p = out, *end = out + size, *nl;
	size_t rules = 0;

	if (netrule_list_mode(list) != NETRULE_MODE_RESTRICTED) {
		require(size == 0, "flags printed outside restricted mode");
		return;
	}
	require(size >= sizeof deny - 1 && memcmp(p, deny, sizeof deny - 1) == 0,
		"restricted output does not start with --net-default deny");
	for (p += sizeof deny - 1; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		require(nl != NULL, "unterminated line");
		require((size_t)(nl - p) > sizeof rule - 1 && memcmp(p, rule, sizeof rule - 1) == 0,
			"line is not --net-rule allow@TARGET");
		check_target(p + sizeof rule - 1, (size_t)(nl - p) - (sizeof rule - 1));
		rules++;
	}
	require(rules == list->hosts, "rule count differs from valid entries");
}

static void check_json(const char *out, size_t size)
{
	size_t i = 0, len;

	require(size > 10 && memcmp(out, "{\"mode\":\"", 9) == 0 && memcmp(out + size - 3, "]}\n", 3) == 0,
		"json document shape");
	while (i < size - 1) {
		unsigned char c = (unsigned char)out[i];

		require(c >= 0x20 && c != 0x7f, "raw control byte in json");
		len = netrule_utf8_len((const unsigned char *)out + i, size - i);
		require(len > 0, "invalid UTF-8 in json");
		i += len;
	}
}

static void check_warnings(const char *out, size_t size)
{
	size_t i;

	for (i = 0; i < size; i++) {
		unsigned char c = (unsigned char)out[i];

		require((c >= 0x20 && c < 0x7f) || c == '\n', "non-printable byte in a warning");
	}
	require(size == 0 || out[size - 1] == '\n', "unterminated warning");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char secret_line[] = "--secret-hosts\n";
	struct netrule_list list;
	const uint8_t *p = data, *end = data + size, *nl;
	int any_wildcard = 0;
	size_t lines = 0, out_size;
	char *out;

	memset(&list, 0, sizeof list);
	if (size >= sizeof secret_line - 1 && memcmp(data, secret_line, sizeof secret_line - 1) == 0) {
		list.secret_hosts = 1;
		p += sizeof secret_line - 1;
	}
	for (; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		any_wildcard |= is_wildcard_line(p, (size_t)(nl - p));
		require(netrule_list_add(&list, (const char *)p, (size_t)(nl - p)) == 0, "out of memory");
		lines++;
	}

	require(list.count <= lines, "more entries than lines");
	require(list.hosts + list.rejected + list.wildcards == list.count, "entry counts disagree");
	if (netrule_list_mode(&list) == NETRULE_MODE_OPEN)
		require(any_wildcard && !list.secret_hosts, "open without an allow entry '*' or '**'");
	if (any_wildcard && !list.secret_hosts)
		require(netrule_list_mode(&list) == NETRULE_MODE_OPEN, "a '*' entry did not open egress");

	out = render(netrule_print_flags, &list, &out_size);
	check_flags(out, out_size, &list);
	free(out);
	out = render(netrule_print_json, &list, &out_size);
	check_json(out, out_size);
	free(out);
	out = render(netrule_print_warnings, &list, &out_size);
	check_warnings(out, out_size);
	free(out);

	netrule_list_free(&list);
	return 0;
}
