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
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
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

const char forge_help[] =
	"usage: forge-egress [--log DIR] [--control DIR] [--max-conns N] [--] SOCKET RULESFILE\n"
	"       forge-egress --send DIR allow|deny SECONDS TARGET...\n"
	"Serve HTTP CONNECT and plain HTTP on the unix socket SOCKET (created\n"
	"owner-only), allowing only public destinations whose host matches an\n"
	"entry of RULESFILE (one allow-list entry per line, as forge-netrule\n"
	"reads them; '*' allows every host). Refusals are 403 Forbidden, naming\n"
	"the rule in the body and the X-Forge-Egress header.\n"
	"  --log DIR        append one JSON line per decision to DIR/egress.log\n"
	"                   (rotated to DIR/egress.log.1 at 1 MiB)\n"
	"  --control DIR    serve live allow/deny entries on DIR/egress.ctl, recorded\n"
	"                   in DIR/egress-grants.jsonl\n"
	"  --send DIR ...   send live entries to that proxy (SECONDS 0: no expiry)\n"
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
				forge_progname(), reason);
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

#define EGRESS_LOG_MAX 1048576L   /* egress.log rotates at this size (one old file kept) */
#define EGRESS_LIVE_MAX 256       /* live allow/deny entries at once */
#define EGRESS_TARGET_MAX (NETRULE_NAME_MAX + 8)  /* "suffix=" + a name */
#define EGRESS_SLOTS 4096         /* one per connection: the largest --max-conns */
#define EGRESS_TICK_MS 250        /* an idle relay looks at the live rules this often */
#define EGRESS_ACK_MS 3000        /* a change waits this long for relays to look */
#define EGRESS_CONTROL_MAX 65536  /* bytes of one control request */
#define EGRESS_METHOD_LOG 32      /* bytes of a method the log keeps */

static int listen_on(const char *path);

/* ------------------------------------------------------------------------ */
/* Text for the client and the log                                           */

/*
 * SRC into OUT (SIZE bytes) with every byte outside printable ASCII, '"'
 * and '\\' as '?': nothing a name or a system message holds can end a
 * header line, a quoted value or a terminal line. Returns OUT.
 */
static const char *egress_clean(const char *src, char *out, size_t size)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < size; i++) {
		unsigned char c = (unsigned char)src[i];

		out[i] = (c < 0x20 || c > 0x7e || c == '"' || c == '\\') ? '?' : (char)c;
	}
	out[i] = '\0';
	return out;
}

/* Appends to OUT (SIZE bytes) at *N; what does not fit is dropped. */
static void egress_put(char *out, size_t size, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*n + 1 >= size)
		return;
	va_start(ap, fmt);
	w = vsnprintf(out + *n, size - *n, fmt, ap);
	va_end(ap);
	if (w > 0)
		*n = (size_t)w < size - *n ? *n + (size_t)w : size - 1;
}

/* Appends the first LEN bytes of S as a JSON string, or null for NULL. */
static void egress_json(char *out, size_t size, size_t *n, const char *s, size_t len)
{
	size_t i;

	if (!s) {
		egress_put(out, size, n, "null");
		return;
	}
	egress_put(out, size, n, "\"");
	for (i = 0; i < len && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			egress_put(out, size, n, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			egress_put(out, size, n, "\\u%04x", c);
		else
			egress_put(out, size, n, "%c", c);
	}
	egress_put(out, size, n, "\"");
}

/* ------------------------------------------------------------------------ */
/* The decision log: DIR/egress.log, one JSON object a line                  */

/* Renames egress.log to egress.log.1 when it is still over the size. */
static void egress_log_rotate(int dirfd)
{
	struct flock lk;
	struct stat st;
	int lock = openat(dirfd, "egress.log.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);

	if (lock < 0)
		return;
	memset(&lk, 0, sizeof lk);
	lk.l_type = F_WRLCK;
	lk.l_whence = SEEK_SET;
	/* One rotation at a time: a second one would drop the first's file. */
	if (fcntl(lock, F_SETLKW, &lk) == 0 && fstatat(dirfd, "egress.log", &st, AT_SYMLINK_NOFOLLOW) == 0
	    && S_ISREG(st.st_mode) && st.st_size >= EGRESS_LOG_MAX)
		(void)renameat(dirfd, "egress.log", dirfd, "egress.log.1");
	close(lock);
}

/*
 * Appends one decision. Never a header, a path or a body: the method, the
 * host and port, the address connected to, the rule and the bytes relayed.
 */
static void egress_log_write(int dirfd, const char *method, size_t method_len, const char *host,
	unsigned port, const char *addr, const char *decision, const char *rule, unsigned long long bytes)
{
	char line[8192], stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	struct stat st;
	size_t n = 0;
	int fd;

	if (dirfd < 0)
		return;
	if (!gmtime_r(&now, &tm) || strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		strcpy(stamp, "-");
	egress_put(line, sizeof line, &n, "{\"ts\":\"%s\",\"method\":", stamp);
	egress_json(line, sizeof line, &n, method, method_len < EGRESS_METHOD_LOG ? method_len : EGRESS_METHOD_LOG);
	egress_put(line, sizeof line, &n, ",\"host\":");
	egress_json(line, sizeof line, &n, host, NETRULE_NAME_MAX);
	if (host)
		egress_put(line, sizeof line, &n, ",\"port\":%u,\"address\":", port);
	else
		egress_put(line, sizeof line, &n, ",\"port\":null,\"address\":");
	egress_json(line, sizeof line, &n, addr, INET6_ADDRSTRLEN);
	egress_put(line, sizeof line, &n, ",\"decision\":\"%s\",\"rule\":", decision);
	egress_json(line, sizeof line, &n, rule ? rule : "", EGRESS_REASON_MAX);
	egress_put(line, sizeof line, &n, ",\"bytes\":%llu}\n", bytes);
	if (n == 0 || line[n - 1] != '\n')
		return;  /* cannot happen: every part is bounded well below the buffer */
	fd = openat(dirfd, "egress.log", O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
	if (fd < 0)
		return;
	/* One write to an O_APPEND file: lines of concurrent children never interleave. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		while (write(fd, line, n) < 0 && errno == EINTR)
			;
		if (st.st_size + (off_t)n >= EGRESS_LOG_MAX)
			egress_log_rotate(dirfd);
	}
	close(fd);
}

/* A decision with no bytes relayed (the listener's refusals call this too). */
static void egress_log(int fd, const char *verdict, const struct egress_request *req,
	const char *addr, const char *reason)
{
	int known = req && req->host_len;

	egress_log_write(fd, req ? req->method : NULL, req && req->method ? req->method_len : 0,
		known ? req->host : NULL, known ? req->port : 0, addr, verdict, reason, 0);
}

/* ------------------------------------------------------------------------ */
/* Live rules: allow/deny entries on top of the rules file (SPEC 4.8)        */

struct egress_grant {
	long long expires;  /* seconds since the epoch; 0: as long as the proxy runs */
	int deny;
	char target[EGRESS_TARGET_MAX + 1];  /* valid, lower case */
};

struct egress_live {
	unsigned long generation;  /* bumped at every change; 0 never used */
	int broken;                /* a reader's copy only: no consistent copy could be made */
	size_t count;              /* oldest first: the newest match decides */
	struct egress_grant grant[EGRESS_LIVE_MAX];
};

/*
 * Shared by the listener, its children and the control process (a
 * MAP_SHARED mapping made before any fork). The control process is the only
 * writer of LIVE, under the sequence counter SEQ (odd while it writes):
 * a reader copies LIVE and keeps the copy only when SEQ was even and
 * unchanged around it, so a request sees the old list or the new one,
 * never a mix. PID and SEEN: the connection in each slot and the
 * generation it last checked, so a change waits until open relays saw it.
 */
struct egress_shm {
	unsigned long seq;
	struct egress_live live;
	int pid[EGRESS_SLOTS];
	unsigned long seen[EGRESS_SLOTS];
};

static struct egress_shm *egress_shm;  /* NULL without --control */

static unsigned long egress_live_generation(void)
{
	return egress_shm ? __atomic_load_n(&egress_shm->live.generation, __ATOMIC_SEQ_CST) : 0;
}

/* A consistent copy of the live rules into OUT. */
static void egress_live_read(struct egress_live *out)
{
	unsigned long s1, s2, tries;

	out->broken = 0;
	if (!egress_shm) {
		out->generation = 0;
		out->count = 0;
		return;
	}
	for (tries = 0; tries < 1000000; tries++) {
		s1 = __atomic_load_n(&egress_shm->seq, __ATOMIC_SEQ_CST);
		if (s1 & 1) {
			sched_yield();  /* the control process is writing: let it finish */
			continue;
		}
		memcpy(out, &egress_shm->live, sizeof *out);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		s2 = __atomic_load_n(&egress_shm->seq, __ATOMIC_SEQ_CST);
		if (s1 == s2) {
			out->broken = 0;
			if (out->count > EGRESS_LIVE_MAX)
				out->count = EGRESS_LIVE_MAX;
			return;
		}
	}
	/* The writer died mid-change: no list is trusted, every host refused. */
	out->count = 0;
	out->broken = 1;
}

/* Publishes NEXT (the control process only). */
static void egress_live_publish(const struct egress_live *next)
{
	unsigned long s = __atomic_load_n(&egress_shm->seq, __ATOMIC_SEQ_CST);

	__atomic_store_n(&egress_shm->seq, s + 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(egress_shm->live.grant, next->grant, sizeof next->grant);
	egress_shm->live.count = next->count;
	__atomic_store_n(&egress_shm->live.generation, next->generation, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&egress_shm->seq, s + 2, __ATOMIC_SEQ_CST);
}

/* Takes a free slot for this connection; -1 when there is none. */
static int egress_slot_take(void)
{
	int i, me = (int)getpid();

	for (i = 0; egress_shm && i < EGRESS_SLOTS; i++) {
		int zero = 0;

		if (__atomic_compare_exchange_n(&egress_shm->pid[i], &zero, me, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return i;
	}
	return -1;
}

static void egress_slot_seen(int slot, unsigned long generation)
{
	if (slot >= 0)
		__atomic_store_n(&egress_shm->seen[slot], generation, __ATOMIC_SEQ_CST);
}

static void egress_slot_free(int slot)
{
	if (slot >= 0)
		__atomic_store_n(&egress_shm->pid[slot], 0, __ATOMIC_SEQ_CST);
}

/* FIX (EGRESS_REASON_MAX) gets the command that allows HOST (a single label needs domain=). */
static void egress_fix(char *fix, const char *host)
{
	snprintf(fix, EGRESS_REASON_MAX, "forge-sandbox allow %s%s", strchr(host, '.') ? "" : "domain=", host);
}

#define EGRESS_STAMP_MAX 32

/* Writes the UTC time EXPIRES (seconds since the epoch) as
 * 2026-11-30T06:35:44Z to STAMP (EGRESS_STAMP_MAX), or FALLBACK when it
 * cannot be shown. */
static void egress_stamp(char *stamp, long long expires, const char *fallback)
{
	time_t t = (time_t)expires;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || strftime(stamp, EGRESS_STAMP_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(stamp, EGRESS_STAMP_MAX, "%s", fallback);
}

/*
 * Decides HOST at time NOW: the newest live entry that matches (and has not
 * expired), else the rules file. Returns 1 when allowed. RULE (size
 * EGRESS_REASON_MAX) gets the rule that decided; FIX the command that
 * would allow it, or "".
 */
static int egress_decide(const struct egress_rules *rules, const struct egress_live *live,
	const char *host, size_t n, long long now, char *rule, char *fix)
{
	size_t i;

	fix[0] = '\0';
	if (live->broken) {
		snprintf(rule, EGRESS_REASON_MAX, "the live rules cannot be read (their writer died mid-change): forge-sandbox up --restart");
		return 0;
	}
	for (i = live->count; i-- > 0;) {
		const struct egress_grant *g = &live->grant[i];

		if ((g->expires && g->expires <= now) || !netrule_match(g->target, strlen(g->target), host, n))
			continue;
		if (g->deny) {
			snprintf(rule, EGRESS_REASON_MAX, "denied by forge-sandbox deny %s", g->target);
			egress_fix(fix, host);
			return 0;
		}
		if (g->expires) {
			char stamp[EGRESS_STAMP_MAX];

			egress_stamp(stamp, g->expires, "?");
			snprintf(rule, EGRESS_REASON_MAX, "granted by forge-sandbox allow %s until %s", g->target, stamp);
		} else
			snprintf(rule, EGRESS_REASON_MAX, "granted by forge-sandbox allow %s", g->target);
		return 1;
	}
	if (egress_allowed(rules, host, n)) {
		/* Which entry it was, for the log. */
		snprintf(rule, EGRESS_REASON_MAX, "the allow-list entry *");
		for (i = 0; i < rules->count; i++)
			if (netrule_match(rules->target[i], strlen(rules->target[i]), host, n)) {
				snprintf(rule, EGRESS_REASON_MAX, "the allow-list entry %s", rules->target[i]);
				break;
			}
		return 1;
	}
	snprintf(rule, EGRESS_REASON_MAX, "not in the allow-list");
	egress_fix(fix, host);
	return 0;
}

/* The earliest expiry after NOW among LIVE's entries; 0 for none. */
static long long egress_next_expiry(const struct egress_live *live, long long now)
{
	long long next = 0;
	size_t i;

	for (i = 0; i < live->count; i++)
		if (live->grant[i].expires > now && (next == 0 || live->grant[i].expires < next))
			next = live->grant[i].expires;
	return next;
}

/*
 * Checks one control line's TARGET (LEN bytes) as configuration is checked
 * (netrule.c, forge-netrule's own code) and copies it, lower case, into
 * OUT. Returns NULL or why it is refused (REASON, NETRULE_REASON_MAX).
 */
static const char *egress_live_target(const char *s, size_t len, char *out, char *reason)
{
	size_t i;

	netrule_trim(&s, &len);
	switch (netrule_classify(s, len, 0, reason)) {
	case NETRULE_WILDCARD:
		return "'*' is no live grant (it would open egress to every host): set sandbox.network.allow and run forge-sandbox up --recreate";
	case NETRULE_REJECTED:
		return reason;
	case NETRULE_HOST:
		break;
	}
	if (len > EGRESS_TARGET_MAX)
		return "too long";
	for (i = 0; i < len; i++)
		out[i] = (char)netrule_lower((unsigned char)s[i]);
	out[len] = '\0';
	return NULL;
}

/*
 * Applies a control request to CUR: lines "allow SECONDS TARGET" (SECONDS
 * 0: no expiry) and "deny 0 TARGET". All or nothing: returns 0, or -1 with
 * REPLY (size EGRESS_REASON_MAX + 64) saying why and CUR unchanged.
 */
static int egress_live_apply(struct egress_live *cur, char *req, size_t len, long long now,
	char *reply, size_t size)
{
	static struct egress_live next;
	char reason[NETRULE_REASON_MAX], target[EGRESS_TARGET_MAX + 1], shown[EGRESS_REASON_MAX];
	char *line = req, *end = req + len;
	size_t i, k;

	next = *cur;
	/* Expired entries go first: they decide nothing any more. */
	for (i = k = 0; i < next.count; i++)
		if (!next.grant[i].expires || next.grant[i].expires > now)
			next.grant[k++] = next.grant[i];
	next.count = k;
	while (line < end) {
		char *eol = memchr(line, '\n', (size_t)(end - line)), *verb, *secs, *name, *stop;
		const char *why;
		unsigned long seconds;
		int deny;

		if (!eol)
			eol = end;
		*eol = '\0';
		verb = line;
		line = eol + 1;
		if (*verb == '\0')
			continue;
		if (!(secs = strchr(verb, ' ')) || !(name = strchr(secs + 1, ' '))) {
			snprintf(reply, size, "error: malformed request\n");
			return -1;
		}
		*secs++ = '\0';
		*name++ = '\0';
		deny = strcmp(verb, "deny") == 0;
		if (!deny && strcmp(verb, "allow") != 0) {
			snprintf(reply, size, "error: unknown request '%s'\n", egress_clean(verb, shown, 32));
			return -1;
		}
		errno = 0;
		seconds = strtoul(secs, &stop, 10);
		if (errno || *stop || stop == secs || secs[0] == '-' || seconds > 31536000UL) {
			snprintf(reply, size, "error: invalid duration\n");
			return -1;
		}
		if ((why = egress_live_target(name, strlen(name), target, reason))) {
			snprintf(reply, size, "error: %s: %s\n", egress_clean(name, shown, NETRULE_NAME_MAX + 2), why);
			return -1;
		}
		/* The same target given again replaces its older entry. */
		for (i = k = 0; i < next.count; i++)
			if (strcmp(next.grant[i].target, target) != 0)
				next.grant[k++] = next.grant[i];
		next.count = k;
		if (next.count == EGRESS_LIVE_MAX) {
			snprintf(reply, size, "error: too many live entries (at most %d)\n", EGRESS_LIVE_MAX);
			return -1;
		}
		next.grant[next.count].deny = deny;
		next.grant[next.count].expires = seconds ? now + (long long)seconds : 0;
		memcpy(next.grant[next.count].target, target, strlen(target) + 1);
		next.count++;
	}
	next.generation = cur->generation + 1;
	*cur = next;
	snprintf(reply, size, "ok\n");
	return 0;
}

/*
 * Writes DIR/egress-grants.jsonl (through a new file renamed into place):
 * one {"host", "decision", "until"} a line, oldest first, "until" null or
 * the UTC time it expires. forge-sandbox ls and up read it.
 */
static void egress_grants_write(int dirfd, const struct egress_live *live)
{
	static char out[EGRESS_LIVE_MAX * (EGRESS_TARGET_MAX * 6 + 96)];
	size_t n = 0, i;
	int fd;

	for (i = 0; i < live->count; i++) {
		const struct egress_grant *g = &live->grant[i];

		egress_put(out, sizeof out, &n, "{\"host\":");
		egress_json(out, sizeof out, &n, g->target, EGRESS_TARGET_MAX);
		egress_put(out, sizeof out, &n, ",\"decision\":\"%s\",\"until\":", g->deny ? "deny" : "allow");
		if (g->expires) {
			char stamp[EGRESS_STAMP_MAX];

			egress_stamp(stamp, g->expires, "1970-01-01T00:00:00Z");
			egress_put(out, sizeof out, &n, "\"%s\"}\n", stamp);
		} else
			egress_put(out, sizeof out, &n, "null}\n");
	}
	(void)unlinkat(dirfd, "egress-grants.jsonl.new", 0);
	fd = openat(dirfd, "egress-grants.jsonl.new", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (relay_write_all(fd, out, n) == 0 && close(fd) == 0)
		(void)renameat(dirfd, "egress-grants.jsonl.new", dirfd, "egress-grants.jsonl");
	else
		(void)unlinkat(dirfd, "egress-grants.jsonl.new", 0);
}

/* Waits (at most EGRESS_ACK_MS) until every open connection checked GENERATION. */
static void egress_live_wait(unsigned long generation)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int waited, i;

	for (waited = 0; waited < EGRESS_ACK_MS; waited += 10) {
		int pending = 0;

		for (i = 0; i < EGRESS_SLOTS; i++) {
			int pid = __atomic_load_n(&egress_shm->pid[i], __ATOMIC_SEQ_CST);

			if (pid > 0 && __atomic_load_n(&egress_shm->seen[i], __ATOMIC_SEQ_CST) < generation
			    && kill((pid_t)pid, 0) == 0)
				pending++;
		}
		if (pending == 0)
			return;
		nanosleep(&tick, NULL);
	}
}

/*
 * The control process: serves CFD, the owner-only socket DIR/egress.ctl on
 * the host side (never mounted into the sandbox). One request a
 * connection, read to its end; the answer "ok" comes once the change is
 * published, recorded and seen by every open connection.
 */
static void egress_control(int cfd, int dirfd)
{
	static struct egress_live cur;
	static char req[EGRESS_CONTROL_MAX + 1];
	char reply[EGRESS_REASON_MAX + 128];

	cur.generation = 1;
	cur.count = 0;
	egress_grants_write(dirfd, &cur);
	for (;;) {
		struct pollfd pfd;
		size_t len = 0;
		int fd = accept(cfd, NULL, NULL), r, full = 0;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				sleep(1);
			continue;
		}
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
		pfd.fd = fd;
		pfd.events = POLLIN;
		for (;;) {
			ssize_t n;

			if (len == EGRESS_CONTROL_MAX) {
				full = 1;
				break;
			}
			while ((r = poll(&pfd, 1, 5000)) < 0 && errno == EINTR)
				;
			if (r <= 0)
				break;
			n = read(fd, req + len, EGRESS_CONTROL_MAX - len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			len += (size_t)n;
		}
		if (r <= 0 || full)
			snprintf(reply, sizeof reply, "error: %s\n", full ? "request too large" : "incomplete request");
		else if (egress_live_apply(&cur, req, len, (long long)time(NULL), reply, sizeof reply) == 0) {
			egress_live_publish(&cur);
			egress_grants_write(dirfd, &cur);
			egress_live_wait(cur.generation);
		}
		(void)relay_write_all(fd, reply, strlen(reply));
		close(fd);
	}
}

/*
 * forge-egress --send DIR allow|deny SECONDS TARGET...: the client. Checks
 * every TARGET first (65 naming the first refused, nothing sent), then
 * sends them in one request and waits for the answer.
 */
static int egress_send(int argc, char **argv)
{
	static char req[EGRESS_CONTROL_MAX];
	char reason[NETRULE_REASON_MAX], target[EGRESS_TARGET_MAX + 1], answer[EGRESS_REASON_MAX + 128];
	char shown[NETRULE_NAME_MAX + 2], *end;
	const char *why;
	struct sockaddr_un sun;
	size_t n = 0, got = 0;
	unsigned long seconds;
	int i, fd;

	if (argc < 4 || (strcmp(argv[1], "allow") != 0 && strcmp(argv[1], "deny") != 0))
		die(EXIT_USAGE, "usage: forge-egress --send DIR allow|deny SECONDS TARGET...");
	errno = 0;
	seconds = strtoul(argv[2], &end, 10);
	if (errno || *end || end == argv[2] || argv[2][0] == '-' || seconds > 31536000UL)
		die(EXIT_USAGE, "invalid duration: %s", egress_clean(argv[2], shown, sizeof shown));
	for (i = 3; i < argc; i++) {
		if ((why = egress_live_target(argv[i], strlen(argv[i]), target, reason))) {
			fprintf(stderr, "%s: error: %s: %s\n", forge_progname(), egress_clean(argv[i], shown, sizeof shown), why);
			return EXIT_DATA;
		}
		egress_put(req, sizeof req, &n, "%s %lu %s\n", argv[1], seconds, target);
	}
	if (n + 1 >= sizeof req)
		die(EXIT_USAGE, "too many targets at once");
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (snprintf(sun.sun_path, sizeof sun.sun_path, "%s/egress.ctl", argv[0]) >= (int)sizeof sun.sun_path)
		die(EXIT_USAGE, "the control socket's path is too long");
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		die(EXIT_INTERNAL, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0)
		die(69, "the proxy's control socket %s does not answer: %s", sun.sun_path, strerror(errno));
	if (relay_write_all(fd, req, n) != 0 || shutdown(fd, SHUT_WR) != 0)
		die(69, "cannot send to %s: %s", sun.sun_path, strerror(errno));
	for (;;) {
		ssize_t r = read(fd, answer + got, sizeof answer - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (got += (size_t)r) == sizeof answer - 1)
			break;
	}
	close(fd);
	answer[got] = '\0';
	if (strcmp(answer, "ok\n") == 0)
		return 0;
	if (strncmp(answer, "error: ", 7) == 0) {
		answer[strcspn(answer, "\n")] = '\0';
		fprintf(stderr, "%s: error: %s\n", forge_progname(), egress_clean(answer + 7, reason, sizeof reason));
		return EXIT_DATA;
	}
	die(69, "the proxy gave no answer on %s", sun.sun_path);
	return 69;
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

/*
 * Answers STATUS. 403 and 502 name the host, the port, the address (when
 * it got that far), the rule and the command that would allow it (FIX,
 * when one would), in a one-line body and in the X-Forge-Egress header;
 * other refusals (a malformed request: REQ NULL) just the reason. Every
 * value is passed through egress_clean first.
 */
static void egress_answer(int fd, int status, const struct egress_request *req, const char *addr,
	const char *rule, const char *fix)
{
	char buf[4096], body[1536], head[1536], where[NETRULE_NAME_MAX + INET6_ADDRSTRLEN + 32];
	char host[NETRULE_NAME_MAX + 1], a[INET6_ADDRSTRLEN], r[EGRESS_REASON_MAX], f[EGRESS_REASON_MAX];
	const char *decision = status == 502 || status == 503 ? "error" : "deny";
	int n;

	egress_clean(rule, r, sizeof r);
	egress_clean(fix, f, sizeof f);
	if (req && req->host_len && (status == 403 || status == 502)) {
		egress_clean(req->host, host, sizeof host);
		egress_clean(addr ? addr : "-", a, sizeof a);
		snprintf(where, sizeof where, "%s port %u%s%s%s", host, req->port, addr ? " (" : "", addr ? a : "",
			addr ? ")" : "");
		snprintf(body, sizeof body, "%s: %s %s: %s%s%s\n", forge_progname(),
			status == 403 ? "refused" : "cannot reach", where, r, f[0] ? "; to allow it: " : "", f);
		snprintf(head, sizeof head, "X-Forge-Egress: decision=%s; host=%s; port=%u; address=%s; rule=\"%s\"%s%s%s",
			decision, host, req->port, a, r, f[0] ? "; allow=\"" : "", f, f[0] ? "\"" : "");
	} else {
		snprintf(body, sizeof body, "%s: %s\n", forge_progname(), r);
		snprintf(head, sizeof head, "X-Forge-Egress: decision=%s; rule=\"%s\"", decision, r);
	}
	n = snprintf(buf, sizeof buf,
		"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n"
		"Connection: close\r\n\r\n%s", status, status_text(status), strlen(body), head, body);
	if (n > 0 && (size_t)n < sizeof buf)
		(void)relay_write_all(fd, buf, (size_t)n);
}

/* Answers STATUS with a one-line reason (the listener's refusals). */
static void respond(int fd, int status, const char *reason)
{
	egress_answer(fd, status, NULL, NULL, reason, NULL);
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

static volatile sig_atomic_t serve_stop;
static void on_serve_stop(int sig) { (void)sig; serve_stop = 1; }

/*
 * The connection REQ allowed, as relay_copy relays it (both ways until both
 * sides closed, an error, or EGRESS_IDLE_MS without traffic), counting the
 * bytes, and looking at the live rules whenever they change or an entry
 * expires: when they no longer allow the host, it ends, with the rule in
 * CLOSED (EGRESS_REASON_MAX; else ""). Returns the bytes relayed.
 */
static unsigned long long egress_pump(int a, int b, const struct egress_rules *rules,
	const struct egress_request *req, int slot, char *closed)
{
	static struct relay relay;
	static struct egress_live live;
	unsigned long generation;
	long long next;
	char fix[EGRESS_REASON_MAX];
	int idle = 0;

	closed[0] = '\0';
	egress_live_read(&live);
	generation = live.generation;
	egress_slot_seen(slot, generation);
	next = egress_next_expiry(&live, (long long)time(NULL));
	relay_init(&relay, a, b);
	for (;;) {
		long long now = (long long)time(NULL);
		enum relay_step_result step;

		if (serve_stop || relay_done(&relay))
			return relay.bytes;
		if (egress_live_generation() != generation || (next && now >= next)) {
			egress_live_read(&live);
			if (!egress_decide(rules, &live, req->host, req->host_len, now, closed, fix))
				return relay.bytes;
			closed[0] = '\0';
			generation = live.generation;
			egress_slot_seen(slot, generation);
			next = egress_next_expiry(&live, now);
		}
		step = relay_step(&relay, EGRESS_TICK_MS);
		if (step == RELAY_INTR)
			continue;
		if (step == RELAY_END)
			return relay.bytes;
		if (step == RELAY_IDLE) {
			if ((idle += EGRESS_TICK_MS) >= EGRESS_IDLE_MS)
				return relay.bytes;
			continue;
		}
		idle = 0;
	}
}

/* Refuses REQ with 403 (or 502), logged with the same rule. */
static void refuse(int client, int logfd, int status, const struct egress_request *req, const char *addr,
	const char *rule, const char *fix)
{
	egress_log(logfd, "deny", req, addr, rule);
	egress_answer(client, status, req, addr, rule, fix);
}

/* Serves one client connection; runs in its own process. */
static void serve(int client, const struct egress_rules *rules, int logfd)
{
	static char head[EGRESS_HEAD_MAX], out[EGRESS_HEAD_MAX + 512];
	static struct egress_live live;
	struct egress_request req;
	struct addrinfo hints, *res = NULL, *ai;
	struct ifaddrs *own = NULL;
	struct sigaction sa;
	char addr[INET6_ADDRSTRLEN], reason[EGRESS_REASON_MAX], rule[EGRESS_REASON_MAX], fix[EGRESS_REASON_MAX];
	char closed[EGRESS_REASON_MAX];
	const char *why;
	size_t len = 0;
	unsigned long long bytes;
	int status, up = -1, err = 0, slot;

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
		refuse(client, logfd, 403, &req, NULL, "an IP literal is refused (the allow-list names hosts)", NULL);
		return;
	}
	/* In a slot before the rules are read: a change waits for this connection. */
	slot = egress_slot_take();
	egress_live_read(&live);
	egress_slot_seen(slot, live.generation);
	if (!egress_decide(rules, &live, req.host, req.host_len, (long long)time(NULL), rule, fix)) {
		refuse(client, logfd, 403, &req, NULL, rule, fix);
		egress_slot_free(slot);
		return;
	}

	/* One resolution; every address it gave must be public. */
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((status = getaddrinfo(req.host, NULL, &hints, &res)) != 0) {
		snprintf(reason, sizeof reason, "cannot resolve the name (%s)", gai_strerror(status));
		refuse(client, logfd, 502, &req, NULL, reason, NULL);
		egress_slot_free(slot);
		return;
	}
	if (getifaddrs(&own) != 0) {
		snprintf(reason, sizeof reason, "cannot list this host's addresses: %s", strerror(errno));
		refuse(client, logfd, 502, &req, NULL, reason, NULL);
		freeaddrinfo(res);
		egress_slot_free(slot);
		return;
	}
	for (ai = res; ai; ai = ai->ai_next)
		if ((why = egress_not_public(ai->ai_addr, own))) {
			addr_text(ai->ai_addr, addr, sizeof addr);
			snprintf(reason, sizeof reason, "resolves to %s, which is not public (%s)", addr, why);
			refuse(client, logfd, 403, &req, addr, reason, NULL);
			freeifaddrs(own);
			freeaddrinfo(res);
			egress_slot_free(slot);
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
		snprintf(reason, sizeof reason, "cannot connect (%s)", strerror(err));
		refuse(client, logfd, 502, &req, addr, reason, NULL);
		egress_slot_free(slot);
		return;
	}
	/* The live rules changed while it resolved and connected: decided again. */
	if (egress_live_generation() != live.generation) {
		egress_live_read(&live);
		egress_slot_seen(slot, live.generation);
		if (!egress_decide(rules, &live, req.host, req.host_len, (long long)time(NULL), rule, fix)) {
			close(up);
			refuse(client, logfd, 403, &req, NULL, rule, fix);
			egress_slot_free(slot);
			return;
		}
	}
	alarm(0);
	/* TERM (the proxy stops): the relay ends and its line is still written. */
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_serve_stop;
	(void)sigaction(SIGTERM, &sa, NULL);

	bytes = 0;
	closed[0] = '\0';
	if (req.connect) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

		if (relay_write_all(client, ok, sizeof ok - 1) != 0)
			goto done;
	} else {
		size_t n = egress_rewrite_head(&req, out);

		if (relay_write_all(up, out, n) != 0)
			goto done;
		bytes += n;
	}
	/* Bytes the client sent after the head go to the host just checked. */
	if (len > req.head_len) {
		if (relay_write_all(up, head + req.head_len, len - req.head_len) != 0)
			goto done;
		bytes += len - req.head_len;
	}
	bytes += egress_pump(client, up, rules, &req, slot, closed);
done:
	close(up);
	if (closed[0]) {
		size_t n = strlen(rule);

		snprintf(rule + n, sizeof rule - n, "; closed: %s", closed);
	}
	egress_log_write(logfd, req.method, req.method_len, req.host, req.port, addr, "allow", rule, bytes);
	egress_slot_free(slot);
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

/* The log folder DIR, opened once: each decision opens DIR/egress.log in it. */
static int open_log(const char *dir)
{
	struct stat st;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		die(EXIT_CANTCREAT, "cannot open the log folder %s: %s", dir, strerror(errno));
	if (fstatat(fd, "egress.log", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		die(EXIT_CANTCREAT, "%s/egress.log is not a regular file", dir);
	return fd;
}

/*
 * --control DIR: the shared live rules, and the control process serving
 * DIR/egress.ctl (owner-only), forked before any connection is. KIDS:
 * the listener's table, which the control process does not need. Returns
 * its PID.
 */
static pid_t control_start(const char *dir)
{
	char path[4096];
	pid_t pid, parent = getpid();
	int zero, cfd, dirfd;
	void *map;

	if ((zero = open("/dev/zero", O_RDWR | O_CLOEXEC)) < 0)
		die(EXIT_INTERNAL, "cannot open /dev/zero: %s", strerror(errno));
	map = mmap(NULL, sizeof *egress_shm, PROT_READ | PROT_WRITE, MAP_SHARED, zero, 0);
	if (map == MAP_FAILED)
		die(EXIT_INTERNAL, "cannot map the live rules: %s", strerror(errno));
	close(zero);
	egress_shm = map;
	egress_shm->live.generation = 1;
	if ((dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		die(EXIT_CANTCREAT, "cannot open the control folder %s: %s", dir, strerror(errno));
	if (snprintf(path, sizeof path, "%s/egress.ctl", dir) >= (int)sizeof path)
		die(EXIT_USAGE, "the control folder's path is too long");
	cfd = listen_on(path);
	pid = fork();
	if (pid < 0)
		die(EXIT_INTERNAL, "fork: %s", strerror(errno));
	if (pid == 0) {
		struct sigaction sa;

#ifdef __linux__
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
		memset(&sa, 0, sizeof sa);
		sigemptyset(&sa.sa_mask);
		sa.sa_handler = SIG_DFL;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		if (getppid() != parent)
			_exit(0);
		egress_control(cfd, dirfd);
		_exit(0);
	}
	close(cfd);
	close(dirfd);
	return pid;
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
	const char *logdir = NULL, *sock_path, *controldir = NULL;
	unsigned long max = SERVER_MAX_CONNS_DEFAULT;
	int argi, status;
	pid_t control = -1;

	memset(&ctx, 0, sizeof ctx);
	ctx.logfd = -1;
	if (argc > 2 && strcmp(argv[1], "--send") == 0)
		return egress_send(argc - 2, argv + 2);
	for (argi = 1; argi < argc && argv[argi][0] == '-'; argi++) {
		help_option(argv[argi]);
		if (strcmp(argv[argi], "--") == 0) {
			argi++;
			break;
		} else if (strcmp(argv[argi], "--log") == 0 && argi + 1 < argc)
			logdir = argv[++argi];
		else if (strcmp(argv[argi], "--control") == 0 && argi + 1 < argc)
			controldir = argv[++argi];
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
	if (controldir)
		control = control_start(controldir);

	memset(&server, 0, sizeof server);
	server.listen_fd = listen_on(sock_path);
	server.max = max;
	server.serve = egress_serve;
	server.full = egress_full;
	server.ctx = &ctx;
	status = server_run(&server);
	unlink(sock_path);
	if (control > 0) {
		char path[4096];

		kill(control, SIGTERM);
		if (snprintf(path, sizeof path, "%s/egress.ctl", controldir) < (int)sizeof path)
			unlink(path);
	}
	egress_rules_free(&ctx.rules);
	return status;
}

#endif /* FORGE_EGRESS_NO_MAIN */
