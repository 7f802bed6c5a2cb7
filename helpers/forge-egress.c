/*
 * forge-egress — the allow-list proxy of the namespace backend (SPEC 4.5).
 *
 * Listens on a unix socket (the sandbox reaches it through forge-relay) and
 * serves HTTP CONNECT and plain HTTP (absolute-URI) requests, one request per
 * client connection:
 *   1. parse the request head (bounded; NUL bytes, bare CR/LF, folded
 *      headers, user info in the URI, a Host header that disagrees with the
 *      URI: 400);
 *   2. refuse an IP literal (the allow-list names hosts) and a host no
 *      allow-list entry matches (netrule.c, msb's semantics): 403;
 *   3. resolve the host once; refuse when any address is not public
 *      (loopback, unspecified, RFC 1918, CGNAT, link-local, benchmarking,
 *      reserved, ULA, site-local, multicast, broadcast, those forms mapped
 *      into IPv6, the IPv6 forms that embed an IPv4 address, or an address
 *      of this host): 403;
 *   4. connect to the addresses it checked — never a second lookup — and
 *      relay bytes both ways until one side closes. A CONNECT tunnel is
 *      opaque after the check; a plain request is sent with
 *      "Connection: close", so whatever else the client writes on that
 *      connection can only reach the host that was checked.
 * Every decision is one line appended to DIR/egress.log.
 *
 * One process per client connection (fork), at most --max-conns at once;
 * each child holds fixed buffers only, so memory is bounded by the cap.
 * The request parser (http-head.c) and the address check (public-addr.c)
 * are units with their own tests; the rules are plain functions here, which
 * t/egress-unit.c tests by including this file with FORGE_EGRESS_NO_MAIN
 * defined.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "forge-util.h"
#include "http-head.h"
#include "netrule.h"
#include "public-addr.h"
#include "relay.h"
#include "server.h"

const char forge_progname[] = "forge-egress";
const char forge_usage[] =
	"usage: forge-egress [--log DIR] [--max-conns N] [--] SOCKET RULESFILE\n";
const char forge_help[] =
	"Serve HTTP CONNECT and plain HTTP on the unix socket SOCKET (created\n"
	"owner-only), allowing only public destinations whose host matches an\n"
	"entry of RULESFILE (one allow-list entry per line, as forge-netrule\n"
	"reads them; '*' allows every host). Refusals are 403 Forbidden.\n"
	"  --log DIR        append one line per decision to DIR/egress.log\n"
	"  --max-conns N    at most N connections at once (default 64)\n"
	"  -h, --help, --version\n";

#define EGRESS_HEAD_MAX 16384    /* a request head larger than this: 431 */
#define EGRESS_HEAD_SECONDS 30   /* to read the head, resolve and connect */
#define EGRESS_CONNECT_MS 10000  /* per address */
#define EGRESS_IDLE_MS 600000    /* a relay with no traffic for this long ends */
#define EGRESS_REASON_MAX 512

/*
 * The request head (http-head.c) and which addresses are public
 * (public-addr.c) are units of their own, with their own tests.
 */

/* ------------------------------------------------------------------------ */
/* The rules                                                                 */

struct egress_rules {
	char **target;  /* valid entries, lower case */
	size_t count;
	int any;        /* a '*' entry: every host name */
};

static void egress_rules_free(struct egress_rules *rules)
{
	size_t i;

	for (i = 0; i < rules->count; i++)
		free(rules->target[i]);
	free(rules->target);
	memset(rules, 0, sizeof *rules);
}

/* Adds one line of the rules file. Returns -1 when out of memory. */
static int egress_rules_add(struct egress_rules *rules, const char *line, size_t n, FILE *warn)
{
	char reason[NETRULE_REASON_MAX], **grown, *t;
	size_t i;

	netrule_trim(&line, &n);
	if (n == 0)
		return 0;  /* a blank line of the rules file is no entry */
	switch (netrule_classify(line, n, 0, reason)) {
	case NETRULE_WILDCARD:
		rules->any = 1;
		return 0;
	case NETRULE_REJECTED:
		if (warn)
			fprintf(warn, "%s: warning: ignoring an invalid allow-list entry: %s\n",
				forge_progname, reason);
		return 0;
	case NETRULE_HOST:
		break;
	}
	grown = realloc(rules->target, (rules->count + 1) * sizeof *grown);
	if (!grown)
		return -1;
	rules->target = grown;
	if (!(t = malloc(n + 1)))
		return -1;
	for (i = 0; i < n; i++)
		t[i] = (char)netrule_lower((unsigned char)line[i]);
	t[n] = '\0';
	rules->target[rules->count++] = t;
	return 0;
}

static int egress_allowed(const struct egress_rules *rules, const char *host, size_t n)
{
	size_t i;

	if (rules->any)
		return 1;
	for (i = 0; i < rules->count; i++)
		if (netrule_match(rules->target[i], strlen(rules->target[i]), host, n))
			return 1;
	return 0;
}

#ifndef FORGE_EGRESS_NO_MAIN

/* ------------------------------------------------------------------------ */
/* The decision log                                                          */

/* Appends one line: TIME VERDICT METHOD HOST:PORT ADDRESS|- [REASON]. */
static void egress_log(int fd, const char *verdict, const struct egress_request *req,
	const char *addr, const char *reason)
{
	char line[EGRESS_REASON_MAX + 512], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int n;

	if (fd < 0)
		return;
	if (!gmtime_r(&now, &tm) || strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		strcpy(stamp, "-");
	if (req && req->host_len)
		n = snprintf(line, sizeof line, "%s %s %s %s:%u %s%s%s\n", stamp, verdict,
			req->connect ? "CONNECT" : "HTTP", req->host, req->port, addr ? addr : "-",
			reason ? " " : "", reason ? reason : "");
	else
		n = snprintf(line, sizeof line, "%s %s - - - %s\n", stamp, verdict, reason ? reason : "");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line) {
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	/* One write to an O_APPEND file: lines of concurrent children never interleave. */
	while (write(fd, line, (size_t)n) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------------ */
/* One client connection (a child process)                                  */

static const char *status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

/* Answers STATUS with a one-line reason as the body. */
static void respond(int fd, int status, const char *reason)
{
	char buf[EGRESS_REASON_MAX + 256];
	int body = (int)strlen(forge_progname) + 2 + (int)strlen(reason) + 1;
	int n = snprintf(buf, sizeof buf,
		"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
		"Connection: close\r\n\r\n%s: %s\n", status, status_text(status), body, forge_progname, reason);

	if (n > 0 && (size_t)n < sizeof buf)
		(void)relay_write_all(fd, buf, (size_t)n);
}

static void addr_text(const struct sockaddr *sa, char *out, size_t size)
{
	const void *a = sa->sa_family == AF_INET
		? (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr
		: (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

	if (!inet_ntop(sa->sa_family, a, out, (socklen_t)size))
		snprintf(out, size, "?");
}

/* Connects to SA within EGRESS_CONNECT_MS. Returns the socket or -1 (errno). */
static int connect_to(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), flags, err = 0, r;
	socklen_t elen = sizeof err;
	struct pollfd pfd;

	if (fd < 0)
		return -1;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		goto fail;
	if (connect(fd, sa, len) < 0) {
		if (errno != EINPROGRESS && errno != EINTR)
			goto fail;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		while ((r = poll(&pfd, 1, EGRESS_CONNECT_MS)) < 0 && errno == EINTR)
			;
		if (r == 0) {
			errno = ETIMEDOUT;
			goto fail;
		}
		if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
			goto fail;
		if (err) {
			errno = err;
			goto fail;
		}
	}
	if (fcntl(fd, F_SETFL, flags) < 0)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* Serves one client connection; runs in its own process. */
static void serve(int client, const struct egress_rules *rules, int logfd)
{
	static char head[EGRESS_HEAD_MAX], out[EGRESS_HEAD_MAX + 512];
	struct egress_request req;
	struct addrinfo hints, *res = NULL, *ai;
	struct ifaddrs *own = NULL;
	char addr[INET6_ADDRSTRLEN], reason[EGRESS_REASON_MAX];
	const char *why;
	size_t len = 0;
	int status, up = -1, err = 0;

	alarm(EGRESS_HEAD_SECONDS);
	while (egress_head_end(head, len) == 0) {
		ssize_t n;

		if (len == sizeof head - 1) {
			egress_log(logfd, "deny", NULL, NULL, "request head too large");
			respond(client, 431, "request head too large");
			return;
		}
		n = read(client, head + len, sizeof head - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;  /* the client went away before asking anything */
		len += (size_t)n;
	}
	head[len] = '\0';
	if ((status = egress_parse_request(head, len, &req, &why)) != 0) {
		egress_log(logfd, "deny", &req, NULL, why);
		respond(client, status, why);
		return;
	}
	if (req.ip_literal) {
		why = "an IP literal is refused (the allow-list names hosts)";
		egress_log(logfd, "deny", &req, NULL, why);
		respond(client, 403, why);
		return;
	}
	if (!egress_allowed(rules, req.host, req.host_len)) {
		snprintf(reason, sizeof reason, "%s is not in the allow-list", req.host);
		egress_log(logfd, "deny", &req, NULL, reason);
		respond(client, 403, reason);
		return;
	}

	/* One resolution; every address it gave must be public. */
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((status = getaddrinfo(req.host, NULL, &hints, &res)) != 0) {
		snprintf(reason, sizeof reason, "cannot resolve %s: %s", req.host, gai_strerror(status));
		egress_log(logfd, "deny", &req, NULL, reason);
		respond(client, 502, reason);
		return;
	}
	if (getifaddrs(&own) != 0) {
		snprintf(reason, sizeof reason, "cannot list this host's addresses: %s", strerror(errno));
		egress_log(logfd, "deny", &req, NULL, reason);
		respond(client, 502, reason);
		freeaddrinfo(res);
		return;
	}
	for (ai = res; ai; ai = ai->ai_next)
		if ((why = egress_not_public(ai->ai_addr, own))) {
			addr_text(ai->ai_addr, addr, sizeof addr);
			snprintf(reason, sizeof reason, "%s resolves to %s, which is not public (%s)",
				req.host, addr, why);
			egress_log(logfd, "deny", &req, addr, reason);
			respond(client, 403, reason);
			freeifaddrs(own);
			freeaddrinfo(res);
			return;
		}
	freeifaddrs(own);

	/* Connect to exactly the addresses checked above. */
	for (ai = res; ai && up < 0; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)(void *)ai->ai_addr)->sin_port = htons((unsigned short)req.port);
		else
			((struct sockaddr_in6 *)(void *)ai->ai_addr)->sin6_port = htons((unsigned short)req.port);
		addr_text(ai->ai_addr, addr, sizeof addr);
		if ((up = connect_to(ai->ai_addr, ai->ai_addrlen)) < 0)
			err = errno;
	}
	freeaddrinfo(res);
	if (up < 0) {
		snprintf(reason, sizeof reason, "cannot connect to %s port %u: %s", addr, req.port,
			strerror(err));
		egress_log(logfd, "deny", &req, addr, reason);
		respond(client, 502, reason);
		return;
	}
	egress_log(logfd, "allow", &req, addr, NULL);
	alarm(0);

	if (req.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		if (relay_write_all(client, ok, sizeof ok - 1) != 0)
			return;
	} else if (relay_write_all(up, out, egress_rewrite_head(&req, out)) != 0)
		return;
	/* Bytes the client sent after the head go to the host just checked. */
	if (len > req.head_len && relay_write_all(up, head + req.head_len, len - req.head_len) != 0)
		return;
	relay_copy(client, up, EGRESS_IDLE_MS);
	close(up);
}

/* ------------------------------------------------------------------------ */
/* The listener                                                              */

static void load_rules(const char *path, struct egress_rules *rules)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t size = 0;
	ssize_t n;

	if (!f)
		die(EXIT_DATA, "cannot read the rules file %s: %s", path, strerror(errno));
	while ((n = getline(&line, &size, f)) != -1)
		if (egress_rules_add(rules, line, (size_t)n, stderr) != 0)
			die(EXIT_INTERNAL, "out of memory");
	if (ferror(f))
		die(EXIT_DATA, "cannot read the rules file %s: %s", path, strerror(errno));
	free(line);
	fclose(f);
}

static int open_log(const char *dir)
{
	char path[4096];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof path, "%s/egress.log", dir) >= (int)sizeof path)
		die(EXIT_USAGE, "the log folder's path is too long");
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		die(EXIT_CANTCREAT, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		die(EXIT_CANTCREAT, "%s is not a regular file", path);
	return fd;
}

/*
 * Binds and listens on a temporary name beside PATH, then renames it into
 * place: whoever sees PATH can connect at once. Owner-only (umask 077).
 */
static int listen_on(const char *path)
{
	struct sockaddr_un sun;
	char tmp[sizeof sun.sun_path];
	struct stat st;
	mode_t mask;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (snprintf(tmp, sizeof tmp, "%s.new", path) >= (int)sizeof tmp)
		die(EXIT_USAGE, "the socket path is too long (at most %zu bytes)", sizeof tmp - 5);
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		die(EXIT_CANTCREAT, "%s exists and is not a socket", path);
	if (lstat(tmp, &st) == 0 && (!S_ISSOCK(st.st_mode) || unlink(tmp) != 0))
		die(EXIT_CANTCREAT, "cannot replace %s", tmp);
	memcpy(sun.sun_path, tmp, strlen(tmp) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die(EXIT_INTERNAL, "socket: %s", strerror(errno));
	mask = umask(077);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) != 0)
		die(EXIT_CANTCREAT, "cannot create the socket %s: %s", tmp, strerror(errno));
	umask(mask);
	if (chmod(tmp, 0600) != 0 || listen(fd, 64) != 0 || rename(tmp, path) != 0)
		die(EXIT_CANTCREAT, "cannot set up the socket %s: %s", path, strerror(errno));
	return fd;
}

/* What every child serves with. */
struct egress_ctx {
	struct egress_rules rules;
	int logfd;
};

static void egress_serve(int client, void *ctx)
{
	struct egress_ctx *c = ctx;

	serve(client, &c->rules, c->logfd);
	egress_rules_free(&c->rules);
}

/* At the cap: a short answer, which never blocks in a fresh socket's buffer. */
static void egress_full(int client, void *ctx)
{
	const struct egress_ctx *c = ctx;

	if (fcntl(client, F_SETFL, O_NONBLOCK) == 0)
		respond(client, 503, "too many connections");
	egress_log(c->logfd, "deny", NULL, NULL, "too many connections");
}

int main(int argc, char **argv)
{
	struct egress_ctx ctx;
	struct server server;
	const char *logdir = NULL, *sock_path;
	unsigned long max = SERVER_MAX_CONNS_DEFAULT;
	int argi, status;

	memset(&ctx, 0, sizeof ctx);
	ctx.logfd = -1;
	for (argi = 1; argi < argc && argv[argi][0] == '-'; argi++) {
		help_option(argv[argi]);
		if (strcmp(argv[argi], "--") == 0) {
			argi++;
			break;
		} else if (strcmp(argv[argi], "--log") == 0 && argi + 1 < argc)
			logdir = argv[++argi];
		else if (strcmp(argv[argi], "--max-conns") == 0 && argi + 1 < argc)
			max = server_max_conns(argv[++argi]);
		else
			die(EXIT_USAGE, "unknown option or missing value: %s", argv[argi]);
	}
	if (argc - argi != 2)
		die(EXIT_USAGE, "SOCKET and RULESFILE expected (%d operands given)", argc - argi);
	sock_path = argv[argi];
	load_rules(argv[argi + 1], &ctx.rules);
	if (logdir)
		ctx.logfd = open_log(logdir);
	server_signals();

	memset(&server, 0, sizeof server);
	server.listen_fd = listen_on(sock_path);
	server.max = max;
	server.serve = egress_serve;
	server.full = egress_full;
	server.ctx = &ctx;
	status = server_run(&server);
	unlink(sock_path);
	egress_rules_free(&ctx.rules);
	return status;
}

#endif /* FORGE_EGRESS_NO_MAIN */
