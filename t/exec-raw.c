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

#include "../helpers/exec-proto.h"
#include "../helpers/forge-util.h"

const char forge_help[] = "usage: exec-raw SOCKET send COMMAND... | exec-raw SOCKET stall SECS [header]\n";

static void send_header(int sock, uint32_t argc, uint32_t length)
{
	struct exec_header header = { EXEC_MAGIC, 0, argc, 0, length };
	static const int fds[3] = { 0, 1, 2 };

	if (exec_send_header(sock, &header, fds) != (ssize_t)sizeof header)
		die(EXIT_INTERNAL, "sendmsg: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	struct sockaddr_un addr;
	char cwd[4096], *payload;
	size_t length;
	uint32_t frame[2];
	int sock;

	if (argc < 4 || strlen(argv[1]) >= sizeof addr.sun_path)
		die(EXIT_USAGE, "SOCKET and a command expected");
	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	strcpy(addr.sun_path, argv[1]);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof addr) != 0)
		die(EXIT_INTERNAL, "connect: %s", strerror(errno));
	if (strcmp(argv[2], "stall") == 0) {
		if (argc > 4)
			send_header(sock, 1, 64);
		sleep((unsigned)atoi(argv[3]));
		return 0;
	}
	if (!getcwd(cwd, sizeof cwd))
		die(EXIT_INTERNAL, "getcwd: %s", strerror(errno));
	length = strlen(cwd) + 1;
	for (int i = 3; i < argc; i++)
		length += strlen(argv[i]) + 1;
	payload = malloc(length);
	if (!payload)
		die(EXIT_INTERNAL, "malloc: %s", strerror(errno));
	{
		char *p = stpcpy(payload, cwd) + 1;

		for (int i = 3; i < argc; i++)
			p = stpcpy(p, argv[i]) + 1;
	}
	send_header(sock, (uint32_t)(argc - 3), (uint32_t)length);
	if (send(sock, payload, length, MSG_NOSIGNAL) != (ssize_t)length) {
		if (errno != EPIPE && errno != ECONNRESET)
			die(EXIT_INTERNAL, "send: %s", strerror(errno));
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
			die(EXIT_INTERNAL, "read: %s", strerror(errno));
		got += (size_t)n;
	}
	printf("status %u\n", (unsigned)frame[1]);
	return 0;
}
