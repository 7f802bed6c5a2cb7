/*
 * Table-driven unit tests of forge-netrule's validation and list logic
 * (SPEC 4.3). Prints TAP for automake's TAP driver.
 */
#define FORGE_NETRULE_NO_MAIN
#include "../helpers/forge-netrule.c"

#include "tap.h"

/* ------------------------------------------------------------------------ */
/* One entry: accept/reject per rule, with the reason                        */

enum { ALLOW, SECRET };

static const struct classify_case {
	const char *entry;
	int secret;
	enum netrule_class want;
	const char *reason;  /* a substring of the reason when rejected */
} classify_cases[] = {
	/* plain dotted host names */
	{ "example.com", ALLOW, NETRULE_HOST, NULL },
	{ "api.github.com", ALLOW, NETRULE_HOST, NULL },
	{ "Example.COM", ALLOW, NETRULE_HOST, NULL },
	{ "a-b_c.example.com", ALLOW, NETRULE_HOST, NULL },
	{ "a-.example.com", ALLOW, NETRULE_HOST, NULL },
	{ "1.2.3.4", ALLOW, NETRULE_HOST, NULL },
	{ "xn--caf-dma.com", ALLOW, NETRULE_HOST, NULL },
	/* blank, or a newline inside: configured, and rejected */
	{ "", ALLOW, NETRULE_REJECTED, "empty entry" },
	{ "", SECRET, NETRULE_REJECTED, "empty entry" },
	{ "a.com\nallow@any", ALLOW, NETRULE_REJECTED, "contains a newline" },
	/* the wildcard: open, but never for a secret */
	{ "*", ALLOW, NETRULE_WILDCARD, NULL },
	{ "**", ALLOW, NETRULE_WILDCARD, NULL },
	{ "*", SECRET, NETRULE_REJECTED, "a wildcard cannot be a secret host" },
	{ "**", SECRET, NETRULE_REJECTED, "a wildcard cannot be a secret host" },
	{ "***", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	/* ',' */
	{ "a.com,b.com", ALLOW, NETRULE_REJECTED, "contains ','" },
	{ ",", ALLOW, NETRULE_REJECTED, "contains ','" },
	/* ':' */
	{ "example.com:443", ALLOW, NETRULE_REJECTED, "contains ':' (use the example.com:tcp:443 rule form)" },
	{ "example.com:tcp:443", ALLOW, NETRULE_REJECTED, "contains ':'" },
	{ "[::1]", ALLOW, NETRULE_REJECTED, "contains ':'" },
	/* '@' */
	{ "user@example.com", ALLOW, NETRULE_REJECTED, "contains '@'" },
	{ "allow@example.com", ALLOW, NETRULE_REJECTED, "contains '@'" },
	/* whitespace inside, '/', a scheme */
	{ "exa mple.com", ALLOW, NETRULE_REJECTED, "contains whitespace" },
	{ "example.com\tb.com", ALLOW, NETRULE_REJECTED, "contains whitespace" },
	{ "a.com\nb.com", ALLOW, NETRULE_REJECTED, "contains a newline" },
	{ "example.com/path", ALLOW, NETRULE_REJECTED, "contains '/'" },
	{ "10.0.0.0/8", ALLOW, NETRULE_REJECTED, "contains '/'" },
	{ "https://example.com", ALLOW, NETRULE_REJECTED, "looks like a URL" },
	{ "ftp://example.com/x", ALLOW, NETRULE_REJECTED, "looks like a URL" },
	/* '*.X' needs two labels in X; '*' anywhere else is rejected */
	{ "*.example.com", ALLOW, NETRULE_HOST, NULL },
	{ "*.a.b.c", ALLOW, NETRULE_HOST, NULL },
	{ "*.com", ALLOW, NETRULE_REJECTED, "needs at least two labels after '*.'" },
	{ "*.", ALLOW, NETRULE_REJECTED, "empty label" },
	{ "*..com", ALLOW, NETRULE_REJECTED, "empty label" },
	{ "*.*.example.com", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	{ "a.*.example.com", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	{ "a*.example.com", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	{ "example.com*", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	{ "*example.com", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	{ "*.example.com", SECRET, NETRULE_HOST, NULL },
	/* suffix= needs two labels */
	{ "suffix=example.com", ALLOW, NETRULE_HOST, NULL },
	{ "SUFFIX=Example.com", ALLOW, NETRULE_HOST, NULL },
	{ "suffix=com", ALLOW, NETRULE_REJECTED, "needs at least two labels after 'suffix='" },
	{ "suffix=", ALLOW, NETRULE_REJECTED, "'suffix=' needs a host name" },
	{ "suffix=*.example.com", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	{ "suffix=example.com", SECRET, NETRULE_REJECTED, "cannot be secret hosts" },
	/* domain= passes a single label through */
	{ "domain=localhost", ALLOW, NETRULE_HOST, NULL },
	{ "domain=example.com", ALLOW, NETRULE_HOST, NULL },
	{ "Domain=Intranet", ALLOW, NETRULE_HOST, NULL },
	{ "domain=", ALLOW, NETRULE_REJECTED, "'domain=' needs a host name" },
	{ "domain=*.example.com", ALLOW, NETRULE_REJECTED, "'*' is only allowed" },
	{ "domain=a..b", ALLOW, NETRULE_REJECTED, "empty label" },
	{ "domain=localhost", SECRET, NETRULE_REJECTED, "cannot be secret hosts" },
	/* no dot */
	{ "localhost", ALLOW, NETRULE_REJECTED, "has no dot (use domain=NAME for a single-label host)" },
	{ "any", ALLOW, NETRULE_REJECTED, "has no dot" },
	{ "localhost", SECRET, NETRULE_REJECTED, "has no dot" },
	/* empty labels, label length */
	{ ".example.com", ALLOW, NETRULE_REJECTED, "empty label" },
	{ "example.com.", ALLOW, NETRULE_REJECTED, "empty label" },
	{ "example..com", ALLOW, NETRULE_REJECTED, "empty label" },
	{ ".", ALLOW, NETRULE_REJECTED, "empty label" },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", ALLOW, NETRULE_HOST, NULL },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com", ALLOW, NETRULE_REJECTED,
	  "label longer than 63 characters" },
	/* what msb's name parser refuses (checked on 0.6.18) */
	{ "-a.example.com", ALLOW, NETRULE_REJECTED, "label starts with '-'" },
	{ "a!b.com", ALLOW, NETRULE_REJECTED, "contains '!'" },
	{ "foo=bar.com", ALLOW, NETRULE_REJECTED, "contains '='" },
	{ "a'b.com", ALLOW, NETRULE_REJECTED, "\\x27" },
	{ "caf\xc3\xa9.com", ALLOW, NETRULE_REJECTED, "\\xc3" },
	{ "a\x7f" "b.com", ALLOW, NETRULE_REJECTED, "\\x7f" },
};

/* The entry as the warnings print it, so a TAP line stays one line. */
static char *quoted(const char *s)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f) {
		puts("Bail out! open_memstream failed");
		exit(1);
	}
	netrule_put_quoted(f, s, strlen(s));
	if (fclose(f) != 0) {
		puts("Bail out! fclose failed");
		exit(1);
	}
	return buf;
}

static void test_classify(void)
{
	size_t i;

	for (i = 0; i < sizeof classify_cases / sizeof classify_cases[0]; i++) {
		const struct classify_case *c = &classify_cases[i];
		char reason[NETRULE_REASON_MAX];
		enum netrule_class got = netrule_classify(c->entry, strlen(c->entry), c->secret, reason);
		int pass = got == c->want
			&& (c->reason ? strstr(reason, c->reason) != NULL : reason[0] == '\0');
		char *entry = quoted(c->entry);

		static const char *const verb[] = { "drops", "opens egress on", "accepts", "rejects" };

		ok(pass, "%s %s '%s'%s%s", verb[c->want], c->secret ? "secret host" : "entry",
			entry, pass ? "" : " -- got: ", pass ? "" : reason);
		free(entry);
	}
}

static void test_name_length(void)
{
	char name[300], reason[NETRULE_REASON_MAX];
	size_t i;

	/* four labels of 63 bytes make 255: too long; 63+63+63+61 = 253 fits */
	for (i = 0; i < 255; i++)
		name[i] = (i + 1) % 64 == 0 ? '.' : 'a';
	ok(netrule_classify(name, 255, 0, reason) == NETRULE_REJECTED
		&& strstr(reason, "longer than 253") != NULL, "rejects a 255-byte name");
	ok(netrule_classify(name, 253, 0, reason) == NETRULE_HOST, "accepts a 253-byte name");
}

static void test_trim(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "  example.com  ", "example.com" },
		{ "\t\r\n\v\fexample.com\r\n", "example.com" },
		{ "   ", "" },
		{ "a b", "a b" },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *s = cases[i].in;
		size_t n = strlen(s);

		netrule_trim(&s, &n);
		ok(n == strlen(cases[i].out) && memcmp(s, cases[i].out, n) == 0,
			"trims leading and trailing ASCII whitespace (case %zu)", i + 1);
	}
}

/* ------------------------------------------------------------------------ */
/* The list                                                                  */

static void list_of(struct netrule_list *list, int secret, const char *const *entries)
{
	memset(list, 0, sizeof *list);
	list->secret_hosts = secret;
	for (; *entries; entries++)
		if (netrule_list_add(list, *entries, strlen(*entries)) != 0) {
			puts("Bail out! out of memory");
			exit(1);
		}
}

/* Renders one of the print functions into a string (caller frees). */
static char *render(void (*print)(FILE *, const struct netrule_list *), const struct netrule_list *list)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f) {
		puts("Bail out! open_memstream failed");
		exit(1);
	}
	print(f, list);
	if (fclose(f) != 0) {
		puts("Bail out! fclose failed");
		exit(1);
	}
	return buf;
}

static void expect_output(void (*print)(FILE *, const struct netrule_list *), int secret,
	const char *const *entries, const char *want, const char *what)
{
	struct netrule_list list;
	char *got;

	list_of(&list, secret, entries);
	got = render(print, &list);
	ok(strcmp(got, want) == 0, "%s", what);
	if (strcmp(got, want) != 0)
		printf("# want: %s# got:  %s", want, got);
	free(got);
	netrule_list_free(&list);
}

static void test_list(void)
{
	static const char *const none[] = { NULL };
	static const char *const blanks[] = { "", "  ", "\t\n", NULL };
	static const char *const valid[] = { " example.com ", "*.github.com", "domain=intranet", NULL };
	static const char *const dupes[] = { "Example.com", "example.COM", " example.com", "b.com", "B.COM", NULL };
	static const char *const wild[] = { "example.com", "*", "bad", NULL };
	static const char *const allbad[] = { "bad", "x.com:443", NULL };
	static const char *const mixed[] = { "localhost", "api.example.com", NULL };
	static const char *const secret[] = { "*", "api.example.com", NULL };
	static const char *const hostile[] = { "a\"b\\c\x01\xff\xc3\xa9\xed\xa0\x80z", NULL };
	struct netrule_list list;

	expect_output(netrule_print_flags, ALLOW, none, "", "no entries: no flags");
	expect_output(netrule_print_json, ALLOW, none,
		"{\"mode\":\"default\",\"rules\":[],\"rejected\":[]}\n", "no entries: mode default");
	expect_output(netrule_print_flags, ALLOW, blanks, "--net-default deny\n",
		"blank entries are configured and rejected: deny, never msb's allow-all");
	expect_output(netrule_print_json, ALLOW, blanks,
		"{\"mode\":\"restricted\",\"rules\":[],\"rejected\":[{\"entry\":\"\",\"reason\":"
		"\"empty entry (a blank entry is rejected, not ignored)\"}]}\n",
		"json: blanks reported once, with the reason");
	expect_output(netrule_print_flags, ALLOW, valid,
		"--net-default deny\n--net-rule allow@example.com\n"
		"--net-rule allow@*.github.com\n--net-rule allow@domain=intranet\n",
		"valid entries: deny plus one allow rule each, in order");
	expect_output(netrule_print_flags, ALLOW, dupes,
		"--net-default deny\n--net-rule allow@example.com\n--net-rule allow@b.com\n",
		"duplicates removed case-insensitively, rules lowercased");
	expect_output(netrule_print_flags, ALLOW, wild, "", "a wildcard overrides every other entry");
	expect_output(netrule_print_json, ALLOW, wild,
		"{\"mode\":\"open\",\"rules\":[],\"rejected\":[{\"entry\":\"bad\",\"reason\":"
		"\"has no dot (use domain=NAME for a single-label host)\"}]}\n",
		"a wildcard: mode open, rejected entries still reported");
	expect_output(netrule_print_flags, ALLOW, allbad, "--net-default deny\n",
		"every entry rejected: deny alone");
	expect_output(netrule_print_warnings, ALLOW, allbad,
		"forge-netrule: warning: rejected 'bad': has no dot (use domain=NAME for a single-label host)\n"
		"forge-netrule: warning: rejected 'x.com:443': contains ':' (use the example.com:tcp:443 rule form)\n"
		"forge-netrule: warning: every entry was rejected; egress is fully denied\n",
		"every entry rejected: one warning each, then fully denied");
	expect_output(netrule_print_json, ALLOW, mixed,
		"{\"mode\":\"restricted\",\"rules\":[\"allow@api.example.com\"],\"rejected\":"
		"[{\"entry\":\"localhost\",\"reason\":\"has no dot (use domain=NAME for a single-label host)\"}]}\n",
		"json: restricted with the rules and the rejected entries");
	expect_output(netrule_print_flags, SECRET, secret,
		"--net-default deny\n--net-rule allow@api.example.com\n",
		"secret hosts: '*' never widens egress");
	expect_output(netrule_print_json, ALLOW, hostile,
		"{\"mode\":\"restricted\",\"rules\":[],\"rejected\":[{\"entry\":"
		"\"a\\\"b\\\\c\\u0001\\ufffd\xc3\xa9\\ufffd\\ufffd\\ufffdz\",\"reason\":"
		"\"contains '\\\"', which is not allowed in a host name\"}]}\n",
		"json: quotes, control bytes and invalid UTF-8 (incl. a surrogate) escaped");
	expect_output(netrule_print_warnings, ALLOW, hostile,
		"forge-netrule: warning: rejected 'a\"b\\\\c\\x01\\xff\\xc3\\xa9\\xed\\xa0\\x80z': "
		"contains '\"', which is not allowed in a host name\n"
		"forge-netrule: warning: every entry was rejected; egress is fully denied\n",
		"warnings: hostile bytes printed as \\xNN");

	list_of(&list, ALLOW, dupes);
	ok(list.count == 2 && strcmp(list.entry[0].text, "Example.com") == 0,
		"the first spelling of a duplicate is kept");
	netrule_list_free(&list);
}

static void test_many(void)
{
	struct netrule_list list;
	char entry[64];
	size_t i, n = 100000;
	int fine = 1;

	memset(&list, 0, sizeof list);
	for (i = 0; i < 2 * n && fine; i++) {
		int len = snprintf(entry, sizeof entry, "Host%zu.Example.com", i % n);

		if (i >= n)  /* the second round repeats the first in lower case */
			for (len = 0; entry[len]; len++)
				entry[len] = (char)netrule_lower((unsigned char)entry[len]);
		fine = netrule_list_add(&list, entry, (size_t)len) == 0;
	}
	ok(fine && list.count == n && list.hosts == n, "100k entries plus 100k duplicates: 100k rules");
	netrule_list_free(&list);
}

/* ------------------------------------------------------------------------ */
/* Matching a request's host (forge-egress), with msb's semantics            */

static void test_match(void)
{
	static const struct { const char *target, *host; int want; } cases[] = {
		{ "example.com", "example.com", 1 },
		{ "example.com", "www.example.com", 0 },
		{ "example.com", "example.co", 0 },
		{ "example.com", "example.com.evil.net", 0 },
		{ "domain=intranet", "intranet", 1 },
		{ "domain=intranet", "a.intranet", 0 },
		{ "domain=example.com", "example.com", 1 },
		{ "*.example.com", "api.example.com", 1 },
		{ "*.example.com", "a.b.example.com", 1 },
		{ "*.example.com", "example.com", 1 },
		{ "*.example.com", "badexample.com", 0 },
		{ "*.example.com", "example.com.evil.net", 0 },
		{ "suffix=example.com", "example.com", 1 },
		{ "suffix=example.com", "x.example.com", 1 },
		{ "suffix=example.com", "xexample.com", 0 },
		{ "suffix=example.com", "com", 0 },
		{ "suffix=example.com", "", 0 },
		{ "example.com", "", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int got = netrule_match(cases[i].target, strlen(cases[i].target),
			cases[i].host, strlen(cases[i].host));

		ok(got == cases[i].want, "rule '%s' %s '%s'", cases[i].target,
			cases[i].want ? "matches" : "does not match", cases[i].host);
	}
}

int main(void)
{
	test_classify();
	test_name_length();
	test_trim();
	test_list();
	test_many();
	test_match();
	return tap_done();
}
