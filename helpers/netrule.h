/*
 * netrule.h — one egress allow-list entry: validation (SPEC 4.3) and
 * matching against a request's host (SPEC 4.5), shared by forge-netrule and
 * forge-egress so that the entry msb is given and the entry forge-egress
 * enforces mean the same thing.
 */
#ifndef FORGE_NETRULE_H
#define FORGE_NETRULE_H

#include <stddef.h>

enum netrule_class {
	NETRULE_WILDCARD,  /* '*' or '**': unrestricted egress */
	NETRULE_HOST,      /* valid: becomes allow@<lowercased entry> */
	NETRULE_REJECTED   /* invalid, with a reason */
};

/* Longest reason, including one quoted byte; see netrule_reject_char. */
#define NETRULE_REASON_MAX 128
#define NETRULE_NAME_MAX 253
#define NETRULE_LABEL_MAX 63

/* ASCII whitespace; ASCII lower case (other bytes unchanged). */
int netrule_is_space(unsigned char c);
unsigned char netrule_lower(unsigned char c);

/* Strips leading and trailing ASCII whitespace (pointer and length). */
void netrule_trim(const char **s, size_t *n);

/*
 * Checks a host name: [A-Za-z0-9_-] labels separated by dots, none empty,
 * none over 63 bytes, none starting with '-', at most 253 bytes in all.
 * Sets *labels; on rejection writes the reason (NETRULE_REASON_MAX bytes).
 */
enum netrule_class netrule_check_name(const char *s, size_t n, size_t *labels, char *reason);

/*
 * Classifies one trimmed entry (SPEC 4.3); reason as above. A blank entry
 * or one holding a newline is rejected, never ignored: it counts as
 * configured, so a typo cannot leave egress open.
 */
enum netrule_class netrule_classify(const char *s, size_t n, int secret_host, char *reason);

/*
 * Whether HOST (lowercase, without a trailing dot) is allowed by TARGET, a
 * valid entry in lower case, with msb's semantics: a plain NAME and
 * "domain=NAME" match NAME exactly; "suffix=NAME" and "*.NAME" (the same
 * rule in msb) match NAME itself and every name below it, label-aligned
 * (badexample.com is not below example.com).
 */
int netrule_match(const char *target, size_t tlen, const char *host, size_t hlen);

#endif
