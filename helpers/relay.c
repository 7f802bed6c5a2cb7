/*
 * relay.c — see relay.h.
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"

int relay_write_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

void relay_init(struct relay *r, int a, int b)
{
	r->dir[0].from = a, r->dir[0].to = b, r->dir[0].eof = 0, r->dir[0].len = 0;
	r->dir[1].from = b, r->dir[1].to = a, r->dir[1].eof = 0, r->dir[1].len = 0;
	r->bytes = 0;
}

int relay_done(const struct relay *r)
{
	return r->dir[0].eof && r->dir[0].len == 0 && r->dir[1].eof && r->dir[1].len == 0;
}

enum relay_step_result relay_step(struct relay *r, int ms)
{
	struct pollfd pfd[2];
	int i, ready;

	/* pfd[i] watches dir[i]: its source while empty, its sink while not. */
	for (i = 0; i < 2; i++) {
		const struct relay_dir *d = &r->dir[i];

		pfd[i].fd = d->len ? d->to : d->eof ? -1 : d->from;
		pfd[i].events = d->len ? POLLOUT : POLLIN;
		pfd[i].revents = 0;
	}
	ready = poll(pfd, 2, ms);
	if (ready < 0 && errno == EINTR)
		return RELAY_INTR;
	if (ready < 0)
		return RELAY_END;
	if (ready == 0)
		return RELAY_IDLE;
	for (i = 0; i < 2; i++) {
		struct relay_dir *d = &r->dir[i];
		ssize_t n;

		if (!pfd[i].revents)
			continue;
		if (d->len == 0) {
			n = read(d->from, d->buf, sizeof d->buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno != ECONNRESET)
				return RELAY_END;
			if (n <= 0) {
				d->eof = 1;
				(void)shutdown(d->to, SHUT_WR);
				continue;
			}
			d->len = (size_t)n;
			d->off = 0;
		} else {
			n = write(d->to, d->buf + d->off, d->len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return RELAY_END;
			d->off += (size_t)n;
			d->len -= (size_t)n;
			r->bytes += (unsigned long long)n;
		}
	}
	return RELAY_MOVED;
}

void relay_copy(int a, int b, int idle_ms)
{
	static struct relay r;

	relay_init(&r, a, b);
	for (;;) {
		enum relay_step_result step;

		if (relay_done(&r))
			return;
		step = relay_step(&r, idle_ms);
		if (step == RELAY_INTR)
			continue;
		if (step != RELAY_MOVED)
			return;
	}
}
