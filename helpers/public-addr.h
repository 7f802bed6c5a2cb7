/*
 * public-addr.h — whether an address is a public destination, the test
 * forge-egress applies to every address a host name resolves to (SPEC
 * 4.5): loopback, unspecified, RFC 1918, CGNAT, link-local, benchmarking,
 * reserved, ULA, site-local, multicast, broadcast, those forms mapped into
 * IPv6, the IPv6 forms that embed an IPv4 address, and an address of this
 * host are not. No I/O: t/public-addr-unit.c tests it as it is.
 */
#ifndef FORGE_PUBLIC_ADDR_H
#define FORGE_PUBLIC_ADDR_H

#include <ifaddrs.h>
#include <sys/socket.h>

/*
 * NULL when SA is a public destination, else why not. OWN lists this host's
 * interface addresses (getifaddrs; NULL: none), which are never public
 * destinations.
 */
const char *egress_not_public(const struct sockaddr *sa, const struct ifaddrs *own);

#endif
