/*
 * exec-raw: a bare client of forge-sandbox-init's exec socket (the wire
 * protocol in forge-sandbox-init(1)), for t/sandbox-attack.bats to send
 * what forge-shell never would.
 *
 *   exec-raw SOCKET send COMMAND...   sends fds 0-2 as they are, the cwd and
 *                                     COMMAND; prints "status N", or
 *                                     "refused" when the server closes the
 *                                     connection without a status.
 *   exec-raw SOCKET stall SECS [header]  connects and sends nothing (with
 *                                     header: only the request's header and
 *                                     fds) for SECS seconds, then exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "exec-raw: error: %s: %s\n", what, strerror(errno));
	exit(70);
}

static void send_header(int sock, uint32_t argc, uint32_t length)
{
	uint32_t header[5] = { 0x31495346u, 0, argc, 0, length };
	int fds[3] = { 0, 1, 2 };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof fds)];
	} control;
	struct iovec iov = { header, sizeof header };
	struct msghdr msg;

	memset(&msg, 0, sizeof msg);
	memset(&control, 0, sizeof control);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof control.buf;
	CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), fds, sizeof fds);
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof header)
		die("sendmsg");
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr;
	char cwd[4096], *payload;
	size_t length;
	uint32_t frame[2];
	int sock;

	if (argc < 4 || strlen(argv[1]) >= sizeof addr.sun_path) {
		fputs("usage: exec-raw SOCKET send COMMAND... | exec-raw SOCKET stall SECS [header]\n", stderr);
		return 64;
	}
	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	strcpy(addr.sun_path, argv[1]);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof addr) != 0)
		die("connect");
	if (strcmp(argv[2], "stall") == 0) {
		if (argc > 4)
			send_header(sock, 1, 64);
		sleep((unsigned)atoi(argv[3]));
		return 0;
	}
	if (!getcwd(cwd, sizeof cwd))
		die("getcwd");
	length = strlen(cwd) + 1;
	for (int i = 3; i < argc; i++)
		length += strlen(argv[i]) + 1;
	payload = malloc(length);
	if (!payload)
		die("malloc");
	{
		char *p = stpcpy(payload, cwd) + 1;

		for (int i = 3; i < argc; i++)
			p = stpcpy(p, argv[i]) + 1;
	}
	send_header(sock, (uint32_t)(argc - 3), (uint32_t)length);
	if (send(sock, payload, length, MSG_NOSIGNAL) != (ssize_t)length) {
		if (errno != EPIPE && errno != ECONNRESET)
			die("send");
		puts("refused");
		return 0;
	}
	free(payload);
	for (size_t got = 0; got < sizeof frame;) {
		ssize_t n = read(sock, (char *)frame + got, sizeof frame - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0 || (n < 0 && errno == ECONNRESET)) {
			puts("refused");
			return 0;
		}
		if (n < 0)
			die("read");
		got += (size_t)n;
	}
	printf("status %u\n", (unsigned)frame[1]);
	return 0;
}
