/*
 * libFuzzer harness for forge-egress's public-address test,
 * helpers/public-addr.c (build: make fuzz-public-addr). The input's first
 * 4 bytes are an IPv4 address, or its first 16 an IPv6 one (from 16 bytes
 * on). Aborts when an invariant of SPEC 4.5 breaks:
 *   - an IPv4 address mapped into IPv6 (::ffff:a.b.c.d) or behind the
 *     well-known NAT64 prefix (64:ff9b::/96) gets the verdict of the IPv4
 *     address itself;
 *   - 0/8, 127/8, 10/8, 172.16/12, 192.168/16, 100.64/10, 169.254/16,
 *     198.18/15, 224/4 and 240/4, and ::/128, ::1, fc00::/7, fe80::/10,
 *     fec0::/10, ff00::/8, 2002::/16 and 2001::/32 are never public;
 *   - an address of this host (in the interface list) is never public.
 * Crashes and sanitizer findings end the run by themselves.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../helpers/public-addr.h"

static void require(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz-public-addr: invariant violated: %s\n", what);
		abort();
	}
}

/* Whether the IPv4 address A is in a range that is never public. */
static int v4_private(const unsigned char *a)
{
	return a[0] == 0 || a[0] == 127 || a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16)
		|| (a[0] == 192 && a[1] == 168) || (a[0] == 100 && (a[1] & 0xc0) == 64)
		|| (a[0] == 169 && a[1] == 254) || (a[0] == 198 && (a[1] & 0xfe) == 18) || a[0] >= 224;
}

static int v6_private(const unsigned char *a)
{
	static const unsigned char zero[16];

	return (memcmp(a, zero, 15) == 0 && a[15] <= 1) || (a[0] & 0xfe) == 0xfc
		|| (a[0] == 0xfe && (a[1] & 0x80) == 0x80) || a[0] == 0xff
		|| (a[0] == 0x20 && a[1] == 0x02) || (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0);
}

static const char *check(const struct sockaddr *sa, socklen_t len)
{
	struct ifaddrs own;
	struct sockaddr_storage copy;
	const char *why = egress_not_public(sa, NULL);

	memset(&own, 0, sizeof own);
	memset(&copy, 0, sizeof copy);
	memcpy(&copy, sa, len);
	own.ifa_addr = (struct sockaddr *)&copy;
	require(egress_not_public(sa, &own) != NULL, "an address of this host is public");
	return why;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	const char *v4, *v6;

	if (size < 4)
		return 0;
	if (size >= 16) {
		memset(&sin6, 0, sizeof sin6);
		sin6.sin6_family = AF_INET6;
		memcpy(sin6.sin6_addr.s6_addr, data, 16);
		v6 = check((struct sockaddr *)&sin6, sizeof sin6);
		if (v6_private(data))
			require(v6 != NULL, "a never-public IPv6 address is public");
		return 0;
	}
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	memcpy(&sin.sin_addr, data, 4);
	v4 = check((struct sockaddr *)&sin, sizeof sin);
	if (v4_private(data))
		require(v4 != NULL, "a never-public IPv4 address is public");
	memset(&sin6, 0, sizeof sin6);
	sin6.sin6_family = AF_INET6;
	sin6.sin6_addr.s6_addr[10] = 0xff;
	sin6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(sin6.sin6_addr.s6_addr + 12, data, 4);
	v6 = check((struct sockaddr *)&sin6, sizeof sin6);
	require((v4 == NULL) == (v6 == NULL), "::ffff:a.b.c.d and a.b.c.d disagree");
	memset(sin6.sin6_addr.s6_addr, 0, 12);
	sin6.sin6_addr.s6_addr[1] = 0x64;
	sin6.sin6_addr.s6_addr[2] = 0xff;
	sin6.sin6_addr.s6_addr[3] = 0x9b;
	v6 = check((struct sockaddr *)&sin6, sizeof sin6);
	require((v4 == NULL) == (v6 == NULL), "64:ff9b::a.b.c.d and a.b.c.d disagree");
	return 0;
}
