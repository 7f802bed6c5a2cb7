/*
 * Unit tests of the request head parser and the head rewrite of
 * forge-egress (helpers/http-head.c, SPEC 4.5). Prints TAP for automake's
 * TAP driver.
 */
#include <stdio.h>
#include <string.h>

#include "../helpers/http-head.h"
#include "tap.h"

#define HEAD_MAX 16384

/* A request head as the parser gets it: NUL-terminated, with its length. */
static int parse(const char *head, size_t len, struct egress_request *req, const char **why)
{
	static char buf[HEAD_MAX + 1];

	memcpy(buf, head, len);
	buf[len] = '\0';
	*why = "";
	return egress_parse_request(buf, len, req, why);
}

static void test_parse(void)
{
	static const struct {
		const char *head;
		int status, ip;
		const char *host;
		unsigned port;
		const char *why;
	} cases[] = {
		{ "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n", 0, 0, "api.example.com", 443, "" },
		{ "CONNECT API.Example.COM.:443 HTTP/1.1\r\n\r\n", 0, 0, "api.example.com", 443, "" },
		{ "GET http://example.com/x?y HTTP/1.1\r\nHost: example.com\r\n\r\n", 0, 0, "example.com", 80, "" },
		{ "GET http://example.com:8080 HTTP/1.0\r\n\r\n", 0, 0, "example.com", 8080, "" },
		{ "CONNECT example.com HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "port is missing" },
		{ "CONNECT example.com:0 HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "invalid port" },
		{ "CONNECT example.com:65536 HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "invalid port" },
		{ "CONNECT example.com:+443 HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "invalid port" },
		{ "CONNECT 198.51.100.7:443 HTTP/1.1\r\n\r\n", 0, 1, "198.51.100.7", 443, "" },
		{ "CONNECT 2130706433:443 HTTP/1.1\r\n\r\n", 0, 1, "2130706433", 443, "" },
		{ "CONNECT 127.1:443 HTTP/1.1\r\n\r\n", 0, 1, "127.1", 443, "" },
		{ "CONNECT 0x7f.0x1:443 HTTP/1.1\r\n\r\n", 0, 1, "0x7f.0x1", 443, "" },
		{ "CONNECT [::1]:443 HTTP/1.1\r\n\r\n", 0, 1, "[::1]", 443, "" },
		{ "CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n", 0, 1, "[::ffff:127.0.0.1]", 443, "" },
		{ "CONNECT [::1:443 HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "unclosed" },
		{ "GET https://example.com/ HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "needs CONNECT" },
		{ "GET /x HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, 0, NULL, 0, "not a proxy request" },
		{ "GET ftp://example.com/ HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "not a proxy request" },
		{ "GET http://a.com@b.com/ HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "user info" },
		{ "GET http://a.com%2eb.com/ HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "invalid host name" },
		{ "GET http://a..com/ HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "invalid host name" },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: b.com\r\n\r\n", 400, 0, NULL, 0, "does not match" },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: a.com:81\r\n\r\n", 400, 0, NULL, 0, "does not match" },
		{ "GET http://a.com/ HTTP/1.1\r\nhost: A.COM\r\n\r\n", 0, 0, "a.com", 80, "" },
		{ "GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n", 400, 0, NULL, 0, "more than one Host" },
		{ "CONNECT a.com:443 HTTP/1.1\r\nHost: b.com:443\r\n\r\n", 400, 0, NULL, 0, "does not match" },
		{ "GET http://a.com/ HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n", 400, 0, NULL, 0, "folded" },
		{ "GET http://a.com/ HTTP/1.1\nHost: a.com\r\n\r\n", 400, 0, NULL, 0, "bare CR or LF" },
		{ "GET http://a.com/ HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, 0, NULL, 0, "bare CR or LF" },
		{ "GET http://a.com/ HTTP/2\r\n\r\n", 400, 0, NULL, 0, "not HTTP/1.0" },
		{ "GET  http://a.com/ HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "malformed request line" },
		{ "G(T http://a.com/ HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, "malformed method" },
		{ "GET http://a.com/ HTTP/1.1\r\nBad Name: x\r\n\r\n", 400, 0, NULL, 0, "malformed header" },
		{ "GET http://a.com/ HTTP/1.1\r\n", 400, 0, NULL, 0, "incomplete" },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct egress_request req;
		const char *why;
		int status = parse(cases[i].head, strlen(cases[i].head), &req, &why);
		int pass = status == cases[i].status && strstr(why, cases[i].why) != NULL
			&& (status != 0 || (req.ip_literal == cases[i].ip && req.port == cases[i].port
				&& strcmp(req.host, cases[i].host) == 0));

		ok(pass, "request %zu: %s%s%s", i + 1, status ? "refused" : "parsed",
			status ? ": " : "", status ? cases[i].why : "");
	}
	{
		static const char nul[] = "CONNECT a.com\0.b.com:443 HTTP/1.1\r\n\r\n";
		struct egress_request req;
		const char *why;

		ok(parse(nul, sizeof nul - 1, &req, &why) == 400 && strstr(why, "NUL") != NULL,
			"a NUL byte anywhere in the head is refused");
	}
}

static void test_rewrite(void)
{
	static const char head[] =
		"POST http://Example.com:8080/p?q=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
		"Proxy-Authorization: x\r\nConnection: keep-alive\r\nAccept: */*\r\n"
		"Proxy-Connection: keep-alive\r\nProxy-Foo: 1\r\nContent-Length: 3\r\n\r\nabc";
	static const char want[] =
		"POST /p?q=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n"
		"Content-Length: 3\r\nConnection: close\r\n\r\n";
	static char out[HEAD_MAX + EGRESS_REWRITE_EXTRA];
	struct egress_request req;
	const char *why;
	size_t n;

	ok(parse(head, sizeof head - 1, &req, &why) == 0, "a plain request with a body parses");
	n = egress_rewrite_head(&req, out);
	ok(n == sizeof want - 1 && memcmp(out, want, n) == 0,
		"rewritten: origin-form, one Host, hop-by-hop headers dropped, Connection: close");
	ok(req.head_len == sizeof head - 4, "the body is not part of the head");
	ok(parse("GET http://a.com HTTP/1.0\r\n\r\n", 29, &req, &why) == 0
		&& egress_rewrite_head(&req, out) > 0 && memcmp(out, "GET / HTTP/1.0\r\nHost: a.com\r\n", 29) == 0,
		"an empty path becomes /");
}

int main(void)
{
	test_parse();
	test_rewrite();
	return tap_done();
}
