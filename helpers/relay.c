/*
 * relay.c — see relay.h.
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "relay.h"

#define RELAY_BUF 16384

struct relay_dir {
	int from, to, eof;
	size_t len, off;
	char buf[RELAY_BUF];
};

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

void relay_copy(int a, int b, int idle_ms)
{
	static struct relay_dir dir[2];
	int i;

	dir[0].from = a, dir[0].to = b, dir[0].eof = 0, dir[0].len = 0;
	dir[1].from = b, dir[1].to = a, dir[1].eof = 0, dir[1].len = 0;
	for (;;) {
		struct pollfd pfd[2];
		int r;

		if (dir[0].eof && dir[0].len == 0 && dir[1].eof && dir[1].len == 0)
			return;
		/* pfd[i] watches dir[i]: its source while empty, its sink while not. */
		for (i = 0; i < 2; i++) {
			pfd[i].fd = dir[i].len ? dir[i].to : dir[i].eof ? -1 : dir[i].from;
			pfd[i].events = dir[i].len ? POLLOUT : POLLIN;
			pfd[i].revents = 0;
		}
		r = poll(pfd, 2, idle_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		for (i = 0; i < 2; i++) {
			struct relay_dir *d = &dir[i];
			ssize_t n;

			if (!pfd[i].revents)
				continue;
			if (d->len == 0) {
				n = read(d->from, d->buf, sizeof d->buf);
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0 && errno != ECONNRESET)
					return;
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
					return;
				d->off += (size_t)n;
				d->len -= (size_t)n;
			}
		}
	}
}
