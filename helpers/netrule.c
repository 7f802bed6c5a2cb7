/*
 * netrule.c — validation and matching of egress allow-list entries
 * (SPEC 4.3), shared by forge-netrule (which turns entries into msb flags)
 * and forge-egress (which enforces them), so the two can never disagree
 * about what an entry means. See netrule.h.
 */
#include <stdio.h>
#include <string.h>

#include "netrule.h"

int netrule_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

unsigned char netrule_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* The bytes msb accepts inside a label of a domain rule (checked on 0.6.18). */
static int netrule_is_name_byte(unsigned char c)
{
	c = netrule_lower(c);
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static int netrule_has_prefix(const char *s, size_t n, const char *prefix)
{
	size_t i, plen = strlen(prefix);

	if (n < plen)
		return 0;
	for (i = 0; i < plen; i++)
		if (netrule_lower((unsigned char)s[i]) != (unsigned char)prefix[i])
			return 0;
	return 1;
}

static const char *netrule_find(const char *s, size_t n, const char *needle)
{
	size_t i, nlen = strlen(needle);

	for (i = 0; i + nlen <= n; i++)
		if (memcmp(s + i, needle, nlen) == 0)
			return s + i;
	return NULL;
}

/* Strip leading and trailing ASCII whitespace in place (pointer and length). */
void netrule_trim(const char **s, size_t *n)
{
	while (*n > 0 && netrule_is_space((unsigned char)**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && netrule_is_space((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

static enum netrule_class netrule_reject(char *reason, const char *text)
{
	snprintf(reason, NETRULE_REASON_MAX, "%s", text);
	return NETRULE_REJECTED;
}

static enum netrule_class netrule_reject_char(char *reason, unsigned char c)
{
	if (c == '=')
		return netrule_reject(reason,
			"contains '=' (only the domain=NAME and suffix=NAME forms use it)");
	if (c > 0x20 && c < 0x7f && c != '\'' && c != '\\')
		snprintf(reason, NETRULE_REASON_MAX,
			"contains '%c', which is not allowed in a host name", c);
	else
		snprintf(reason, NETRULE_REASON_MAX,
			"contains the byte \\x%02x, which is not allowed in a host name", c);
	return NETRULE_REJECTED;
}

/*
 * Checks a host name (the part after "domain=", "suffix=" or "*."): only
 * [A-Za-z0-9_-] labels separated by dots, none empty, none over 63 bytes,
 * none starting with '-', at most 253 bytes in all. Counts the labels.
 */
enum netrule_class netrule_check_name(const char *s, size_t n, size_t *labels, char *reason)
{
	size_t i, start = 0;

	for (i = 0; i < n; i++)
		if (s[i] != '.' && !netrule_is_name_byte((unsigned char)s[i]))
			return netrule_reject_char(reason, (unsigned char)s[i]);
	if (n > NETRULE_NAME_MAX)
		return netrule_reject(reason, "host name longer than 253 characters");
	*labels = 0;
	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (i == start)
			return netrule_reject(reason, "empty label");
		if (i - start > NETRULE_LABEL_MAX)
			return netrule_reject(reason, "label longer than 63 characters");
		if (s[start] == '-')
			return netrule_reject(reason, "label starts with '-'");
		(*labels)++;
		start = i + 1;
	}
	return NETRULE_HOST;
}

/*
 * Classifies one trimmed entry (case-insensitively). The order of the checks
 * only decides which reason a doubly-wrong entry gets: the most telling first.
 */
enum netrule_class netrule_classify(const char *s, size_t n, int secret_host, char *reason)
{
	enum { PLAIN, DOMAIN, SUFFIX, WILDCARD } form = PLAIN;
	enum netrule_class class;
	size_t i, labels;

	reason[0] = '\0';
	if (n == 0)
		return netrule_reject(reason, "empty entry (a blank entry is rejected, not ignored)");
	if ((n == 1 && s[0] == '*') || (n == 2 && s[0] == '*' && s[1] == '*')) {
		if (secret_host)
			return netrule_reject(reason, "a wildcard cannot be a secret host");
		return NETRULE_WILDCARD;
	}
	if (memchr(s, '\n', n))
		return netrule_reject(reason, "contains a newline");
	if (netrule_find(s, n, "://"))
		return netrule_reject(reason, "looks like a URL (give the bare host name, without a scheme)");
	if (memchr(s, ',', n))
		return netrule_reject(reason, "contains ',' (msb splits rule tokens on commas)");
	if (memchr(s, ':', n))
		return netrule_reject(reason, "contains ':' (use the example.com:tcp:443 rule form)");
	if (memchr(s, '@', n))
		return netrule_reject(reason, "contains '@'");
	for (i = 0; i < n; i++)
		if (netrule_is_space((unsigned char)s[i]))
			return netrule_reject(reason, "contains whitespace");
	if (memchr(s, '/', n))
		return netrule_reject(reason, "contains '/' (give a host name, not a URL or a path)");

	if (netrule_has_prefix(s, n, "domain=")) {
		form = DOMAIN;
		s += 7;
		n -= 7;
	} else if (netrule_has_prefix(s, n, "suffix=")) {
		form = SUFFIX;
		s += 7;
		n -= 7;
	}
	if (form != PLAIN && secret_host)
		/* msb reads ENV@domain=X as an inline secret value, not a host. */
		return netrule_reject(reason, "the domain= and suffix= forms cannot be secret hosts");
	if (form != PLAIN && n == 0)
		return netrule_reject(reason, form == DOMAIN ? "'domain=' needs a host name"
			: "'suffix=' needs a host name");
	if (memchr(s, '*', n)) {
		if (form != PLAIN || n < 2 || s[0] != '*' || s[1] != '.' || memchr(s + 1, '*', n - 1))
			return netrule_reject(reason,
				"'*' is only allowed alone or as a leading '*.' label");
		form = WILDCARD;
		s += 2;
		n -= 2;
	}

	class = netrule_check_name(s, n, &labels, reason);
	if (class != NETRULE_HOST)
		return class;
	if (form == WILDCARD && labels < 2)
		return netrule_reject(reason,
			"needs at least two labels after '*.' (*.example.com, not *.com)");
	if (form == SUFFIX && labels < 2)
		return netrule_reject(reason,
			"needs at least two labels after 'suffix=' (suffix=example.com, not suffix=com)");
	if (form == PLAIN && labels < 2)
		return netrule_reject(reason, secret_host
			? "has no dot (a single-label host cannot be a secret host)"
			: "has no dot (use domain=NAME for a single-label host)");
	return NETRULE_HOST;
}

/* ------------------------------------------------------------------------ */
/* Matching a request's host against an entry                               */

static int netrule_has_suffix_label(const char *host, size_t hlen, const char *name, size_t nlen)
{
	if (hlen == nlen)
		return memcmp(host, name, nlen) == 0;
	return hlen > nlen && host[hlen - nlen - 1] == '.'
		&& memcmp(host + hlen - nlen, name, nlen) == 0;
}

int netrule_match(const char *target, size_t tlen, const char *host, size_t hlen)
{
	if (netrule_has_prefix(target, tlen, "domain="))
		return tlen - 7 == hlen && memcmp(target + 7, host, hlen) == 0;
	if (netrule_has_prefix(target, tlen, "suffix="))
		return netrule_has_suffix_label(host, hlen, target + 7, tlen - 7);
	if (tlen > 2 && target[0] == '*' && target[1] == '.')
		return netrule_has_suffix_label(host, hlen, target + 2, tlen - 2);
	return tlen == hlen && memcmp(target, host, hlen) == 0;
}
