/*
 * relay.h — copy bytes both ways between two connected sockets, shared by
 * forge-egress (client <-> destination) and forge-relay (the sandbox's
 * 127.0.0.1:3128 <-> forge-egress's unix socket).
 */
#ifndef FORGE_RELAY_H
#define FORGE_RELAY_H

#include <stddef.h>

#define RELAY_BUF 16384

/* Writes all of BUF; EINTR retried. Returns 0, or -1 with errno. */
int relay_write_all(int fd, const char *buf, size_t n);

/* One direction of a relay: FROM's bytes go to TO through BUF. */
struct relay_dir {
	int from, to, eof;
	size_t len, off;
	char buf[RELAY_BUF];
};

/*
 * A relay between A and B, for a caller that runs its own loop (forge-egress
 * looks at its live rules between steps). Two fixed buffers: memory does not
 * grow with the traffic. BYTES counts what was written on either side.
 */
struct relay {
	struct relay_dir dir[2];
	unsigned long long bytes;
};

enum relay_step_result {
	RELAY_END = -1,   /* an error: the relay is over */
	RELAY_IDLE = 0,   /* nothing moved for the time given */
	RELAY_MOVED = 1,  /* bytes moved (or an end of file was passed on) */
	RELAY_INTR = 2    /* poll was interrupted by a signal */
};

void relay_init(struct relay *r, int a, int b);

/* Both sides have closed and nothing is left to write. */
int relay_done(const struct relay *r);

/*
 * Waits up to MS for either side, then reads or writes once per ready
 * direction (an end of file is passed on as shutdown(SHUT_WR)).
 */
enum relay_step_result relay_step(struct relay *r, int ms);

/*
 * Copies A's bytes to B and B's to A until both sides have closed, an error,
 * or IDLE_MS without any traffic.
 */
void relay_copy(int a, int b, int idle_ms);

#endif
