/*
 * Unit tests of forge-egress's request parser, head rewrite and address
 * classification (SPEC 4.5). Prints TAP for automake's TAP driver.
 */
#define FORGE_EGRESS_NO_MAIN
#include "../helpers/forge-egress.c"

static int test_count, test_failed;

static void ok(int pass, const char *fmt, ...)
{
	va_list ap;

	test_count++;
	if (!pass)
		test_failed++;
	printf("%sok %d - ", pass ? "" : "not ", test_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* A request head as the parser gets it: NUL-terminated, with its length. */
static int parse(const char *head, size_t len, struct egress_request *req, const char **why)
{
	static char buf[EGRESS_HEAD_MAX + 1];

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
	static char out[EGRESS_HEAD_MAX + 512];
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

static void test_public(void)
{
	static const struct { const char *addr; const char *why; } cases[] = {
		{ "0.0.0.0", "unspecified" }, { "0.1.2.3", "unspecified" },
		{ "127.0.0.1", "loopback" }, { "127.255.0.9", "loopback" },
		{ "10.1.2.3", "RFC 1918" }, { "172.16.0.1", "RFC 1918" }, { "172.31.255.255", "RFC 1918" },
		{ "192.168.1.1", "RFC 1918" }, { "100.64.0.1", "CGNAT" }, { "100.127.255.255", "CGNAT" },
		{ "169.254.169.254", "link-local" }, { "224.0.0.1", "multicast" }, { "239.1.1.1", "multicast" },
		{ "255.255.255.255", "broadcast" },
		{ "::", "unspecified" }, { "::1", "loopback" }, { "fc00::1", "unique local" },
		{ "fd12:3456::1", "unique local" }, { "fe80::1", "link-local" }, { "febf::1", "link-local" },
		{ "ff02::1", "multicast" }, { "::ffff:127.0.0.1", "loopback" }, { "::ffff:10.0.0.1", "RFC 1918" },
		{ "::127.0.0.1", "IPv4-compatible" }, { "::8.8.8.8", "IPv4-compatible" },
		{ "64:ff9b::a9fe:a9fe", "link-local" }, { "64:ff9b::c0a8:101", "RFC 1918" },
		{ "::ffff:0:10.0.0.1", "IPv4-translated" }, { "::ffff:0:8.8.8.8", "IPv4-translated" },
		{ "64:ff9b:1::a00:1", "local-use NAT64" }, { "64:ff9b:1:ffff::1", "local-use NAT64" },
		{ "2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo" }, { "2001::1", "Teredo" },
		{ "2002:c0a8:101::1", "6to4" }, { "2002:808:808::1", "6to4" }, { "2002::", "6to4" },
		{ "fec0::1", "site-local" }, { "feff:ffff::1", "site-local" },
		{ "ff05::2", "multicast" }, { "::ffff:255.255.255.255", "broadcast" },
		{ "198.18.0.1", "benchmarking" }, { "198.19.255.255", "benchmarking" },
		{ "240.0.0.1", "reserved" }, { "254.1.2.3", "reserved" },
		{ "::ffff:224.0.0.1", "multicast" }, { "::ffff:100.64.0.1", "CGNAT" },
		{ "8.8.8.8", NULL }, { "172.15.255.255", NULL }, { "172.32.0.1", NULL }, { "100.63.255.255", NULL },
		{ "100.128.0.1", NULL }, { "192.0.2.1", NULL }, { "198.51.100.7", NULL }, { "203.0.113.9", NULL },
		{ "2001:db8::1", NULL }, { "2606:4700::1111", NULL }, { "::ffff:198.51.100.7", NULL },
		{ "64:ff9b::808:808", NULL }, { "2001:1::1", NULL }, { "2003::1", NULL }, { "2001:db8:ffff::1", NULL },
		{ "fbff::1", NULL }, { "198.17.255.255", NULL }, { "198.20.0.1", NULL },
		{ "223.255.255.255", NULL }, { "192.0.2.255", NULL },
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sockaddr_storage ss;
		const char *why;

		memset(&ss, 0, sizeof ss);
		if (strchr(cases[i].addr, ':')) {
			ss.ss_family = AF_INET6;
			inet_pton(AF_INET6, cases[i].addr, &((struct sockaddr_in6 *)(void *)&ss)->sin6_addr);
		} else {
			ss.ss_family = AF_INET;
			inet_pton(AF_INET, cases[i].addr, &((struct sockaddr_in *)(void *)&ss)->sin_addr);
		}
		why = egress_not_public((struct sockaddr *)&ss, NULL);
		ok(cases[i].why ? why && strstr(why, cases[i].why) : why == NULL, "%s is %s", cases[i].addr,
			cases[i].why ? cases[i].why : "public");
	}
	{
		struct sockaddr_in own, dest;
		struct ifaddrs ifa;

		memset(&own, 0, sizeof own);
		memset(&ifa, 0, sizeof ifa);
		own.sin_family = AF_INET;
		inet_pton(AF_INET, "198.51.100.1", &own.sin_addr);
		ifa.ifa_addr = (struct sockaddr *)&own;
		dest = own;
		ok(egress_not_public((struct sockaddr *)&dest, &ifa) != NULL,
			"an address of this host is not public, even in a public range");
	}
}

static void test_rules(void)
{
	struct egress_rules rules;
	static const char *const lines[] = { " *.Example.com \n", "bad:443\n", "\n", "exact.org\n" };
	size_t i;

	memset(&rules, 0, sizeof rules);
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
		egress_rules_add(&rules, lines[i], strlen(lines[i]), NULL);
	ok(rules.count == 2 && !rules.any, "valid entries kept, invalid and blank ones dropped");
	ok(egress_allowed(&rules, "a.example.com", 13) && egress_allowed(&rules, "exact.org", 9)
		&& !egress_allowed(&rules, "www.exact.org", 13) && !egress_allowed(&rules, "bad", 3),
		"matching uses the entries, lowercased");
	egress_rules_add(&rules, "*\n", 2, NULL);
	ok(rules.any && egress_allowed(&rules, "anything.net", 12), "'*' allows every host name");
	egress_rules_free(&rules);
}

int main(void)
{
	test_parse();
	test_rewrite();
	test_public();
	test_rules();
	printf("1..%d\n", test_count);
	return test_failed ? 1 : 0;
}
