/*
 * http-head.h — the request head of a proxy request, as forge-egress reads
 * it (SPEC 4.5): CONNECT host:port or an absolute http:// URI, HTTP/1.0 or
 * 1.1, bounded; NUL bytes, bare CR or LF, folded header lines, user info
 * in the authority, a Host header that disagrees with the target are
 * refused. And the head forge-egress sends upstream for a plain request.
 * No I/O: t/http-head-unit.c and t/fuzz-http-head.c test it as it is.
 */
#ifndef FORGE_HTTP_HEAD_H
#define FORGE_HTTP_HEAD_H

#include <stddef.h>

#include "netrule.h"

struct egress_request {
	int connect;                        /* CONNECT, else plain HTTP */
	int ip_literal;                     /* the host is an address: refused */
	char host[NETRULE_NAME_MAX + 1];    /* lower case, no trailing dot */
	size_t host_len;
	unsigned port;
	const char *method, *target, *path, *version, *headers;
	size_t method_len, target_len, path_len, headers_len;
	size_t head_len;                    /* up to and including CRLF CRLF */
};

/* The rewritten head is at most this much longer than the request's head. */
#define EGRESS_REWRITE_EXTRA 512

/* Whether A (N bytes) is LIT (lower case) in any case. */
int egress_ieq(const char *a, size_t n, const char *lit);

/* Offset just past the first CRLF CRLF in BUF, or 0 when there is none yet. */
size_t egress_head_end(const char *buf, size_t len);

/*
 * Parses the request head in BUF (LEN bytes, at least up to CRLF CRLF, and
 * BUF[LEN] is '\0'). Returns 0, or the HTTP status to answer with (400) and
 * *REASON. REQ points into BUF.
 */
int egress_parse_request(const char *buf, size_t len, struct egress_request *req,
	const char **reason);

/*
 * Writes the head to send upstream for a plain request: origin-form target,
 * one Host header, hop-by-hop headers dropped, "Connection: close". OUT must
 * hold req->head_len + EGRESS_REWRITE_EXTRA bytes. Returns the length.
 */
size_t egress_rewrite_head(const struct egress_request *req, char *out);

#endif
