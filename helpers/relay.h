/*
 * relay.h — copy bytes both ways between two connected sockets, shared by
 * forge-egress (client <-> destination) and forge-relay (the sandbox's
 * 127.0.0.1:3128 <-> forge-egress's unix socket).
 */
#ifndef FORGE_RELAY_H
#define FORGE_RELAY_H

#include <stddef.h>

/* Writes all of BUF; EINTR retried. Returns 0, or -1 with errno. */
int relay_write_all(int fd, const char *buf, size_t n);

/*
 * Copies A's bytes to B and B's to A until both sides have closed (an end of
 * file is passed on as shutdown(SHUT_WR)), an error, or IDLE_MS without any
 * traffic. Uses two fixed buffers: memory does not grow with the traffic.
 */
void relay_copy(int a, int b, int idle_ms);

#endif
