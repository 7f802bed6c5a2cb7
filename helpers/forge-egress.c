/*
 * forge-egress — the allow-list proxy of the namespace backend (SPEC 4.5).
 *
 * Listens on a unix socket (the sandbox reaches it through forge-relay) and
 * serves HTTP CONNECT and plain HTTP (absolute-URI) requests, one request per
 * client connection:
 *   1. parse the request head (bounded; NUL bytes, bare CR/LF, folded
 *      headers, user info in the URI, a Host header that disagrees with the
 *      URI: 400);
 *   2. refuse an IP literal (the allow-list names hosts) and a host no
 *      allow-list entry matches (netrule.c, msb's semantics): 403;
 *   3. resolve the host once; refuse when any address is not public
 *      (loopback, unspecified, RFC 1918, CGNAT, link-local, benchmarking,
 *      reserved, ULA, site-local, multicast, broadcast, those forms mapped
 *      into IPv6, the IPv6 forms that embed an IPv4 address, or an address
 *      of this host): 403;
 *   4. connect to the addresses it checked — never a second lookup — and
 *      relay bytes both ways until one side closes. A CONNECT tunnel is
 *      opaque after the check; a plain request is sent with
 *      "Connection: close", so whatever else the client writes on that
 *      connection can only reach the host that was checked.
 * Every decision is one line appended to DIR/egress.log.
 *
 * One process per client connection (fork), at most --max-conns at once;
 * each child holds fixed buffers only, so memory is bounded by the cap.
 * The code from the request parser to the address check is plain functions:
 * t/egress-unit.c and t/fuzz-egress.c include this file with
 * FORGE_EGRESS_NO_MAIN defined.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "netrule.h"
#include "relay.h"

#define USAGE \
	"usage: forge-egress [--log DIR] [--max-conns N] [--] SOCKET RULESFILE\n" \
	"Serve HTTP CONNECT and plain HTTP on the unix socket SOCKET (created\n" \
	"owner-only), allowing only public destinations whose host matches an\n" \
	"entry of RULESFILE (one allow-list entry per line, as forge-netrule\n" \
	"reads them; '*' allows every host). Refusals are 403 Forbidden.\n" \
	"  --log DIR        append one line per decision to DIR/egress.log\n" \
	"  --max-conns N    at most N connections at once (default 64)\n" \
	"  --help, --version\n"

enum {
	EXIT_DATA = 65,
	EXIT_USAGE = 64,
	EXIT_INTERNAL = 70,
	EXIT_CANT_CREATE = 73
};

#define EGRESS_HEAD_MAX 16384    /* a request head larger than this: 431 */
#define EGRESS_HEAD_SECONDS 30   /* to read the head, resolve and connect */
#define EGRESS_CONNECT_MS 10000  /* per address */
#define EGRESS_IDLE_MS 600000    /* a relay with no traffic for this long ends */
#define EGRESS_REASON_MAX 512

static const char progname[] = "forge-egress";

/* ------------------------------------------------------------------------ */
/* The request head                                                          */

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

static int egress_is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		|| (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int egress_ieq(const char *a, size_t n, const char *lit)
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
static size_t egress_head_end(const char *buf, size_t len)
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
static int egress_parse_request(const char *buf, size_t len, struct egress_request *req,
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
 * hold req->head_len + 512 bytes. Returns the length.
 */
static size_t egress_rewrite_head(const struct egress_request *req, char *out)
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

/* ------------------------------------------------------------------------ */
/* Which addresses are public                                                */

/* NULL when the IPv4 address A (network order bytes) is public, else why not. */
static const char *egress_v4_not_public(const unsigned char *a)
{
	if (a[0] == 0)
		return "unspecified";
	if (a[0] == 127)
		return "loopback";
	if (a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) || (a[0] == 192 && a[1] == 168))
		return "private (RFC 1918)";
	if (a[0] == 100 && (a[1] & 0xc0) == 64)
		return "shared (CGNAT 100.64/10)";
	if (a[0] == 169 && a[1] == 254)
		return "link-local";
	if (a[0] == 198 && (a[1] & 0xfe) == 18)
		return "benchmarking (198.18/15, used for local fake-IP proxies)";
	if ((a[0] & 0xf0) == 224)
		return "multicast";
	if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
		return "broadcast";
	if ((a[0] & 0xf0) == 240)
		return "reserved (240/4)";
	return NULL;
}

/*
 * The forms that embed an IPv4 address: where a host or a gateway turns the
 * address into its IPv4 one (IPv4-mapped, the well-known NAT64 prefix), that
 * address decides; every other form is refused whole, since what it reaches
 * depends on a tunnel or translator this host or its network may have
 * (IPv4-compatible ::/96 and SIIT ::ffff:0:0:0/96 are deprecated, a
 * local-use NAT64 prefix places the IPv4 address where its operator chose,
 * Teredo relays deliver to an IPv4 address of the address's choosing, and
 * 6to4 embeds any IPv4 address, a private one included).
 */
static const char *egress_v6_not_public(const unsigned char *a)
{
	static const unsigned char zero[16], mapped[12] = { 0,0,0,0, 0,0,0,0, 0,0,0xff,0xff };
	static const unsigned char siit[12] = { 0,0,0,0, 0,0,0,0, 0xff,0xff,0,0 };
	static const unsigned char nat64[12] = { 0,0x64,0xff,0x9b, 0,0,0,0, 0,0,0,0 };
	static const unsigned char nat64_local[6] = { 0,0x64,0xff,0x9b, 0,1 };
	static const unsigned char teredo[4] = { 0x20,0x01,0,0 };

	if (memcmp(a, zero, 16) == 0)
		return "unspecified";
	if (memcmp(a, zero, 15) == 0 && a[15] == 1)
		return "loopback";
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0)
		return egress_v4_not_public(a + 12);
	if (memcmp(a, zero, 12) == 0)
		return "IPv4-compatible (::/96, deprecated)";
	if (memcmp(a, siit, 12) == 0)
		return "IPv4-translated (::ffff:0:0:0/96, deprecated)";
	if (memcmp(a, nat64_local, 6) == 0)
		return "local-use NAT64 (64:ff9b:1::/48)";
	if (memcmp(a, teredo, 4) == 0)
		return "Teredo (2001::/32, embeds IPv4 addresses)";
	if (a[0] == 0x20 && a[1] == 0x02)
		return "6to4 (2002::/16, embeds any IPv4 address)";
	if ((a[0] & 0xfe) == 0xfc)
		return "unique local (fc00::/7)";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return "link-local";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
		return "site-local (fec0::/10)";
	if (a[0] == 0xff)
		return "multicast";
	return NULL;
}

/* The address as 4 or 16 bytes (an IPv4-mapped IPv6 one as its IPv4 form). */
static size_t egress_addr_bytes(const struct sockaddr *sa, const unsigned char **bytes)
{
	static const unsigned char mapped[12] = { 0,0,0,0, 0,0,0,0, 0,0,0xff,0xff };

	if (sa->sa_family == AF_INET) {
		*bytes = (const unsigned char *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
		return 4;
	}
	if (sa->sa_family == AF_INET6) {
		*bytes = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
		if (memcmp(*bytes, mapped, 12) == 0) {
			*bytes += 12;
			return 4;
		}
		return 16;
	}
	return 0;
}

/*
 * NULL when SA is a public destination, else why not. OWN lists this host's
 * interface addresses (getifaddrs), which are never public destinations.
 */
static const char *egress_not_public(const struct sockaddr *sa, const struct ifaddrs *own)
{
	const unsigned char *a, *b;
	const char *why;
	size_t n = egress_addr_bytes(sa, &a);

	if (n == 0)
		return "not an internet address";
	why = n == 4 ? egress_v4_not_public(a) : egress_v6_not_public(a);
	if (why)
		return why;
	for (; own; own = own->ifa_next)
		if (own->ifa_addr && egress_addr_bytes(own->ifa_addr, &b) == n && memcmp(a, b, n) == 0)
			return "an address of this host";
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* The rules                                                                 */

struct egress_rules {
	char **target;  /* valid entries, lower case */
	size_t count;
	int any;        /* a '*' entry: every host name */
};

static void egress_rules_free(struct egress_rules *rules)
{
	size_t i;

	for (i = 0; i < rules->count; i++)
		free(rules->target[i]);
	free(rules->target);
	memset(rules, 0, sizeof *rules);
}

/* Adds one line of the rules file. Returns -1 when out of memory. */
static int egress_rules_add(struct egress_rules *rules, const char *line, size_t n, FILE *warn)
{
	char reason[NETRULE_REASON_MAX], **grown, *t;
	size_t i;

	netrule_trim(&line, &n);
	if (n == 0)
		return 0;  /* a blank line of the rules file is no entry */
	switch (netrule_classify(line, n, 0, reason)) {
	case NETRULE_WILDCARD:
		rules->any = 1;
		return 0;
	case NETRULE_REJECTED:
		if (warn)
			fprintf(warn, "%s: warning: ignoring an invalid allow-list entry: %s\n",
				progname, reason);
		return 0;
	case NETRULE_HOST:
		break;
	}
	grown = realloc(rules->target, (rules->count + 1) * sizeof *grown);
	if (!grown)
		return -1;
	rules->target = grown;
	if (!(t = malloc(n + 1)))
		return -1;
	for (i = 0; i < n; i++)
		t[i] = (char)netrule_lower((unsigned char)line[i]);
	t[n] = '\0';
	rules->target[rules->count++] = t;
	return 0;
}

static int egress_allowed(const struct egress_rules *rules, const char *host, size_t n)
{
	size_t i;

	if (rules->any)
		return 1;
	for (i = 0; i < rules->count; i++)
		if (netrule_match(rules->target[i], strlen(rules->target[i]), host, n))
			return 1;
	return 0;
}

#ifndef FORGE_EGRESS_NO_MAIN

/* ------------------------------------------------------------------------ */
/* The decision log                                                          */

/* Appends one line: TIME VERDICT METHOD HOST:PORT ADDRESS|- [REASON]. */
static void egress_log(int fd, const char *verdict, const struct egress_request *req,
	const char *addr, const char *reason)
{
	char line[EGRESS_REASON_MAX + 512], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int n;

	if (fd < 0)
		return;
	if (!gmtime_r(&now, &tm) || strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		strcpy(stamp, "-");
	if (req && req->host_len)
		n = snprintf(line, sizeof line, "%s %s %s %s:%u %s%s%s\n", stamp, verdict,
			req->connect ? "CONNECT" : "HTTP", req->host, req->port, addr ? addr : "-",
			reason ? " " : "", reason ? reason : "");
	else
		n = snprintf(line, sizeof line, "%s %s - - - %s\n", stamp, verdict, reason ? reason : "");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line) {
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	/* One write to an O_APPEND file: lines of concurrent children never interleave. */
	while (write(fd, line, (size_t)n) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------------ */
/* One client connection (a child process)                                  */

static void die(int status, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

static void usage(FILE *out, int status)
{
	fputs(USAGE, out);
	exit(status);
}

static const char *status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

/* Answers STATUS with a one-line reason as the body. */
static void respond(int fd, int status, const char *reason)
{
	char buf[EGRESS_REASON_MAX + 256];
	int body = (int)strlen(progname) + 2 + (int)strlen(reason) + 1;
	int n = snprintf(buf, sizeof buf,
		"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
		"Connection: close\r\n\r\n%s: %s\n", status, status_text(status), body, progname, reason);

	if (n > 0 && (size_t)n < sizeof buf)
		(void)relay_write_all(fd, buf, (size_t)n);
}

static void addr_text(const struct sockaddr *sa, char *out, size_t size)
{
	const void *a = sa->sa_family == AF_INET
		? (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr
		: (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

	if (!inet_ntop(sa->sa_family, a, out, (socklen_t)size))
		snprintf(out, size, "?");
}

/* Connects to SA within EGRESS_CONNECT_MS. Returns the socket or -1 (errno). */
static int connect_to(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), flags, err = 0, r;
	socklen_t elen = sizeof err;
	struct pollfd pfd;

	if (fd < 0)
		return -1;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		goto fail;
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS && errno != EINTR)
			goto fail;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		while ((r = poll(&pfd, 1, EGRESS_CONNECT_MS)) < 0 && errno == EINTR)
			;
		if (r == 0) {
			errno = ETIMEDOUT;
			goto fail;
		}
		if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			goto fail;
		if (err) {
			errno = err;
			goto fail;
		}
	}
	if (fcntl(fd, F_SETFL, flags) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* Serves one client connection; runs in its own process. */
static void serve(int client, const struct egress_rules *rules, int logfd)
{
	static char head[EGRESS_HEAD_MAX], out[EGRESS_HEAD_MAX + 512];
	struct egress_request req;
	struct addrinfo hints, *res = NULL, *ai;
	struct ifaddrs *own = NULL;
	char addr[INET6_ADDRSTRLEN], reason[EGRESS_REASON_MAX];
	const char *why;
	size_t len = 0;
	int status, up = -1, err = 0;

	alarm(EGRESS_HEAD_SECONDS);
	while (egress_head_end(head, len) == 0) {
		ssize_t n;

		if (len == sizeof head - 1) {
			egress_log(logfd, "deny", NULL, NULL, "request head too large");
			respond(client, 431, "request head too large");
			return;
		}
		n = read(client, head + len, sizeof head - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;  /* the client went away before asking anything */
		len += (size_t)n;
	}
	head[len] = '\0';
	if ((status = egress_parse_request(head, len, &req, &why)) != 0) {
		egress_log(logfd, "deny", &req, NULL, why);
		respond(client, status, why);
		return;
	}
	if (req.ip_literal) {
		why = "an IP literal is refused (the allow-list names hosts)";
		egress_log(logfd, "deny", &req, NULL, why);
		respond(client, 403, why);
		return;
	}
	if (!egress_allowed(rules, req.host, req.host_len)) {
		snprintf(reason, sizeof reason, "%s is not in the allow-list", req.host);
		egress_log(logfd, "deny", &req, NULL, reason);
		respond(client, 403, reason);
		return;
	}

	/* One resolution; every address it gave must be public. */
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((status = getaddrinfo(req.host, NULL, &hints, &res)) != 0) {
		snprintf(reason, sizeof reason, "cannot resolve %s: %s", req.host, gai_strerror(status));
		egress_log(logfd, "deny", &req, NULL, reason);
		respond(client, 502, reason);
		return;
	}
	if (getifaddrs(&own) != 0) {
		snprintf(reason, sizeof reason, "cannot list this host's addresses: %s", strerror(errno));
		egress_log(logfd, "deny", &req, NULL, reason);
		respond(client, 502, reason);
		freeaddrinfo(res);
		return;
	}
	for (ai = res; ai; ai = ai->ai_next)
		if ((why = egress_not_public(ai->ai_addr, own))) {
			addr_text(ai->ai_addr, addr, sizeof addr);
			snprintf(reason, sizeof reason, "%s resolves to %s, which is not public (%s)",
				req.host, addr, why);
			egress_log(logfd, "deny", &req, addr, reason);
			respond(client, 403, reason);
			freeifaddrs(own);
			freeaddrinfo(res);
			return;
		}
	freeifaddrs(own);

	/* Connect to exactly the addresses checked above. */
	for (ai = res; ai && up < 0; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)(void *)ai->ai_addr)->sin_port = htons((unsigned short)req.port);
		else
			((struct sockaddr_in6 *)(void *)ai->ai_addr)->sin6_port = htons((unsigned short)req.port);
		addr_text(ai->ai_addr, addr, sizeof addr);
		if ((up = connect_to(ai->ai_addr, ai->ai_addrlen)) < 0)
			err = errno;
	}
	freeaddrinfo(res);
	if (up < 0) {
		snprintf(reason, sizeof reason, "cannot connect to %s port %u: %s", addr, req.port,
			strerror(err));
		egress_log(logfd, "deny", &req, addr, reason);
		respond(client, 502, reason);
		return;
	}
	egress_log(logfd, "allow", &req, addr, NULL);
	alarm(0);

	if (req.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		if (relay_write_all(client, ok, sizeof ok - 1) != 0)
			return;
	} else if (relay_write_all(up, out, egress_rewrite_head(&req, out)) != 0)
		return;
	/* Bytes the client sent after the head go to the host just checked. */
	if (len > req.head_len && relay_write_all(up, head + req.head_len, len - req.head_len) != 0)
		return;
	relay_copy(client, up, EGRESS_IDLE_MS);
	close(up);
}

/* ------------------------------------------------------------------------ */
/* The listener                                                              */

static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }
static void on_child(int sig) { (void)sig; }

static void load_rules(const char *path, struct egress_rules *rules)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t size = 0;
	ssize_t n;

	if (!f)
		die(EXIT_DATA, "cannot read the rules file %s: %s", path, strerror(errno));
	while ((n = getline(&line, &size, f)) != -1)
		if (egress_rules_add(rules, line, (size_t)n, stderr) != 0)
			die(EXIT_INTERNAL, "out of memory");
	if (ferror(f))
		die(EXIT_DATA, "cannot read the rules file %s: %s", path, strerror(errno));
	free(line);
	fclose(f);
}

static int open_log(const char *dir)
{
	char path[4096];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof path, "%s/egress.log", dir) >= (int)sizeof path)
		die(EXIT_USAGE, "the log folder's path is too long");
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		die(EXIT_CANT_CREATE, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		die(EXIT_CANT_CREATE, "%s is not a regular file", path);
	return fd;
}

/*
 * Binds and listens on a temporary name beside PATH, then renames it into
 * place: whoever sees PATH can connect at once. Owner-only (umask 077).
 */
static int listen_on(const char *path)
{
	struct sockaddr_un sun;
	char tmp[sizeof sun.sun_path];
	struct stat st;
	mode_t mask;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (snprintf(tmp, sizeof tmp, "%s.new", path) >= (int)sizeof tmp)
		die(EXIT_USAGE, "the socket path is too long (at most %zu bytes)", sizeof tmp - 5);
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		die(EXIT_CANT_CREATE, "%s exists and is not a socket", path);
	if (lstat(tmp, &st) == 0 && (!S_ISSOCK(st.st_mode) || unlink(tmp) != 0))
		die(EXIT_CANT_CREATE, "cannot replace %s", tmp);
	memcpy(sun.sun_path, tmp, strlen(tmp) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die(EXIT_INTERNAL, "socket: %s", strerror(errno));
	mask = umask(077);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0)
		die(EXIT_CANT_CREATE, "cannot create the socket %s: %s", tmp, strerror(errno));
	umask(mask);
	if (chmod(tmp, 0600) != 0 || listen(fd, 64) != 0 || rename(tmp, path) != 0)
		die(EXIT_CANT_CREATE, "cannot set up the socket %s: %s", path, strerror(errno));
	return fd;
}

/* Forgets children that ended. */
static void reap(pid_t *kids, size_t *count)
{
	pid_t pid;
	size_t i;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
		for (i = 0; i < *count; i++)
			if (kids[i] == pid) {
				kids[i] = kids[--*count];
				break;
			}
}

int main(int argc, char **argv)
{
	struct egress_rules rules;
	struct sigaction sa;
	const char *logdir = NULL, *sock_path;
	unsigned long max = 64;
	size_t count = 0, i;
	pid_t *kids;
	int argi, lfd, logfd = -1;

	memset(&rules, 0, sizeof rules);
	for (argi = 1; argi < argc && argv[argi][0] == '-'; argi++) {
		if (strcmp(argv[argi], "--") == 0) {
			argi++;
			break;
		} else if (strcmp(argv[argi], "--log") == 0 && argi + 1 < argc)
			logdir = argv[++argi];
		else if (strcmp(argv[argi], "--max-conns") == 0 && argi + 1 < argc) {
			char *end;

			errno = 0;
			max = strtoul(argv[++argi], &end, 10);
			if (errno || *end || end == argv[argi] || argv[argi][0] == '-' || max == 0 || max > 4096)
				die(EXIT_USAGE, "--max-conns needs a number from 1 to 4096");
		} else if (strcmp(argv[argi], "--help") == 0)
			usage(stdout, 0);
		else if (strcmp(argv[argi], "--version") == 0) {
			printf("%s %s\n", progname, FORGE_VERSION);
			return 0;
		} else {
			fprintf(stderr, "%s: error: unknown option or missing value: %s\n", progname, argv[argi]);
			usage(stderr, EXIT_USAGE);
		}
	}
	if (argc - argi != 2)
		usage(stderr, EXIT_USAGE);
	sock_path = argv[argi];
	load_rules(argv[argi + 1], &rules);
	if (logdir)
		logfd = open_log(logdir);
	if (!(kids = calloc(max, sizeof *kids)))
		die(EXIT_INTERNAL, "out of memory");

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		die(EXIT_INTERNAL, "sigaction: %s", strerror(errno));
	sa.sa_handler = on_stop;  /* no SA_RESTART: poll returns EINTR */
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0
	    || sigaction(SIGHUP, &sa, NULL) != 0)
		die(EXIT_INTERNAL, "sigaction: %s", strerror(errno));
	sa.sa_handler = on_child;
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		die(EXIT_INTERNAL, "sigaction: %s", strerror(errno));
	lfd = listen_on(sock_path);

	while (!stop_signal) {
		struct pollfd pfd = { lfd, POLLIN, 0 };
		int fd;
		pid_t pid, parent;

		reap(kids, &count);
		/* A second at most: a SIGCHLD landing just before poll costs no more. */
		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		if ((fd = accept(lfd, NULL, NULL)) < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				sleep(1);
			continue;
		}
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
			close(fd);
			continue;
		}
		if (count == max) {
			/* Never blocks: a short answer into a fresh socket's buffer. */
			if (fcntl(fd, F_SETFL, O_NONBLOCK) == 0)
				respond(fd, 503, "too many connections");
			egress_log(logfd, "deny", NULL, NULL, "too many connections");
			close(fd);
			continue;
		}
		parent = getpid();
		pid = fork();
		if (pid == 0) {
#ifdef __linux__
			(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
			sa.sa_handler = SIG_DFL;
			sigaction(SIGTERM, &sa, NULL);
			sigaction(SIGINT, &sa, NULL);
			sigaction(SIGHUP, &sa, NULL);
			sigaction(SIGCHLD, &sa, NULL);
			close(lfd);
			free(kids);
			if (getppid() != parent)
				_exit(0);  /* it died before PR_SET_PDEATHSIG */
			serve(fd, &rules, logfd);
			egress_rules_free(&rules);
			_exit(0);
		}
		if (pid > 0)
			kids[count++] = pid;
		close(fd);
	}

	unlink(sock_path);
	for (i = 0; i < count; i++)
		kill(kids[i], SIGTERM);
	while (count > 0) {
		pid_t pid = waitpid(-1, NULL, 0);

		if (pid < 0 && errno != EINTR)
			break;
		for (i = 0; pid > 0 && i < count; i++)
			if (kids[i] == pid) {
				kids[i] = kids[--count];
				break;
			}
	}
	free(kids);
	egress_rules_free(&rules);
	return 128 + stop_signal;
}

#endif /* FORGE_EGRESS_NO_MAIN */
