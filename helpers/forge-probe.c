/*
 * forge-probe: the containment probes of `forge-sandbox check` (SPEC 4.6).
 *
 * One static program for both backends, in two roles:
 *   forge-probe listen HITFILE NONCE   on the host: the listeners the
 *       network probes aim at (127.0.0.1 twice, and every non-loopback IPv4
 *       address of the host, which are not public); prints "TAG ADDR PORT"
 *       per listener, then closes its stdout; each connection gets "NONCE\n"
 *       and appends "TAG\n" to HITFILE, so the host sees a probe that got
 *       through whatever the probe says. It dies with its parent, or after
 *       LISTEN_LIFETIME seconds.
 *   forge-probe run OPTION...          inside the sandbox: one line per
 *       probe on stdout, "NAME<TAB>CLASS<TAB>VERDICT<TAB>DETAIL", VERDICT
 *       held, escaped or host (the host decides: the secrets probe, whose
 *       haystack goes to stderr, since the value itself never goes in).
 * Every probe changes nothing it could reach: a file it manages to create
 * is removed at once, a sysctl it manages to open gets its own value back.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "forge-util.h"

const char forge_help[] =
	"usage: forge-probe listen HITFILE NONCE\n"
	"       forge-probe run [--nonce N] [--canary FILE] [--forge-dir DIR]\n"
	"         [--hooks DIR] [--config FILE] [--commondir FILE] [--alternates FILE]\n"
	"         [--proc-sys] [--loopback ADDR:PORT] [--private ADDR:PORT]...\n"
	"         [--outside ADDR:PORT] [--secrets] [--tty] [--seccomp]\n"
	"The containment probes of forge-sandbox check (forge-sandbox(1)); run by\n"
	"forge-sandbox, not by hand.\n";

#define LISTEN_LIFETIME 120
#define MAX_LISTENERS 16
#define CONNECT_MS 250
#define MAX_PRIVATE 8

/* --- output ------------------------------------------------------------------ */

/*
 * report: one probe's line. The detail is made one printable field: tabs,
 * newlines and other control bytes become '?'.
 */
static void report(const char *name, const char *class, const char *verdict, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	for (i = 0; detail[i] != '\0'; i++)
		if ((unsigned char)detail[i] < 0x20 || detail[i] == 0x7f)
			detail[i] = '?';
	printf("%s\t%s\t%s\t%s\n", name, class, verdict, detail);
}

static const char *held_if(int held) { return held ? "held" : "escaped"; }

/* --- files ----------------------------------------------------------------------- */

/* probe_read: the canary outside every mount must not be readable. */
static void probe_read(const char *name, const char *class, const char *path)
{
	char c;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		report(name, class, "held", "cannot open %s: %s", path, strerror(errno));
		return;
	}
	if (read(fd, &c, 1) < 0)
		report(name, class, "held", "%s opens but cannot be read: %s", path, strerror(errno));
	else
		report(name, class, "escaped", "read %s, a file outside every mount", path);
	close(fd);
}

/*
 * probe_create: PATH (which does not exist) must not be creatable. A file
 * made is removed at once; with make_parent, a missing parent folder is
 * tried too (and removed again).
 */
static void probe_create(const char *name, const char *class, const char *path, int make_parent)
{
	char parent[4096];
	char *slash;
	int made_parent = 0, fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0 && errno == ENOENT && make_parent && strlen(path) < sizeof parent) {
		strcpy(parent, path);
		slash = strrchr(parent, '/');
		if (slash != NULL && slash != parent) {
			*slash = '\0';
			if (mkdir(parent, 0700) == 0) {
				made_parent = 1;
				fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
			}
		}
	}
	err = errno;
	if (fd >= 0) {
		close(fd);
		if (unlink(path) != 0)
			warn("cannot remove %s: %s", path, strerror(errno));
	}
	if (made_parent && rmdir(parent) != 0)
		warn("cannot remove %s: %s", parent, strerror(errno));
	if (fd >= 0)
		report(name, class, "escaped", "created %s%s (removed again)", path,
		       made_parent ? " and the folder holding it" : "");
	else if (made_parent)
		report(name, class, "escaped", "created the folder holding %s (removed again); the file: %s",
		       path, strerror(err));
	else
		report(name, class, "held", "cannot create %s: %s", path, strerror(err));
}

/*
 * probe_write: PATH must not be writable: opened for appending (and closed
 * with nothing written) when it exists, else probe_create.
 */
static void probe_write(const char *name, const char *class, const char *path, int make_parent)
{
	struct stat st;
	int fd;

	if (lstat(path, &st) != 0 && errno == ENOENT) {
		probe_create(name, class, path, make_parent);
		return;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		report(name, class, "held", "cannot open %s for writing: %s", path, strerror(errno));
		return;
	}
	close(fd);
	report(name, class, "escaped", "opened %s for writing (nothing written)", path);
}

/*
 * probe_proc_sys: /proc/sys must not be writable. A sysctl only root may
 * change is opened and given back the value it has, so a probe that gets
 * through changes nothing.
 */
static void probe_proc_sys(void)
{
	static const char *const files[] = {
		"/proc/sys/kernel/printk_ratelimit_burst",
		"/proc/sys/kernel/printk_ratelimit",
		"/proc/sys/vm/swappiness",
	};
	char value[128];
	size_t i;
	ssize_t n = -1;
	int fd = -1;

	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		fd = open(files[i], O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			break;
	}
	if (fd < 0) {
		report("proc-sys", "kernel", "held", "no sysctl to read under /proc/sys: %s", strerror(errno));
		return;
	}
	n = read(fd, value, sizeof value - 1);
	close(fd);
	if (n <= 0) {
		report("proc-sys", "kernel", "held", "cannot read %s", files[i]);
		return;
	}
	fd = open(files[i], O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		report("proc-sys", "kernel", "held", "cannot open %s for writing: %s", files[i], strerror(errno));
		return;
	}
	if (write(fd, value, (size_t)n) == n) {
		value[n] = '\0';
		value[strcspn(value, "\n")] = '\0';
		report("proc-sys", "kernel", "escaped", "wrote %s (its own value %s, back)", files[i], value);
	} else {
		report("proc-sys", "kernel", "held", "cannot write %s: %s", files[i], strerror(errno));
	}
	close(fd);
}

/* --- network -------------------------------------------------------------------- */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* parse_endpoint "A.B.C.D:PORT" into SA. Returns 0, or -1 when it is not one. */
static int parse_endpoint(const char *text, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon = strrchr(text, ':');
	char *end;
	long port;

	if (colon == NULL || (size_t)(colon - text) >= sizeof host)
		return -1;
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == colon + 1 || port < 1 || port > 65535)
		return -1;
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((unsigned short)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/*
 * dial SA: a TCP connection within CONNECT_MS. Returns the descriptor, or
 * -1 with errno (ETIMEDOUT when nothing answered).
 */
static int dial(const struct sockaddr_in *sa)
{
	struct pollfd p;
	socklen_t len = sizeof(int);
	int fd, err = 0, rc;
	long long deadline = now_ms() + CONNECT_MS;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	p.fd = fd;
	p.events = POLLOUT;
	for (;;) {
		long long left = deadline - now_ms();

		if (left <= 0) {
			close(fd);
			errno = ETIMEDOUT;
			return -1;
		}
		rc = poll(&p, 1, (int)left);
		if (rc > 0)
			break;
		if (rc < 0 && errno != EINTR) {
			err = errno;
			close(fd);
			errno = err;
			return -1;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
		close(fd);
		errno = err != 0 ? err : EIO;
		return -1;
	}
	return fd;
}

/* read_some FD BUF SIZE: what arrives within CONNECT_MS (NUL-terminated). */
static size_t read_some(int fd, char *buf, size_t size)
{
	struct pollfd p;
	size_t got = 0;
	long long deadline = now_ms() + CONNECT_MS;

	p.fd = fd;
	p.events = POLLIN;
	while (got < size - 1) {
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = read(fd, buf + got, size - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf, '\n', got) != NULL && strncmp(buf, "HTTP/", 5) != 0)
			break;
		if (strstr(buf, "\r\n\r\n") != NULL)
			break;
	}
	buf[got] = '\0';
	return got;
}

/*
 * reached ENDPOINT NONCE: true when ENDPOINT answers with the host
 * listener's NONCE; WHY says what happened.
 */
static int reached(const char *endpoint, const char *nonce, char *why, size_t whysize)
{
	struct sockaddr_in sa;
	char buf[256];
	int fd;

	if (parse_endpoint(endpoint, &sa) != 0) {
		snprintf(why, whysize, "%s: not an address", endpoint);
		return 0;
	}
	fd = dial(&sa);
	if (fd < 0) {
		snprintf(why, whysize, "%s: %s", endpoint, strerror(errno));
		return 0;
	}
	read_some(fd, buf, sizeof buf);
	close(fd);
	buf[strcspn(buf, "\r\n")] = '\0';
	if (nonce != NULL && strcmp(buf, nonce) == 0) {
		snprintf(why, whysize, "%s: reached the host's listener", endpoint);
		return 1;
	}
	snprintf(why, whysize, "%s: connected to something inside, not the host's listener", endpoint);
	return 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void base64(const char *in, size_t len, char *out, size_t outsize)
{
	size_t i, o = 0;

	for (i = 0; i < len && o + 5 < outsize; i += 3) {
		unsigned v = (unsigned char)in[i] << 16;

		if (i + 1 < len)
			v |= (unsigned char)in[i + 1] << 8;
		if (i + 2 < len)
			v |= (unsigned char)in[i + 2];
		out[o++] = B64[(v >> 18) & 63];
		out[o++] = B64[(v >> 12) & 63];
		out[o++] = i + 1 < len ? B64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < len ? B64[v & 63] : '=';
	}
	out[o] = '\0';
}

/*
 * proxy_endpoint: the proxy the sandbox's programs are told to use
 * (HTTPS_PROXY and friends, http://[USER:PASS@]HOST:PORT), as "HOST:PORT"
 * in ENDPOINT and its credentials, base64, in AUTH (empty when none).
 * Returns 0, or -1 when no proxy variable is set.
 */
static int proxy_endpoint(char *endpoint, size_t esize, char *auth, size_t asize)
{
	static const char *const names[] = { "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy" };
	const char *v = NULL, *at, *end;
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0] && (v == NULL || *v == '\0'); i++)
		v = getenv(names[i]);
	if (v == NULL || *v == '\0')
		return -1;
	if (strncmp(v, "http://", 7) == 0)
		v += 7;
	end = v + strcspn(v, "/");
	at = memchr(v, '@', (size_t)(end - v));
	auth[0] = '\0';
	if (at != NULL) {
		base64(v, (size_t)(at - v), auth, asize);
		v = at + 1;
	}
	if ((size_t)(end - v) >= esize)
		return -1;
	memcpy(endpoint, v, (size_t)(end - v));
	endpoint[end - v] = '\0';
	return 0;
}

/*
 * refused_by_proxy PROXY AUTH TARGET NONCE: asks the sandbox's proxy to
 * CONNECT to TARGET ("HOST:PORT"). True when the proxy refused: 403, or
 * (a proxy that intercepts, like mitmproxy, answers 200 first) an HTTP error
 * of its own on the first request through the tunnel, with nothing of the
 * target's (NONCE, the host listener's greeting) before it. WHY says how.
 */
static int refused_by_proxy(const char *proxy, const char *auth, const char *target, const char *nonce,
			    char *why, size_t whysize)
{
	struct sockaddr_in sa;
	char req[512], buf[512];
	int fd, status = 0, inner = 0;
	size_t len;

	if (parse_endpoint(proxy, &sa) != 0) {
		snprintf(why, whysize, "the proxy %s is not an address", proxy);
		return 0;
	}
	fd = dial(&sa);
	if (fd < 0) {
		int err = errno;

		snprintf(why, whysize, "the proxy %s: %s (nothing leaves through it)", proxy, strerror(err));
		return err == ECONNREFUSED || err == ENETUNREACH;
	}
	snprintf(req, sizeof req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n", target, target,
		 *auth ? "Proxy-Authorization: Basic " : "", auth, *auth ? "\r\n" : "");
	len = strlen(req);
	if (write(fd, req, len) != (ssize_t)len) {
		snprintf(why, whysize, "the proxy %s: cannot send the request", proxy);
		close(fd);
		return 0;
	}
	read_some(fd, buf, sizeof buf);
	if (sscanf(buf, "HTTP/%*s %d", &status) != 1)
		status = 0;
	if (status != 200) {
		close(fd);
		snprintf(why, whysize, "the proxy %s answered CONNECT %s with %d", proxy, target, status);
		return status == 403;
	}
	/* The tunnel: the host's listener speaks first. */
	{
		char *body = strstr(buf, "\r\n\r\n");

		if (body == NULL || body[4] == '\0') {
			read_some(fd, buf, sizeof buf);
			body = buf;
		} else {
			body += 4;
		}
		body[strcspn(body, "\r\n")] = '\0';
		if (nonce != NULL && *nonce != '\0' && strcmp(body, nonce) == 0) {
			close(fd);
			snprintf(why, whysize, "the proxy %s tunnelled CONNECT %s to the host's listener", proxy, target);
			return 0;
		}
		if (*body != '\0') {
			close(fd);
			snprintf(why, whysize, "the proxy %s tunnelled CONNECT %s to something that answered", proxy, target);
			return 0;
		}
	}
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target);
	len = strlen(req);
	if (write(fd, req, len) == (ssize_t)len) {
		read_some(fd, buf, sizeof buf);
		if (sscanf(buf, "HTTP/%*s %d", &inner) != 1)
			inner = 0;
	}
	close(fd);
	snprintf(why, whysize, "the proxy %s answered CONNECT %s with 200, then the request in it with %d",
		 proxy, target, inner);
	return inner == 403 || inner == 502;
}

/*
 * probe_loopback: the host's loopback listener at ENDPOINT, directly and
 * through slirp4netns's alias of the host (10.0.2.2), must be unreachable.
 */
static void probe_loopback(const char *endpoint, const char *nonce)
{
	char why[300], why2[300], alias[64];
	const char *port = strrchr(endpoint, ':');
	int got;

	got = reached(endpoint, nonce, why, sizeof why);
	snprintf(alias, sizeof alias, "10.0.2.2%s", port != NULL ? port : ":0");
	if (!got)
		got = reached(alias, nonce, why2, sizeof why2);
	else
		why2[0] = '\0';
	report("loopback", "network", held_if(!got), "%s%s%s", why, *why2 ? "; " : "", why2);
}

/*
 * probe_private: the host's listeners on its own (non-public) addresses
 * must be unreachable, directly and through the proxy.
 */
static void probe_private(const char *const *endpoints, int n, const char *nonce)
{
	char why[600] = "", one[300], proxy[128], auth[256];
	int i, got = 0;

	if (n == 0) {
		report("non-public", "network", "held", "the host has no non-loopback IPv4 address to aim at");
		return;
	}
	for (i = 0; i < n && !got; i++) {
		got = reached(endpoints[i], nonce, one, sizeof one);
		snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s", i ? "; " : "", one);
	}
	if (!got && proxy_endpoint(proxy, sizeof proxy, auth, sizeof auth) == 0) {
		got = !refused_by_proxy(proxy, auth, endpoints[0], nonce, one, sizeof one);
		snprintf(why + strlen(why), sizeof why - strlen(why), "; %s", one);
	}
	report("non-public", "network", held_if(!got), "%s", why);
}

/*
 * probe_outside: in allow-list mode a name outside the list gets 403 from
 * the proxy; without a proxy variable, the name (localhost, at the host's
 * listener ENDPOINT's port) must not be reachable directly.
 */
static void probe_outside(const char *endpoint, const char *nonce)
{
	char why[300], proxy[128], auth[256], target[96];
	const char *port = strrchr(endpoint, ':');

	snprintf(target, sizeof target, "localhost%s", port != NULL ? port : ":0");
	if (proxy_endpoint(proxy, sizeof proxy, auth, sizeof auth) != 0) {
		int got = reached(target, nonce, why, sizeof why);

		report("outside-allow-list", "network", held_if(!got), "no proxy variable inside; directly: %s", why);
		return;
	}
	report("outside-allow-list", "network", held_if(refused_by_proxy(proxy, auth, target, nonce, why, sizeof why)),
	       "%s", why);
}

/* --- secrets ---------------------------------------------------------------------- */

/* spill PATH: the bytes of PATH onto stderr, framed, for the host to search. */
static void spill(const char *path)
{
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return;
	fprintf(stderr, "\nforge-probe: haystack %s\n", path);
	fflush(stderr);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		if (write(STDERR_FILENO, buf, (size_t)n) != n)
			break;
	close(fd);
}

/* spill_dir DIR: every entry of DIR (links followed: the CA folder's are). */
static void spill_dir(const char *dir)
{
	char path[4096];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
			spill(path);
	}
	closedir(d);
}

/*
 * probe_secrets: the configured secrets' values must be absent from the
 * environment, every /proc/PID/environ and the CA folder. The values never
 * come in: everything is written to stderr, and the host searches it.
 */
static void probe_secrets(void)
{
	static const char *const ca_vars[] = { "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "CURL_CA_BUNDLE" };
	char path[64];
	struct dirent *e;
	extern char **environ;
	char **env;
	size_t i;
	DIR *d;

	fprintf(stderr, "\nforge-probe: haystack environment\n");
	for (env = environ; *env != NULL; env++)
		fprintf(stderr, "%s\n", *env);
	fflush(stderr);
	d = opendir("/proc");
	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			if ((size_t)snprintf(path, sizeof path, "/proc/%s/environ", e->d_name) < sizeof path)
				spill(path);
		}
		closedir(d);
	}
	spill_dir("/etc/ssl/certs");
	spill_dir("/usr/local/share/ca-certificates");
	for (i = 0; i < sizeof ca_vars / sizeof ca_vars[0]; i++)
		if (getenv(ca_vars[i]) != NULL && getenv(ca_vars[i])[0] == '/')
			spill(getenv(ca_vars[i]));
	report("secret", "secrets", "host", "environment, /proc/*/environ and the CA folder written out for the host to search");
}

/* --- process and kernel -------------------------------------------------------------- */

/* probe_tty: no controlling terminal, and no terminal among fds 0-2. */
static void probe_tty(void)
{
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK), i;

	if (fd >= 0) {
		close(fd);
		report("tty", "process", "escaped", "/dev/tty opens: the process has a controlling terminal");
		return;
	}
	for (i = 0; i < 3; i++)
		if (isatty(i)) {
			report("tty", "process", "escaped", "fd %d is a terminal", i);
			return;
		}
	report("tty", "process", "held", "no controlling terminal (/dev/tty: %s), no terminal on fds 0-2", strerror(errno));
}

/* seccomp_mode: the Seccomp field of /proc/self/status (2: a filter). */
static int seccomp_mode(void)
{
	char line[256];
	int mode = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode;
}

/* seccomp_report NAME RC ERR: held when the call was refused (EPERM, or
 * ENOSYS) with a seccomp filter in force. */
static void seccomp_report(const char *name, long rc, int err, int mode)
{
	if (rc >= 0)
		report(name, "kernel", "escaped", "allowed");
	else if ((err == EPERM || err == ENOSYS) && mode == 2)
		report(name, "kernel", "held", "denied (%s) by the seccomp filter", strerror(err));
	else if (err == EPERM || err == ENOSYS)
		report(name, "kernel", "escaped", "refused (%s), but no seccomp filter is in force", strerror(err));
	else
		report(name, "kernel", "escaped", "not denied: the kernel answered %s", strerror(err));
}

/* in_child CALL: runs the probe of a call that would change the probe's own
 * process (unshare) in a child; returns its result as rc/errno. */
static long unshare_in_child(int *err)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		*err = errno;
		return -1;
	}
	if (pid == 0)
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : (errno & 0xff));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			*err = errno;
			return -1;
		}
	if (!WIFEXITED(status)) {
		*err = EIO;
		return -1;
	}
	*err = WEXITSTATUS(status);
	return *err == 0 ? 0 : -1;
}

static void probe_seccomp(void)
{
	unsigned char params[120];
	char target[64];
	int mode = seccomp_mode(), err;
	long rc;

	rc = unshare_in_child(&err);
	seccomp_report("unshare", rc, err, mode);
	/* A target that does not exist: ENOENT when allowed, never a real mount. */
	snprintf(target, sizeof target, "/nonexistent-forge-probe-%ld", (long)getpid());
	rc = mount("none", target, "tmpfs", 0, NULL);
	seccomp_report("mount", rc, errno, mode);
	rc = syscall(SYS_keyctl, 0L, -3L, 0L);
	seccomp_report("keyctl", rc, errno, mode);
	rc = syscall(SYS_bpf, 0L, NULL, 0L);
	seccomp_report("bpf", rc, errno, mode);
	memset(params, 0, sizeof params);
	rc = syscall(SYS_io_uring_setup, 1L, params);
	err = errno;
	if (rc >= 0)
		close((int)rc);
	seccomp_report("io_uring_setup", rc, err, mode);
}

/* --- run ------------------------------------------------------------------------------ */

static int probe_run(int argc, char **argv)
{
	const char *nonce = "", *canary = NULL, *forge_dir = NULL, *hooks = NULL, *config = NULL;
	const char *commondir = NULL, *alternates = NULL, *loopback = NULL, *outside = NULL;
	const char *private_eps[MAX_PRIVATE];
	char path[4096];
	int n_private = 0, proc_sys = 0, secrets = 0, tty = 0, seccomp = 0, i;

	for (i = 0; i < argc; i++) {
		const char *o = argv[i];
		int has_value = i + 1 < argc;

		if (strcmp(o, "--proc-sys") == 0)
			proc_sys = 1;
		else if (strcmp(o, "--secrets") == 0)
			secrets = 1;
		else if (strcmp(o, "--tty") == 0)
			tty = 1;
		else if (strcmp(o, "--seccomp") == 0)
			seccomp = 1;
		else if (!has_value)
			die(EXIT_USAGE, "unknown option or missing value: %s", o);
		else if (strcmp(o, "--nonce") == 0)
			nonce = argv[++i];
		else if (strcmp(o, "--canary") == 0)
			canary = argv[++i];
		else if (strcmp(o, "--forge-dir") == 0)
			forge_dir = argv[++i];
		else if (strcmp(o, "--hooks") == 0)
			hooks = argv[++i];
		else if (strcmp(o, "--config") == 0)
			config = argv[++i];
		else if (strcmp(o, "--commondir") == 0)
			commondir = argv[++i];
		else if (strcmp(o, "--alternates") == 0)
			alternates = argv[++i];
		else if (strcmp(o, "--loopback") == 0)
			loopback = argv[++i];
		else if (strcmp(o, "--outside") == 0)
			outside = argv[++i];
		else if (strcmp(o, "--private") == 0 && n_private < MAX_PRIVATE)
			private_eps[n_private++] = argv[++i];
		else
			die(EXIT_USAGE, "unknown option (or more than %d --private): %s", MAX_PRIVATE, o);
	}
	/* Which kernel this is: the host tells a microVM's own from its. */
	{
		char boot[64] = "";
		int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t n = read(fd, boot, sizeof boot - 1);

			boot[n > 0 ? n : 0] = '\0';
			close(fd);
		}
		report("boot_id", "-", "info", "%.*s", (int)strcspn(boot, "\n"), boot);
	}
	/* A probe file's name carries the nonce: the host looks for it after. */
	if (canary != NULL)
		probe_read("canary", "filesystem", canary);
	if (forge_dir != NULL && (size_t)snprintf(path, sizeof path, "%s/forge-probe.%s", forge_dir, nonce) < sizeof path)
		probe_create("forge-dir", "filesystem", path, 0);
	if (hooks != NULL && (size_t)snprintf(path, sizeof path, "%s/forge-probe.%s", hooks, nonce) < sizeof path)
		probe_create("hooks", "git", path, 0);
	if (config != NULL)
		probe_write("config", "git", config, 0);
	if (commondir != NULL)
		probe_write("commondir", "git", commondir, 0);
	if (alternates != NULL)
		probe_write("alternates", "git", alternates, 1);
	if (proc_sys)
		probe_proc_sys();
	if (loopback != NULL)
		probe_loopback(loopback, nonce);
	if (n_private > 0 || loopback != NULL)
		probe_private(private_eps, n_private, nonce);
	if (outside != NULL)
		probe_outside(outside, nonce);
	if (secrets)
		probe_secrets();
	if (tty)
		probe_tty();
	if (seccomp)
		probe_seccomp();
	if (fflush(stdout) == EOF)
		die(EXIT_INTERNAL, "cannot write the results: %s", strerror(errno));
	return 0;
}

/* --- listen ------------------------------------------------------------------------------ */

/* listen_on ADDR: a listening TCP socket on ADDR, any free port. */
static int listen_on(struct in_addr addr, unsigned short *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr = addr;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static int probe_listen(const char *hitfile, const char *nonce)
{
	struct pollfd p[MAX_LISTENERS];
	const char *tag[MAX_LISTENERS];
	struct ifaddrs *ifs, *ifa;
	struct in_addr lo;
	unsigned short port;
	char addr[INET_ADDRSTRLEN];
	int n = 0, i, hits;

	/* Gone with the shell that started it, or after a while at most. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		die(EXIT_INTERNAL, "prctl: %s", strerror(errno));
	if (getppid() == 1)
		return 0;
	alarm(LISTEN_LIFETIME);
	hits = open(hitfile, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (hits < 0)
		die(EXIT_INTERNAL, "cannot open %s: %s", hitfile, strerror(errno));
	lo.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < 2; i++) {
		p[n].fd = listen_on(lo, &port);
		if (p[n].fd < 0)
			die(EXIT_INTERNAL, "cannot listen on 127.0.0.1: %s", strerror(errno));
		tag[n] = i == 0 ? "loopback" : "outside";
		printf("%s 127.0.0.1 %u\n", tag[n], port);
		n++;
	}
	if (getifaddrs(&ifs) != 0)
		die(EXIT_INTERNAL, "getifaddrs: %s", strerror(errno));
	for (ifa = ifs; ifa != NULL && n < MAX_LISTENERS && n < 2 + MAX_PRIVATE; ifa = ifa->ifa_next) {
		struct in_addr a;

		if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != AF_INET)
			continue;
		a = ((struct sockaddr_in *)(void *)ifa->ifa_addr)->sin_addr;
		if ((ntohl(a.s_addr) >> 24) == 127)
			continue;
		p[n].fd = listen_on(a, &port);
		if (p[n].fd < 0)
			continue;
		tag[n] = "private";
		inet_ntop(AF_INET, &a, addr, sizeof addr);
		printf("private %s %u\n", addr, port);
		n++;
	}
	freeifaddrs(ifs);
	if (fflush(stdout) == EOF || dup2(hits, STDOUT_FILENO) < 0)
		die(EXIT_INTERNAL, "cannot hand over the ports: %s", strerror(errno));
	for (i = 0; i < n; i++)
		p[i].events = POLLIN;
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die(EXIT_INTERNAL, "poll: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			char line[160];
			int c;
			size_t len;

			if (!(p[i].revents & POLLIN))
				continue;
			c = accept(p[i].fd, NULL, NULL);
			if (c < 0)
				continue;
			len = (size_t)snprintf(line, sizeof line, "%s\n", nonce);
			if (write(c, line, len) < 0) {
				/* Seen all the same. */
			}
			close(c);
			len = (size_t)snprintf(line, sizeof line, "%s\n", tag[i]);
			if (write(hits, line, len) != (ssize_t)len)
				die(EXIT_INTERNAL, "cannot write %s: %s", hitfile, strerror(errno));
		}
	}
}

int main(int argc, char **argv)
{
	if (argc >= 2)
		help_option(argv[1]);
	if (argc == 4 && strcmp(argv[1], "listen") == 0)
		return probe_listen(argv[2], argv[3]);
	if (argc >= 2 && strcmp(argv[1], "run") == 0)
		return probe_run(argc - 2, argv + 2);
	die(EXIT_USAGE, "listen HITFILE NONCE or run [OPTION...] expected");
}
