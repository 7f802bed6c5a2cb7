/*
 * forge-netrule — turn an egress allow-list into msb network flags (SPEC 4.3, 5.2).
 *
 * Entries come from the command line, or from stdin one per line. Each is
 * trimmed and duplicates (case-insensitive) removed; then either a bare '*'
 * or '**' opens egress completely, or every entry is validated and the valid
 * ones become `--net-rule allow@<entry>` behind `--net-default deny`. A
 * rejected entry is reported and left out: a typo narrows egress, it never
 * widens it. A blank entry is configured too, and rejected: only no entries
 * at all leave msb's default (no flags).
 *
 * The validation of one entry lives in netrule.c, shared with forge-egress.
 * The list logic and the output are plain functions so that
 * t/netrule-unit.c and t/fuzz-netrule.c can include this file with
 * FORGE_NETRULE_NO_MAIN defined (and link netrule.c) to test them directly.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge-util.h"
#include "netrule.h"

const char forge_help[] =
	"usage: forge-netrule [--json] [--secret-hosts] [--] [ENTRY...]\n"
	"       forge-netrule --check [--secret-hosts] [--] ENTRY\n"
	"Print the msb flags for an egress allow-list (entries from stdin, one per\n"
	"line, when none are given).\n"
	"  --json          print {\"mode\",\"rules\",\"rejected\"} as one JSON document\n"
	"  --secret-hosts  the entries are hosts of secrets: a wildcard is rejected\n"
	"  --check         exit 0 if ENTRY is valid, else 1 with the reason\n"
	"  -h, --help, --version\n";

/* ------------------------------------------------------------------------ */
/* The list: trimmed, deduplicated (case-insensitively), classified         */

struct netrule_entry {
	char *text;    /* trimmed, as given; NUL-terminated but may hold NULs */
	char *target;  /* text lowercased: the allow@ target when valid */
	size_t len;
	enum netrule_class class;
	char reason[NETRULE_REASON_MAX];
};

struct netrule_list {
	struct netrule_entry *entry;
	size_t count, cap;
	size_t *slot;  /* open-addressing hash set of entry index + 1; 0 = free */
	size_t slots;  /* a power of two, kept at least twice count */
	int secret_hosts;
	size_t hosts, rejected, wildcards;
};

enum netrule_mode { NETRULE_MODE_DEFAULT, NETRULE_MODE_OPEN, NETRULE_MODE_RESTRICTED };

static const char *const netrule_mode_name[] = { "default", "open", "restricted" };

static uint64_t netrule_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037u;  /* FNV-1a */
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211u;
	}
	return h;
}

static int netrule_list_rehash(struct netrule_list *list, size_t slots)
{
	size_t *slot = calloc(slots, sizeof *slot);
	size_t i, j;

	if (!slot)
		return -1;
	for (i = 0; i < list->count; i++) {
		j = netrule_hash(list->entry[i].target, list->entry[i].len) & (slots - 1);
		while (slot[j])
			j = (j + 1) & (slots - 1);
		slot[j] = i + 1;
	}
	free(list->slot);
	list->slot = slot;
	list->slots = slots;
	return 0;
}

/* Adds one raw entry (untrimmed). Returns -1 only when out of memory. */
static int netrule_list_add(struct netrule_list *list, const char *raw, size_t n)
{
	struct netrule_entry *e;
	size_t i, j;
	char *buf;

	netrule_trim(&raw, &n);
	if (n > (SIZE_MAX - 2) / 2)
		return -1;
	buf = malloc(2 * n + 2);
	if (!buf)
		return -1;
	memcpy(buf, raw, n);
	buf[n] = '\0';
	for (i = 0; i < n; i++)
		buf[n + 1 + i] = (char)netrule_lower((unsigned char)raw[i]);
	buf[2 * n + 1] = '\0';

	if (list->slots < 2 * (list->count + 1)
	    && netrule_list_rehash(list, list->slots ? 2 * list->slots : 64) != 0)
		goto fail;
	j = netrule_hash(buf + n + 1, n) & (list->slots - 1);
	for (; list->slot[j]; j = (j + 1) & (list->slots - 1)) {
		e = &list->entry[list->slot[j] - 1];
		if (e->len == n && memcmp(e->target, buf + n + 1, n) == 0) {
			free(buf);  /* a duplicate: the first spelling wins */
			return 0;
		}
	}
	if (list->count == list->cap) {
		size_t cap = list->cap ? 2 * list->cap : 64;
		struct netrule_entry *grown;

		if (cap > SIZE_MAX / sizeof *grown)
			goto fail;
		grown = realloc(list->entry, cap * sizeof *grown);
		if (!grown)
			goto fail;
		list->entry = grown;
		list->cap = cap;
	}
	e = &list->entry[list->count];
	e->text = buf;
	e->target = buf + n + 1;
	e->len = n;
	e->class = netrule_classify(buf, n, list->secret_hosts, e->reason);
	list->slot[j] = ++list->count;
	if (e->class == NETRULE_HOST)
		list->hosts++;
	else if (e->class == NETRULE_REJECTED)
		list->rejected++;
	else
		list->wildcards++;
	return 0;
fail:
	free(buf);
	return -1;
}

static enum netrule_mode netrule_list_mode(const struct netrule_list *list)
{
	if (list->count == 0)
		return NETRULE_MODE_DEFAULT;
	if (list->wildcards > 0)
		return NETRULE_MODE_OPEN;
	return NETRULE_MODE_RESTRICTED;
}

static void netrule_list_free(struct netrule_list *list)
{
	size_t i;

	for (i = 0; i < list->count; i++)
		free(list->entry[i].text);
	free(list->entry);
	free(list->slot);
	memset(list, 0, sizeof *list);
}

/* ------------------------------------------------------------------------ */
/* Output                                                                    */

/* Writes bytes for a human: printable ASCII as is, '\\' and '\'' escaped, the rest as \xNN. */
static void netrule_put_quoted(FILE *out, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\' || c == '\'')
			fprintf(out, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			putc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static size_t netrule_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80;
		unsigned char hi = c == 0xed ? 0x9f : 0xbf;  /* no surrogates */

		return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80;
		unsigned char hi = c == 0xf4 ? 0x8f : 0xbf;  /* nothing above U+10FFFF */

		return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80
			&& (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

/* Writes a JSON string; an invalid UTF-8 byte becomes U+FFFD, so the document always parses. */
static void netrule_put_json(FILE *out, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, len;

	putc('"', out);
	while (i < n) {
		unsigned char c = p[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '\r')
			fputs("\\r", out);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else if ((len = netrule_utf8_len(p + i, n - i)) == 0)
			fputs("\\ufffd", out);
		else {
			fwrite(p + i, 1, len, out);
			i += len;
			continue;
		}
		i++;
	}
	putc('"', out);
}

static void netrule_print_warnings(FILE *err, const struct netrule_list *list)
{
	size_t i;

	for (i = 0; i < list->count; i++) {
		const struct netrule_entry *e = &list->entry[i];

		if (e->class != NETRULE_REJECTED)
			continue;
		fprintf(err, "%s: warning: rejected '", forge_progname());
		netrule_put_quoted(err, e->text, e->len);
		fprintf(err, "': %s\n", e->reason);
	}
	if (netrule_list_mode(list) == NETRULE_MODE_RESTRICTED && list->hosts == 0)
		fprintf(err, "%s: warning: every entry was rejected; egress is fully denied\n",
			forge_progname());
}

/* One flag and its value per line; neither contains whitespace. */
static void netrule_print_flags(FILE *out, const struct netrule_list *list)
{
	size_t i;

	if (netrule_list_mode(list) != NETRULE_MODE_RESTRICTED)
		return;
	fputs("--net-default deny\n", out);
	for (i = 0; i < list->count; i++)
		if (list->entry[i].class == NETRULE_HOST)
			fprintf(out, "--net-rule allow@%s\n", list->entry[i].target);
}

static void netrule_print_json(FILE *out, const struct netrule_list *list)
{
	enum netrule_mode mode = netrule_list_mode(list);
	const char *sep = "";
	size_t i;

	fprintf(out, "{\"mode\":\"%s\",\"rules\":[", netrule_mode_name[mode]);
	for (i = 0; mode == NETRULE_MODE_RESTRICTED && i < list->count; i++) {
		if (list->entry[i].class != NETRULE_HOST)
			continue;
		fprintf(out, "%s\"allow@%s\"", sep, list->entry[i].target);
		sep = ",";
	}
	fputs("],\"rejected\":[", out);
	sep = "";
	for (i = 0; i < list->count; i++) {
		const struct netrule_entry *e = &list->entry[i];

		if (e->class != NETRULE_REJECTED)
			continue;
		fprintf(out, "%s{\"entry\":", sep);
		netrule_put_json(out, e->text, e->len);
		fputs(",\"reason\":", out);
		netrule_put_json(out, e->reason, strlen(e->reason));
		putc('}', out);
		sep = ",";
	}
	fputs("]}\n", out);
}

/* ------------------------------------------------------------------------ */
/* Command line                                                              */

#ifndef FORGE_NETRULE_NO_MAIN

static int netrule_read_stdin(struct netrule_list *list)
{
	char *line = NULL;
	size_t size = 0;
	ssize_t len;
	int rc = 0;

	errno = 0;
	while ((len = getline(&line, &size, stdin)) != -1)
		if (netrule_list_add(list, line, (size_t)len) != 0) {
			rc = -1;
			break;
		}
	/* getline also returns -1 when memory runs out: only EOF is the end. */
	if (rc == 0 && (ferror(stdin) || !feof(stdin)))
		rc = -1;
	free(line);
	return rc;
}

static int netrule_check_main(const char *entry, int secret_hosts)
{
	char reason[NETRULE_REASON_MAX];
	size_t n = strlen(entry);
	enum netrule_class class;

	netrule_trim(&entry, &n);
	class = netrule_classify(entry, n, secret_hosts, reason);
	if (class == NETRULE_HOST || class == NETRULE_WILDCARD)
		return 0;
	fprintf(stderr, "%s: invalid '", forge_progname());
	netrule_put_quoted(stderr, entry, n);
	fprintf(stderr, "': %s\n", reason);
	return 1;
}

int main(int argc, char **argv)
{
	struct netrule_list list;
	int json = 0, check = 0, i;

	/* Options and entries are shown escaped in messages, as entries are. */
	forge_escape_messages = 1;
	memset(&list, 0, sizeof list);
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		help_option(argv[i]);
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--secret-hosts") == 0)
			list.secret_hosts = 1;
		else if (strcmp(argv[i], "--check") == 0)
			check = 1;
		else
			die(EXIT_USAGE, "unknown option '%s'", argv[i]);
	}
	if (check) {
		if (json)
			die(EXIT_USAGE, "--check and --json exclude each other");
		if (argc - i != 1)
			die(EXIT_USAGE, "--check takes exactly one ENTRY");
		return netrule_check_main(argv[i], list.secret_hosts);
	}

	if (i == argc) {
		if (netrule_read_stdin(&list) != 0)
			die(EXIT_INTERNAL, "cannot read the entries: %s", strerror(errno ? errno : EIO));
	} else
		for (; i < argc; i++)
			if (netrule_list_add(&list, argv[i], strlen(argv[i])) != 0)
				die(EXIT_INTERNAL, "out of memory");

	netrule_print_warnings(stderr, &list);
	if (json)
		netrule_print_json(stdout, &list);
	else
		netrule_print_flags(stdout, &list);
	netrule_list_free(&list);
	if (fflush(stdout) != 0 || ferror(stdout))
		die(EXIT_INTERNAL, "cannot write the result: %s", strerror(errno ? errno : EIO));
	return 0;
}

#endif /* FORGE_NETRULE_NO_MAIN */
