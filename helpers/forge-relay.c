/*
 * forge-relay — inside a namespace sandbox (which has only `lo`), listen on
 * a TCP address (127.0.0.1:3128) and forward each connection to the unix
 * socket of forge-egress or the secrets proxy outside (SPEC 4.5). HTTP_PROXY
 * and friends point at the TCP address. With --reverse, the other way: on
 * the host, the secrets proxy's unix socket in front of mitmdump's TCP port.
 *
 * One process per connection (server.c), at most --max-conns at once; nothing is
 * parsed here (the proxy decides everything). Linked statically with musl
 * where possible, so it runs in any image.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "forge-util.h"
#include "relay.h"
#include "server.h"

const char forge_help[] =
	"usage: forge-relay [--daemon] [--max-conns N] [--] ADDRESS:PORT SOCKET\n"
	"       forge-relay --reverse [--daemon] [--max-conns N] [--] SOCKET ADDRESS:PORT\n"
	"Listen on the IPv4 ADDRESS:PORT (e.g. 127.0.0.1:3128) and forward every\n"
	"connection to the unix socket SOCKET; with --reverse, listen on SOCKET\n"
	"(created owner-only) and forward to ADDRESS:PORT.\n"
	"  -d, --daemon     once listening, detach (own session, standard streams on\n"
	"                   /dev/null) and exit 0: the relay runs on in the background\n"
	"  --max-conns N    at most N connections at once (default 64)\n"
	"  -h, --help, --version\n";

#define RELAY_IDLE_MS 600000

static void parse_listen(const char *arg, struct sockaddr_in *sin)
{
	const char *colon = strrchr(arg, ':');
	char host[INET_ADDRSTRLEN];
	unsigned long port;
	char *end;

	memset(sin, 0, sizeof *sin);
	sin->sin_family = AF_INET;
	if (!colon || (size_t)(colon - arg) >= sizeof host)
		die(EXIT_USAGE, "ADDRESS:PORT expected, not '%s'", arg);
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1 || errno || *end || end == colon + 1
	    || colon[1] == '-' || colon[1] == '+' || port == 0 || port > 65535)
		die(EXIT_USAGE, "ADDRESS:PORT expected, not '%s'", arg);
	sin->sin_port = htons((unsigned short)port);
}

/* Either end: an IPv4 address or a unix socket path. */
union relay_addr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_un sun;
};

static socklen_t relay_addr_len(const union relay_addr *a)
{
	return a->sa.sa_family == AF_INET ? sizeof a->sin : sizeof a->sun;
}

static void parse_unix(const char *arg, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	if (strlen(arg) >= sizeof sun->sun_path)
		die(EXIT_USAGE, "the socket path is too long (at most %zu bytes)", sizeof sun->sun_path - 1);
	strcpy(sun->sun_path, arg);
}

/* The other end of every connection, and its name for messages. */
struct relay_target {
	union relay_addr addr;
	const char *name;
};

/* Runs in the child: one client, one connection to the other end. */
static void forward(int client, void *ctx)
{
	const struct relay_target *target = ctx;
	const union relay_addr *to = &target->addr;
	const char *name = target->name;
	int up = socket(to->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (up < 0)
		return;
	while (connect(up, &to->sa, relay_addr_len(to)) != 0) {
		if (errno != EINTR) {
			static const char down[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 37\r\n"
				"Connection: close\r\n\r\nforge-relay: the proxy is not running\n";

			fprintf(stderr, "%s: error: cannot connect to %s: %s\n", forge_progname(),
				name, strerror(errno));
			(void)relay_write_all(client, down, sizeof down - 1);
			return;
		}
	}
	relay_copy(client, up, RELAY_IDLE_MS);
}

int main(int argc, char **argv)
{
	union relay_addr from;
	struct relay_target to;
	struct server server;
	unsigned long max = SERVER_MAX_CONNS_DEFAULT;
	int argi, lfd, one = 1, reverse = 0, detach = 0, null = -1;

	for (argi = 1; argi < argc && argv[argi][0] == '-'; argi++) {
		help_option(argv[argi]);
		if (strcmp(argv[argi], "--") == 0) {
			argi++;
			break;
		} else if (strcmp(argv[argi], "--reverse") == 0)
			reverse = 1;
		else if (strcmp(argv[argi], "--daemon") == 0 || strcmp(argv[argi], "-d") == 0)
			detach = 1;
		else if (strcmp(argv[argi], "--max-conns") == 0 && argi + 1 < argc)
			max = server_max_conns(argv[++argi]);
		else
			die(EXIT_USAGE, "unknown option or missing value: %s", argv[argi]);
	}
	if (argc - argi != 2)
		die(EXIT_USAGE, "the listening and the forwarding address expected (%d operands given)", argc - argi);
	to.name = argv[argi + 1];
	if (reverse) {
		parse_unix(argv[argi], &from.sun);
		parse_listen(argv[argi + 1], &to.addr.sin);
	} else {
		parse_listen(argv[argi], &from.sin);
		parse_unix(argv[argi + 1], &to.addr.sun);
	}
	server_signals();

	lfd = socket(from.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die(EXIT_INTERNAL, "socket: %s", strerror(errno));
	if (reverse) {
		struct stat st;

		/* A stale socket is replaced; anything else is in the way. */
		if (lstat(from.sun.sun_path, &st) == 0 && (!S_ISSOCK(st.st_mode) || unlink(from.sun.sun_path) != 0))
			die(EXIT_UNAVAILABLE, "cannot listen on %s: something else is there", argv[argi]);
		umask(077);
	} else if (setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
		die(EXIT_INTERNAL, "setsockopt: %s", strerror(errno));
	if (bind(lfd, &from.sa, relay_addr_len(&from)) != 0 || listen(lfd, 64) != 0)
		die(EXIT_UNAVAILABLE, "cannot listen on %s: %s", argv[argi], strerror(errno));
	/*
	 * --daemon: the listener is there, so the caller may connect as soon as
	 * this process exits 0. The child needs no program of the image (no
	 * shell puts it in the background) and holds none of the caller's
	 * streams, so whoever waits for their end is not kept waiting.
	 */
	if (detach) {
		pid_t pid;

		if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
			die(EXIT_INTERNAL, "cannot open /dev/null: %s", strerror(errno));
		pid = fork();
		if (pid < 0)
			die(EXIT_INTERNAL, "fork: %s", strerror(errno));
		if (pid > 0)
			_exit(0);
		if (setsid() < 0 || chdir("/") != 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0
		    || dup2(null, 2) < 0)
			_exit(EXIT_INTERNAL);  /* no stream left to say so */
		close(null);
	}

	memset(&server, 0, sizeof server);
	server.listen_fd = lfd;
	server.max = max;
	server.serve = forward;  /* at the cap: the client sees the connection closed */
	server.ctx = &to;
	return server_run(&server);
}
