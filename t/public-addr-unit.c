/*
 * Unit tests of the public-address test of forge-egress
 * (helpers/public-addr.c, SPEC 4.5). Prints TAP for automake's TAP driver.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "../helpers/public-addr.h"
#include "tap.h"

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

int main(void)
{
	test_public();
	return tap_done();
}
