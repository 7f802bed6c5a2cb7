/*
 * public-addr.c — see public-addr.h.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "public-addr.h"

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
const char *egress_not_public(const struct sockaddr *sa, const struct ifaddrs *own)
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
