/*
 * http-head.c — see http-head.h.
 */
#include <stdio.h>
#include <string.h>

#include "http-head.h"

static int egress_is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		|| (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

int egress_ieq(const char *a, size_t n, const char *lit)
{
	size_t i;

	if (strlen(lit) != n)
		return 0;
	for (i = 0; i < n; i++)
		if (netrule_lower((unsigned char)a[i]) != (unsigned char)lit[i])
			return 0;
	return 1;
}

/* Offset just past the first CRLF CRLF in BUF, or 0 when there is none yet. */
size_t egress_head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

/*
 * Every numeric spelling inet_aton accepts ("127.1", "0x7f000001",
 * "2130706433") has a last label that is all digits or 0x + hex digits; no
 * real top-level domain looks like that. Such a host is an address.
 */
static int egress_looks_numeric(const char *h, size_t n)
{
	size_t start = n, i;

	while (start > 0 && h[start - 1] != '.')
		start--;
	if (start == n)
		return 0;
	if (n - start > 2 && h[start] == '0' && (h[start + 1] == 'x' || h[start + 1] == 'X')) {
		for (i = start + 2; i < n; i++)
			if (!strchr("0123456789abcdefABCDEF", h[i]))
				return 0;
		return 1;
	}
	for (i = start; i < n; i++)
		if (h[i] < '0' || h[i] > '9')
			return 0;
	return 1;
}

/*
 * Parses "host[:port]" (a bracketed IPv6 literal for host allowed) into REQ's
 * host and port; DEFAULT_PORT 0 means the port is required. Returns NULL or
 * the reason it is malformed.
 */
static const char *egress_parse_authority(const char *s, size_t n, unsigned default_port,
	struct egress_request *req)
{
	const char *host = s, *colon = NULL;
	size_t host_len, i, labels;
	char reason[NETRULE_REASON_MAX];

	if (n == 0)
		return "empty host";
	if (memchr(s, '@', n))
		return "user info in the authority";
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);

		if (!close)
			return "unclosed '[' in the authority";
		req->ip_literal = 1;
		host_len = (size_t)(close - s) + 1;
		if (host_len < n) {
			if (s[host_len] != ':')
				return "junk after ']' in the authority";
			colon = s + host_len;
		}
	} else {
		colon = memchr(s, ':', n);
		host_len = colon ? (size_t)(colon - s) : n;
	}
	if (colon) {
		size_t digits = n - (size_t)(colon - s) - 1;
		unsigned long port = 0;

		if (digits == 0 || digits > 5)
			return "invalid port";
		for (i = 0; i < digits; i++) {
			if (colon[1 + i] < '0' || colon[1 + i] > '9')
				return "invalid port";
			port = port * 10 + (unsigned long)(colon[1 + i] - '0');
		}
		if (port == 0 || port > 65535)
			return "invalid port";
		req->port = (unsigned)port;
	} else if (default_port == 0)
		return "the port is missing";
	else
		req->port = default_port;

	if (req->ip_literal) {
		/* Kept only for the log: brackets and hex digits, colons, dots. */
		if (host_len > NETRULE_NAME_MAX)
			return "invalid host name";
		for (i = 0; i < host_len; i++)
			if (!strchr("[]:.0123456789abcdefABCDEF%", host[i]))
				return "invalid IPv6 literal";
	} else {
		if (host_len > 1 && host[host_len - 1] == '.')
			host_len--;  /* "example.com." is example.com, as msb reads it */
		if (host_len == 0 || netrule_check_name(host, host_len, &labels, reason) != NETRULE_HOST)
			return "invalid host name";
		if (egress_looks_numeric(host, host_len))
			req->ip_literal = 1;
	}
	for (i = 0; i < host_len; i++)
		req->host[i] = (char)netrule_lower((unsigned char)host[i]);
	req->host[host_len] = '\0';
	req->host_len = host_len;
	return NULL;
}

/* The value of a header line NAME: VALUE, without the surrounding OWS. */
static void egress_header_value(const char *line, size_t n, size_t colon, const char **v, size_t *vlen)
{
	size_t b = colon + 1, e = n;

	while (b < e && (line[b] == ' ' || line[b] == '\t'))
		b++;
	while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t'))
		e--;
	*v = line + b;
	*vlen = e - b;
}

/*
 * Parses the request head in BUF (LEN bytes, at least up to CRLF CRLF).
 * Returns 0, or the HTTP status to answer with and *REASON.
 */
int egress_parse_request(const char *buf, size_t len, struct egress_request *req,
	const char **reason)
{
	const char *p, *end, *sp1, *sp2, *line, *eol, *why;
	size_t i;
	int hosts = 0;

	memset(req, 0, sizeof *req);
	req->head_len = egress_head_end(buf, len);
	if (req->head_len == 0) {
		*reason = "incomplete request head";
		return 400;
	}
	end = buf + req->head_len;
	for (i = 0; i < req->head_len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\0') {
			*reason = "NUL byte in the request head";
			return 400;
		}
		if ((c == '\r' && buf[i + 1] != '\n') || (c == '\n' && (i == 0 || buf[i - 1] != '\r'))) {
			*reason = "bare CR or LF in the request head";
			return 400;
		}
	}

	/* METHOD SP TARGET SP HTTP/1.x CRLF */
	eol = strstr(buf, "\r\n");  /* found: the head ends with CRLF CRLF and holds no NUL */
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1) {
		*reason = "malformed request line";
		return 400;
	}
	for (p = buf; p < sp1; p++)
		if (!egress_is_tchar((unsigned char)*p)) {
			*reason = "malformed method";
			return 400;
		}
	for (p = sp1 + 1; p < sp2; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
			*reason = "malformed request target";
			return 400;
		}
	if (!(eol - sp2 - 1 == 8 && (memcmp(sp2 + 1, "HTTP/1.1", 8) == 0
	      || memcmp(sp2 + 1, "HTTP/1.0", 8) == 0))) {
		*reason = "not HTTP/1.0 or HTTP/1.1";
		return 400;
	}
	req->method = buf;
	req->method_len = (size_t)(sp1 - buf);
	req->target = sp1 + 1;
	req->target_len = (size_t)(sp2 - sp1 - 1);
	req->version = sp2 + 1;
	req->headers = eol + 2;
	req->headers_len = (size_t)(end - 2 - req->headers);
	req->connect = req->method_len == 7 && memcmp(buf, "CONNECT", 7) == 0;

	if (req->connect) {
		if ((why = egress_parse_authority(req->target, req->target_len, 0, req))) {
			*reason = why;
			return 400;
		}
	} else {
		const char *t = req->target, *auth, *auth_end;
		size_t tn = req->target_len;

		if (tn >= 8 && egress_ieq(t, 8, "https://")) {
			*reason = "https:// needs CONNECT";
			return 400;
		}
		if (!(tn >= 7 && egress_ieq(t, 7, "http://"))) {
			*reason = "not a proxy request (absolute http:// URI or CONNECT expected)";
			return 400;
		}
		auth = t + 7;
		for (auth_end = auth; auth_end < t + tn && !strchr("/?#", *auth_end); auth_end++)
			;
		if ((why = egress_parse_authority(auth, (size_t)(auth_end - auth), 80, req))) {
			*reason = why;
			return 400;
		}
		req->path = auth_end;
		req->path_len = (size_t)(t + tn - auth_end);
	}

	/* Header lines: NAME ":" VALUE; no folding; one Host, matching the target. */
	for (line = req->headers; line < end - 2; line = eol + 2) {
		size_t n, colon;

		eol = strstr(line, "\r\n");
		n = (size_t)(eol - line);
		if (line[0] == ' ' || line[0] == '\t') {
			*reason = "folded header line";
			return 400;
		}
		for (colon = 0; colon < n && egress_is_tchar((unsigned char)line[colon]); colon++)
			;
		if (colon == 0 || colon == n || line[colon] != ':') {
			*reason = "malformed header line";
			return 400;
		}
		for (i = colon + 1; i < n; i++)
			if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f) {
				*reason = "control byte in a header value";
				return 400;
			}
		if (egress_ieq(line, colon, "host")) {
			struct egress_request named;
			const char *v;
			size_t vlen;

			if (++hosts > 1) {
				*reason = "more than one Host header";
				return 400;
			}
			egress_header_value(line, n, colon, &v, &vlen);
			memset(&named, 0, sizeof named);
			why = egress_parse_authority(v, vlen, req->connect ? req->port : 80, &named);
			if (why || named.host_len != req->host_len
			    || memcmp(named.host, req->host, req->host_len) != 0 || named.port != req->port) {
				*reason = "the Host header does not match the request target";
				return 400;
			}
		}
	}
	return 0;
}

/*
 * Whether a header line is hop-by-hop, meant for a proxy (Proxy-*), or Host,
 * which the rewrite adds itself.
 */
static int egress_drop_header(const char *line, size_t colon)
{
	static const char *const names[] = {
		"host", "connection", "keep-alive", "te", "trailer", "upgrade",
	};
	size_t i;

	if (colon >= 6 && egress_ieq(line, 6, "proxy-"))
		return 1;
	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (egress_ieq(line, colon, names[i]))
			return 1;
	return 0;
}

/*
 * Writes the head to send upstream for a plain request: origin-form target,
 * one Host header, hop-by-hop headers dropped, "Connection: close". OUT must
 * hold req->head_len + EGRESS_REWRITE_EXTRA bytes. Returns the length.
 */
size_t egress_rewrite_head(const struct egress_request *req, char *out)
{
	const char *line, *eol, *end = req->headers + req->headers_len;
	size_t n = 0;

	memcpy(out + n, req->method, req->method_len);
	n += req->method_len;
	out[n++] = ' ';
	if (req->path_len == 0 || req->path[0] != '/')
		out[n++] = '/';
	memcpy(out + n, req->path, req->path_len);
	n += req->path_len;
	out[n++] = ' ';
	memcpy(out + n, req->version, 8);
	n += 8;
	n += (size_t)sprintf(out + n, "\r\nHost: %s", req->host);
	if (req->port != 80)
		n += (size_t)sprintf(out + n, ":%u", req->port);
	memcpy(out + n, "\r\n", 2);
	n += 2;
	for (line = req->headers; line < end; line = eol + 2) {
		size_t colon = 0;

		eol = strstr(line, "\r\n");
		while (line[colon] != ':')
			colon++;
		if (egress_drop_header(line, colon))
			continue;
		memcpy(out + n, line, (size_t)(eol - line) + 2);
		n += (size_t)(eol - line) + 2;
	}
	memcpy(out + n, "Connection: close\r\n\r\n", 21);
	return n + 21;
}
