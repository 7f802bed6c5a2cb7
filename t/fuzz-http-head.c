/*
 * libFuzzer harness for forge-egress's request parser, helpers/http-head.c
 * (build: make fuzz-http-head). The input is a request head as a client would send it.
 * Aborts when an invariant of SPEC 4.5 breaks:
 *   - a parsed request names a host that is lower case, without a trailing
 *     dot, valid as a host name (or flagged as an IP literal), with a port
 *     from 1 to 65535;
 *   - the head it forwards (plain HTTP) has an origin-form target, exactly
 *     one Host line (the checked host), no Proxy-* or Connection header
 *     but the final "Connection: close", no NUL and no bare CR or LF, and
 *     ends with CRLF CRLF.
 * Crashes and sanitizer findings end the run by themselves.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../helpers/http-head.h"
#include "../helpers/netrule.h"

#define HEAD_MAX 16384  /* forge-egress's bound */

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-http-head: invariant violated: %s\n", what);
		abort();
	}
}

static void check_forwarded(const struct egress_request *req, const char *out, size_t n)
{
	const char *line = out, *end = out + n, *eol;
	size_t i, hosts = 0, lines = 0;
	char want[NETRULE_NAME_MAX + 16];

	require(n >= 4 && memcmp(end - 4, "\r\n\r\n", 4) == 0, "forwarded head does not end with CRLF CRLF");
	for (i = 0; i < n; i++) {
		require(out[i] != '\0', "NUL in the forwarded head");
		require(out[i] != '\r' || (i + 1 < n && out[i + 1] == '\n'), "bare CR in the forwarded head");
		require(out[i] != '\n' || (i > 0 && out[i - 1] == '\r'), "bare LF in the forwarded head");
	}
	eol = strstr(out, "\r\n");
	require(memchr(out, ' ', (size_t)(eol - out)) != NULL, "no space in the request line");
	require(((const char *)memchr(out, ' ', (size_t)(eol - out)))[1] == '/', "target not origin-form");
	snprintf(want, sizeof want, "host: %s", req->host);
	for (line = eol + 2; line < end - 2; line = eol + 2, lines++) {
		eol = strstr(line, "\r\n");
		if (egress_ieq(line, 5, "host:")) {
			hosts++;
			require(egress_ieq(line, strlen(want), want), "forwarded Host is not the checked host");
		}
		require(!egress_ieq(line, 6, "proxy-"), "a Proxy-* header is forwarded");
		if (egress_ieq(line, 11, "connection:"))
			require(line + 19 == end - 2, "a Connection header other than the final one");
	}
	require(hosts == 1, "not exactly one Host header forwarded");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[HEAD_MAX + 1], out[HEAD_MAX + EGRESS_REWRITE_EXTRA];
	struct egress_request req;
	const char *why = NULL, *host;
	size_t i, labels;
	char reason[NETRULE_REASON_MAX];

	if (size > HEAD_MAX)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (egress_parse_request(buf, size, &req, &why) != 0) {
		require(why != NULL && why[0] != '\0', "a refusal without a reason");
		return 0;
	}
	host = req.host;
	require(req.port >= 1 && req.port <= 65535, "port out of range");
	require(req.host_len == strlen(host) && req.host_len > 0, "host length");
	require(req.head_len <= size, "head longer than the input");
	for (i = 0; i < req.host_len; i++)
		require(host[i] < 'A' || host[i] > 'Z', "host not in lower case");
	if (!req.ip_literal) {
		require(host[req.host_len - 1] != '.', "trailing dot kept");
		require(netrule_check_name(host, req.host_len, &labels, reason) == NETRULE_HOST,
			"an invalid host name passed");
	}
	if (!req.connect)
		check_forwarded(&req, out, egress_rewrite_head(&req, out));
	return 0;
}
