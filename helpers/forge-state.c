/*
 * forge-state — flock-guarded atomic key=value state files (SPEC 5.1).
 *
 * Every command holds an exclusive flock on FILE.lock while it reads or
 * changes FILE.  An update never writes FILE in place: the new content goes
 * to a temporary file in the same directory, which is fsync'ed and renamed
 * over FILE, so a reader or a crash sees the old file or the new one, never
 * a mix.  See forge-state(1).
 */
#define _DEFAULT_SOURCE /* flock(); the rest is POSIX.1-2008 */

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "forge-util.h"

/* get: KEY is not there and no DEFAULT given. The others: forge-util.h. */
enum { EXIT_NO_KEY = 1 };

#define DEFAULT_WAIT 10u
#define MAX_WAIT 86400u /* a day */

const char forge_help[] =
	"usage: forge-state [-w SECS] get FILE KEY [DEFAULT]\n"
	"       forge-state [-w SECS] set FILE KEY=VALUE...\n"
	"       forge-state [-w SECS] incr FILE KEY [N]\n"
	"       forge-state [-w SECS] append FILE LINE|-\n"
	"       forge-state [-w SECS] put FILE < CONTENT\n"
	"       forge-state [-w SECS] dump FILE\n"
	"       forge-state now\n"
	"       forge-state -h | --help | --version\n"
	"\n"
	"Read and update key=value state files under an exclusive flock on\n"
	"FILE.lock. Updates go to a temporary file that is fsync'ed and renamed\n"
	"over FILE, so FILE is always either the old or the new version.\n"
	"\n"
	"  get     print KEY's value (else DEFAULT; else exit 1)\n"
	"  set     set every KEY=VALUE in one atomic rewrite\n"
	"  incr    add N (default 1) to the integer KEY and print the result\n"
	"  append  append LINE and a newline to FILE (any file, e.g. JSONL);\n"
	"          with '-', the line is read from standard input\n"
	"  put     replace all of FILE (any file) by standard input, atomically\n"
	"  dump    print every key=value line\n"
	"  now     print the time: UTC as 2026-11-30T06:35:44Z and as\n"
	"          20261130T063544Z, milliseconds since the epoch, and\n"
	"          milliseconds of a clock that never goes back (for durations)\n"
	"\n"
	"FILE, FILE.lock and the temporary files are never opened through a\n"
	"symbolic link, and must be regular files (exit 73 otherwise).\n"
	"\n"
	"  -w SECS    wait at most SECS seconds for the lock (default 10), then exit 75\n"
	"  -h, --help print this help and exit\n"
	"  --version  print the version and exit\n";

static void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		die(EXIT_INTERNAL, "out of memory");
	return p;
}

/* ---- validation --------------------------------------------------------- */

static int is_key_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static int is_key(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++)
		if (!is_key_char(s[i]))
			return 0;
	return 1;
}

static void check_key(const char *key)
{
	if (!is_key(key, strlen(key)))
		die(EXIT_USAGE, "invalid key '%s' (allowed: A-Z a-z 0-9 _ . -)", key);
}

/* Parse [+-]DIGITS into *out; 0 if S is not such an integer or overflows. */
static int parse_integer(const char *s, size_t len, long long *out)
{
	size_t i = 0;
	int negative = 0;
	long long v = 0;

	if (i < len && (s[i] == '-' || s[i] == '+'))
		negative = s[i++] == '-';
	if (i == len)
		return 0;
	for (; i < len; i++) {
		int digit = s[i] - '0';

		if (s[i] < '0' || s[i] > '9')
			return 0;
		/* Accumulate negatively: LLONG_MIN has no positive counterpart. */
		if (v < (LLONG_MIN + digit) / 10)
			return 0;
		v = v * 10 - digit;
	}
	if (!negative) {
		if (v == LLONG_MIN)
			return 0;
		v = -v;
	}
	*out = v;
	return 1;
}

/* ---- plain I/O ---------------------------------------------------------- */

struct text {
	char *data;
	size_t len;
};

static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int sync_fd(int fd)
{
	int rc;

	while ((rc = fsync(fd)) != 0 && errno == EINTR)
		;
	return rc;
}

/* Close a descriptor whose data no longer matters (read side, lock). */
static void close_quietly(int fd)
{
	if (close(fd) != 0 && errno != EINTR)
		die(EXIT_INTERNAL, "close: %s", strerror(errno));
}

/* What a file of MODE is, for a message. */
static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISLNK(mode))
		return "a symbolic link";
	return "not a regular file";
}

/*
 * open(2) for FILE, its lock and its directory's temporary files: never
 * through a symbolic link (O_NOFOLLOW) and never blocking (O_NONBLOCK: a
 * FIFO planted where a state file belongs would otherwise hang the open).
 * Anything but a regular file is refused with exit 73, naming it.  Returns
 * -1 with errno set when open(2) fails for another reason; *ST receives the
 * file's status when ST is not NULL.
 */
static int open_regular(const char *path, int flags, mode_t mode,
			struct stat *st)
{
	struct stat own;
	int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);

	if (!st)
		st = &own;
	if (fd < 0) {
		int saved = errno;

		/* ELOOP (EMLINK on some BSDs): the last component is a link. */
		if ((saved == ELOOP || saved == EMLINK || saved == EISDIR ||
		     saved == ENXIO) &&
		    lstat(path, st) == 0 && !S_ISREG(st->st_mode))
			die(EXIT_CANTCREAT, "%s: not a regular file (%s)",
			    path, file_kind(st->st_mode));
		errno = saved;
		return -1;
	}
	if (fstat(fd, st) != 0)
		die(EXIT_CANTCREAT, "cannot stat %s: %s", path,
		    strerror(errno));
	if (!S_ISREG(st->st_mode))
		die(EXIT_CANTCREAT, "%s: not a regular file (%s)", path,
		    file_kind(st->st_mode));
	return fd;
}

/* Read all of FD (SIZE bytes expected) into *T. */
static void read_all(int fd, const char *path, size_t size, struct text *t)
{
	size_t cap = size + 1; /* +1: EOF is seen without regrowing */

	t->data = xmalloc(cap);
	t->len = 0;
	for (;;) {
		ssize_t n;

		if (t->len == cap) {
			char *bigger;

			if (cap > SIZE_MAX / 2 ||
			    !(bigger = realloc(t->data, cap * 2)))
				die(EXIT_INTERNAL, "out of memory reading %s", path);
			t->data = bigger;
			cap *= 2;
		}
		n = read(fd, t->data + t->len, cap - t->len);
		if (n == 0)
			return;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die(EXIT_CANTCREAT, "cannot read %s: %s", path,
			    strerror(errno));
		}
		t->len += (size_t)n;
	}
}

/* ---- key=value lines ---------------------------------------------------- */

/* The line at *POS (without its newline) in *LINE; 0 at the end of T. */
static int next_line(const struct text *t, size_t *pos, const char **line,
		     size_t *len)
{
	const char *start, *nl;

	if (*pos >= t->len)
		return 0;
	start = t->data + *pos;
	nl = memchr(start, '\n', t->len - *pos);
	*line = start;
	*len = nl ? (size_t)(nl - start) : t->len - *pos;
	*pos += *len + 1;
	return 1;
}

/* The key length if LINE is a key=value pair, else 0. */
static size_t pair_key_len(const char *line, size_t len)
{
	size_t i = 0;

	while (i < len && is_key_char(line[i]))
		i++;
	return i > 0 && i < len && line[i] == '=' ? i : 0;
}

/* Warn once about lines that are neither key=value nor blank (kept as is). */
static void warn_unknown_lines(const char *path, const struct text *t)
{
	size_t pos = 0, len, lineno = 0, first = 0, count = 0;
	const char *line;

	while (next_line(t, &pos, &line, &len)) {
		lineno++;
		if (len > 0 && !pair_key_len(line, len) && count++ == 0)
			first = lineno;
	}
	if (count == 1)
		warn("%s:%zu: not a key=value line; kept as is", path, first);
	else if (count > 1)
		warn("%s:%zu: not a key=value line (and %zu more); kept as is",
		     path, first, count - 1);
}

/* KEY's value on its first key=value line in T (*VALUE_LEN bytes), or NULL. */
static const char *find_value(const struct text *t, const char *key,
			      size_t key_len, size_t *value_len)
{
	size_t pos = 0, len;
	const char *line;

	while (next_line(t, &pos, &line, &len))
		if (pair_key_len(line, len) == key_len &&
		    memcmp(line, key, key_len) == 0) {
			*value_len = len - key_len - 1;
			return line + key_len + 1;
		}
	return NULL;
}

/* ---- updates ------------------------------------------------------------ */

struct update {
	const char *key; /* not terminated: KEY=VALUE arguments are split in place */
	size_t key_len;
	const char *value;
	int done; /* already written by render() */
};

/* Keep only the last update of each key: that is the one that wins. */
static size_t keep_last_updates(struct update *u, size_t n)
{
	size_t i, j, kept = 0;

	for (i = 0; i < n; i++) {
		for (j = i + 1; j < n; j++)
			if (u[j].key_len == u[i].key_len &&
			    memcmp(u[j].key, u[i].key, u[i].key_len) == 0)
				break;
		if (j == n)
			u[kept++] = u[i];
	}
	return kept;
}

static struct update *find_update(struct update *u, size_t n, const char *key,
				  size_t key_len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (u[i].key_len == key_len &&
		    memcmp(u[i].key, key, key_len) == 0)
			return &u[i];
	return NULL;
}

/* Append LEN bytes to OUT, which render() sized beforehand. */
static void put(struct text *out, const char *s, size_t len)
{
	memcpy(out->data + out->len, s, len);
	out->len += len;
}

static void put_pair(struct text *out, const struct update *u)
{
	put(out, u->key, u->key_len);
	put(out, "=", 1);
	put(out, u->value, strlen(u->value));
	put(out, "\n", 1);
}

/*
 * The new content of a state file: an updated key's first line replaced in
 * place and its later lines dropped, new keys appended in argument order,
 * every other line kept verbatim.
 */
static void render(const struct text *old, struct update *u, size_t n,
		   struct text *out)
{
	size_t pos = 0, len, key_len, i, size = old->len + 1;
	const char *line;

	for (i = 0; i < n; i++)
		size += u[i].key_len + strlen(u[i].value) + 2;
	out->data = xmalloc(size);
	out->len = 0;

	while (next_line(old, &pos, &line, &len)) {
		struct update *hit = NULL;

		if ((key_len = pair_key_len(line, len)))
			hit = find_update(u, n, line, key_len);
		if (!hit) {
			put(out, line, len);
			put(out, "\n", 1);
		} else if (!hit->done) {
			put_pair(out, hit);
			hit->done = 1;
		}
	}
	for (i = 0; i < n; i++)
		if (!u[i].done)
			put_pair(out, &u[i]);
}

/* ---- the state file, its lock and its directory ------------------------- */

struct store {
	const char *path; /* FILE */
	const char *base; /* FILE's last component */
	char *dir;        /* FILE's directory, with its trailing '/'; "" for . */
	char *lock_path;  /* FILE.lock */
	int lock_fd;      /* -1: FILE's directory does not exist */
	int exists;       /* FILE exists and st describes it */
	struct stat st;
	struct text text; /* FILE's content; empty when it does not exist */
};

static void store_init(struct store *s, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
	size_t path_len = strlen(path);

	if (path_len == 0 || dir_len == path_len)
		die(EXIT_USAGE, "FILE must name a file: '%s'", path);
	memset(s, 0, sizeof *s);
	s->path = path;
	s->base = path + dir_len;
	s->dir = xmalloc(dir_len + 1);
	memcpy(s->dir, path, dir_len);
	s->dir[dir_len] = '\0';
	s->lock_path = xmalloc(path_len + sizeof ".lock");
	memcpy(s->lock_path, path, path_len);
	memcpy(s->lock_path + path_len, ".lock", sizeof ".lock");
	s->lock_fd = -1;
}

static void store_free(struct store *s)
{
	free(s->dir);
	free(s->lock_path);
	free(s->text.data);
}

static void on_alarm(int sig)
{
	(void)sig; /* only here to interrupt flock() */
}

static long long elapsed_ms(const struct timespec *since)
{
	struct timespec now;

	if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		die(EXIT_INTERNAL, "clock_gettime: %s", strerror(errno));
	return (now.tv_sec - since->tv_sec) * 1000LL +
	       (now.tv_nsec - since->tv_nsec) / 1000000;
}

/*
 * Take the exclusive lock on FILE.lock, waiting at most WAIT seconds.  A
 * blocking flock() is woken by the kernel the moment the holder lets go (no
 * polling).  SIGALRM, handled without SA_RESTART, interrupts it at the
 * deadline, and every 0.1 s after that in case the first one came just
 * before flock() went to sleep.  Returns 0 if FILE's directory does not
 * exist and MISSING_OK.
 */
static int store_lock(struct store *s, unsigned wait, int missing_ok)
{
	struct itimerval timer = { { 0, 100000 }, { 0, 0 } };
	struct sigaction sa;
	struct timespec start;
	int fd = open_regular(s->lock_path, O_RDWR | O_CREAT, 0666, NULL);

	if (fd < 0 && errno == ENOENT && missing_ok)
		return 0;
	if (fd < 0 && (errno == EACCES || errno == EROFS))
		fd = open_regular(s->lock_path, O_RDONLY, 0, NULL); /* flock needs no write access */
	if (fd < 0)
		die(EXIT_CANTCREAT, "cannot open lock file %s: %s",
		    s->lock_path, strerror(errno));
	s->lock_fd = fd;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 1;
	if (errno != EWOULDBLOCK && errno != EAGAIN)
		die(EXIT_CANTCREAT, "cannot lock %s: %s", s->lock_path,
		    strerror(errno));
	if (wait == 0)
		die(EXIT_TEMPFAIL, "the lock on %s is held (-w 0)",
		    s->lock_path);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	timer.it_value.tv_sec = (time_t)wait;
	if (sigemptyset(&sa.sa_mask) != 0 ||
	    sigaction(SIGALRM, &sa, NULL) != 0 ||
	    clock_gettime(CLOCK_MONOTONIC, &start) != 0 ||
	    setitimer(ITIMER_REAL, &timer, NULL) != 0)
		die(EXIT_INTERNAL, "cannot set up the lock timer: %s",
		    strerror(errno));
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR)
			die(EXIT_CANTCREAT, "cannot lock %s: %s",
			    s->lock_path, strerror(errno));
		if (elapsed_ms(&start) >= wait * 1000LL)
			die(EXIT_TEMPFAIL,
			    "timed out after %u s waiting for the lock on %s",
			    wait, s->lock_path);
	}
	memset(&timer, 0, sizeof timer);
	if (setitimer(ITIMER_REAL, &timer, NULL) != 0)
		die(EXIT_INTERNAL, "cannot stop the lock timer: %s",
		    strerror(errno));
	return 1;
}

static void store_unlock(struct store *s)
{
	if (s->lock_fd >= 0)
		close_quietly(s->lock_fd); /* closing the last fd drops the flock */
	s->lock_fd = -1;
}

/*
 * Lock FILE and read it.  A missing FILE reads as empty; so does a missing
 * directory when READ_ONLY (nothing is created then).
 */
static void store_open(struct store *s, const char *path, unsigned wait,
		       int read_only)
{
	int fd;

	store_init(s, path);
	if (!store_lock(s, wait, read_only))
		return;
	fd = open_regular(path, O_RDONLY, 0, &s->st);
	if (fd < 0) {
		if (errno == ENOENT)
			return;
		die(EXIT_CANTCREAT, "cannot open %s: %s", path,
		    strerror(errno));
	}
	read_all(fd, path, (size_t)s->st.st_size, &s->text);
	close_quietly(fd);
	s->exists = 1;
}

/* Remove the half-made temporary file TEMP, then die. */
static FORGE_NORETURN void die_with_temp(char *temp, const char *what)
{
	int saved = errno;

	if (unlink(temp) != 0 && errno != ENOENT)
		warn("cannot remove %s: %s", temp, strerror(errno));
	die(EXIT_CANTCREAT, "cannot %s %s: %s", what, temp, strerror(saved));
}

static int is_temp_letter(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

/* Whether NAME is .BASE.XXXXXX, the name create_temp() gives. */
static int is_temp_name(const char *name, const char *base)
{
	size_t base_len = strlen(base), i;

	if (name[0] != '.' || strncmp(name + 1, base, base_len) != 0 ||
	    name[base_len + 1] != '.')
		return 0;
	name += base_len + 2;
	for (i = 0; i < 6; i++)
		if (!is_temp_letter(name[i]))
			return 0;
	return name[6] == '\0';
}

/*
 * Remove the temporary files of FILE that a writer killed by SIGKILL (or a
 * crash) left between creating and renaming one.  Every writer creates and
 * renames its temporary file while it holds FILE.lock, and so does the
 * caller now: a temporary file that exists at this moment has no live
 * writer.  Only names of exactly that pattern, only regular files, never
 * through a symbolic link.  Best effort: a directory that cannot be listed
 * is left as it is, and the update goes on.
 */
static void remove_stale_temps(const struct store *s)
{
	DIR *dir = opendir(*s->dir ? s->dir : ".");
	struct dirent *entry;
	struct stat st;

	if (!dir)
		return;
	for (;;) {
		errno = 0;
		if (!(entry = readdir(dir)))
			break;
		if (!is_temp_name(entry->d_name, s->base) ||
		    fstatat(dirfd(dir), entry->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (unlinkat(dirfd(dir), entry->d_name, 0) != 0 &&
		    errno != ENOENT)
			warn("cannot remove the stale temporary file %s%s: %s",
			     s->dir, entry->d_name, strerror(errno));
	}
	if (errno != 0)
		warn("cannot list %s: %s", *s->dir ? s->dir : ".",
		     strerror(errno));
	if (closedir(dir) != 0)
		die(EXIT_INTERNAL, "closedir: %s", strerror(errno));
}

/*
 * Create a temporary file DIR/.BASE.XXXXXX, like mkstemp(3) but O_CLOEXEC
 * and with MODE (umask applied).  *TEMP receives its name.
 */
static int create_temp(const struct store *s, mode_t mode, char **temp)
{
	static const char letters[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t name_len = strlen(s->dir) + strlen(s->base) + sizeof "/..XXXXXX";
	char *name = xmalloc(name_len), *x;
	struct timespec ts;
	unsigned long long seed;
	int tries, i, fd;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		die(EXIT_INTERNAL, "clock_gettime: %s", strerror(errno));
	seed = (unsigned long long)ts.tv_nsec ^
	       ((unsigned long long)ts.tv_sec << 30) ^
	       ((unsigned long long)getpid() << 12);
	x = name + sprintf(name, "%s.%s.", s->dir, s->base);
	for (tries = 0; tries < 100; tries++) {
		for (i = 0; i < 6; i++) {
			seed = seed * 6364136223846793005ULL +
			       1442695040888963407ULL;
			x[i] = letters[(seed >> 33) % (sizeof letters - 1)];
		}
		x[6] = '\0';
		/* O_EXCL: never an existing file, nor through a link. */
		fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				O_CLOEXEC, mode);
		if (fd >= 0) {
			*temp = name;
			return fd;
		}
		if (errno != EEXIST)
			die(EXIT_CANTCREAT, "cannot create a temporary file "
			    "next to %s: %s", s->path, strerror(errno));
	}
	die(EXIT_CANTCREAT, "cannot create a temporary file next to %s: "
	    "too many collisions", s->path);
}

/*
 * Block the signals that end a process by default, so that an update, once
 * started, finishes and leaves no temporary file behind; one that arrives
 * meanwhile takes effect when restore_signals() unblocks it.
 */
static void block_signals(sigset_t *old)
{
	sigset_t fatal;

	if (sigemptyset(&fatal) != 0 || sigaddset(&fatal, SIGHUP) != 0 ||
	    sigaddset(&fatal, SIGINT) != 0 || sigaddset(&fatal, SIGQUIT) != 0 ||
	    sigaddset(&fatal, SIGTERM) != 0 ||
	    sigprocmask(SIG_BLOCK, &fatal, old) != 0)
		die(EXIT_INTERNAL, "cannot block signals: %s", strerror(errno));
}

static void restore_signals(const sigset_t *old)
{
	if (sigprocmask(SIG_SETMASK, old, NULL) != 0)
		die(EXIT_INTERNAL, "cannot unblock signals: %s", strerror(errno));
}

/* Atomically replace FILE by CONTENT, keeping FILE's mode and owner. */
static void store_replace(const struct store *s, const struct text *content)
{
	sigset_t old_mask;
	char *temp;
	int fd;

	block_signals(&old_mask);
	remove_stale_temps(s);
	fd = create_temp(s, s->exists ? 0600 : 0666, &temp);
	if (s->exists) {
		if (fchmod(fd, s->st.st_mode & 07777) != 0)
			die_with_temp(temp, "set the mode of");
		/* Only root may give a file away; anyone else keeps it. */
		if ((s->st.st_uid != geteuid() || s->st.st_gid != getegid()) &&
		    fchown(fd, s->st.st_uid, s->st.st_gid) != 0 &&
		    errno != EPERM)
			die_with_temp(temp, "set the owner of");
	}
	if (write_all(fd, content->data, content->len) != 0)
		die_with_temp(temp, "write");
	if (sync_fd(fd) != 0)
		die_with_temp(temp, "fsync");
	if (close(fd) != 0 && errno != EINTR)
		die_with_temp(temp, "close");
	if (rename(temp, s->path) != 0) {
		int saved = errno;

		if (unlink(temp) != 0 && errno != ENOENT)
			warn("cannot remove %s: %s", temp, strerror(errno));
		die(EXIT_CANTCREAT, "cannot rename %s to %s: %s", temp,
		    s->path, strerror(saved));
	}
	restore_signals(&old_mask);
	free(temp);
}

/*
 * Make the rename (or a file's creation) durable.  Callers do this after
 * releasing the lock, which keeps the lock held for one disk flush instead
 * of two: the next writer may already build on the new FILE, but this
 * process still reports success only once the directory entry is on disk,
 * and a later writer's own rename can only carry this update forward.
 */
static void sync_dir(const struct store *s)
{
	const char *dir = *s->dir ? s->dir : ".";
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		die(EXIT_CANTCREAT, "cannot open directory %s: %s", dir,
		    strerror(errno));
	/* EINVAL: this file system cannot sync directories; nothing to do. */
	if (sync_fd(fd) != 0 && errno != EINVAL)
		die(EXIT_CANTCREAT, "cannot fsync directory %s: %s", dir,
		    strerror(errno));
	close_quietly(fd);
}

/* Rewrite FILE with the updates applied, then make it durable. */
static void store_update(struct store *s, struct update *u, size_t n)
{
	struct text content;

	render(&s->text, u, n, &content);
	store_replace(s, &content);
	free(content.data);
	store_unlock(s);
	sync_dir(s);
	warn_unknown_lines(s->path, &s->text);
}

/* ---- commands ----------------------------------------------------------- */

static void flush_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		die(EXIT_CANTCREAT, "cannot write standard output: %s",
		    strerror(errno));
}

static int cmd_get(unsigned wait, char **args, int n)
{
	struct store s;
	const char *value;
	size_t value_len;
	int status = 0;

	if (n < 2 || n > 3)
		die(EXIT_USAGE, "get takes FILE KEY [DEFAULT]");
	check_key(args[1]);
	store_open(&s, args[0], wait, 1);
	store_unlock(&s);
	warn_unknown_lines(s.path, &s.text);

	value = find_value(&s.text, args[1], strlen(args[1]), &value_len);
	if (value) {
		fwrite(value, 1, value_len, stdout);
		putchar('\n');
	} else if (n == 3) {
		puts(args[2]);
	} else {
		status = EXIT_NO_KEY;
	}
	flush_stdout();
	store_free(&s);
	return status;
}

static int cmd_set(unsigned wait, char **args, int n)
{
	struct store s;
	struct update *u;
	size_t count = 0;
	int i;

	if (n < 2)
		die(EXIT_USAGE, "set takes FILE KEY=VALUE...");
	u = xmalloc((size_t)(n - 1) * sizeof *u);
	for (i = 1; i < n; i++) {
		const char *eq = strchr(args[i], '=');

		if (!eq)
			die(EXIT_USAGE, "'%s' is not KEY=VALUE", args[i]);
		u[count].key = args[i];
		u[count].key_len = (size_t)(eq - args[i]);
		u[count].value = eq + 1;
		u[count].done = 0;
		if (!is_key(u[count].key, u[count].key_len))
			die(EXIT_USAGE, "invalid key in '%s' (allowed: "
			    "A-Z a-z 0-9 _ . -)", args[i]);
		if (strchr(u[count].value, '\n'))
			die(EXIT_USAGE, "the value of %.*s contains a newline",
			    (int)u[count].key_len, u[count].key);
		count++;
	}
	count = keep_last_updates(u, count);

	store_open(&s, args[0], wait, 0);
	store_update(&s, u, count);
	store_free(&s);
	free(u);
	return 0;
}

static int cmd_incr(unsigned wait, char **args, int n)
{
	struct store s;
	struct update u;
	const char *value;
	size_t value_len;
	long long delta = 1, current = 0;
	char number[32];

	if (n < 2 || n > 3)
		die(EXIT_USAGE, "incr takes FILE KEY [N]");
	check_key(args[1]);
	if (n == 3 && !parse_integer(args[2], strlen(args[2]), &delta))
		die(EXIT_USAGE, "N is not an integer: '%s'", args[2]);

	store_open(&s, args[0], wait, 0);
	u.key = args[1];
	u.key_len = strlen(u.key);
	value = find_value(&s.text, u.key, u.key_len, &value_len);
	if (value && !parse_integer(value, value_len, &current))
		die(EXIT_DATA, "%s: the value of %s is not an integer: '%.*s'",
		    s.path, u.key, value_len > 64 ? 64 : (int)value_len, value);
	if (delta > 0 ? current > LLONG_MAX - delta : current < LLONG_MIN - delta)
		die(EXIT_DATA, "%s: %s + %lld would overflow (value %lld)",
		    s.path, u.key, delta, current);
	sprintf(number, "%lld", current + delta);
	u.value = number;
	u.done = 0;
	store_update(&s, &u, 1);
	puts(number);
	flush_stdout();
	store_free(&s);
	return 0;
}

/*
 * The line to append: LINE itself, or with '-' all of standard input, less
 * one final newline (a line of any length: one argument is limited to
 * 128 KiB on Linux).  Either way it must not contain a newline.
 */
static void append_line(const char *arg, struct text *line)
{
	if (strcmp(arg, "-") == 0) {
		read_all(STDIN_FILENO, "standard input", 0, line);
		if (line->len > 0 && line->data[line->len - 1] == '\n')
			line->len--;
	} else {
		line->len = strlen(arg);
		line->data = xmalloc(line->len + 1);
		memcpy(line->data, arg, line->len);
	}
	if (memchr(line->data, '\n', line->len))
		die(EXIT_USAGE, "LINE contains a newline");
}

/*
 * Append LINE to FILE, which is any file (a JSONL timeline, say), not a
 * key=value one.  A last line left without its newline by a crash gets one
 * first, so every line a reader sees stays whole.
 */
static int cmd_append(unsigned wait, char **args, int n)
{
	struct store s;
	struct stat st;
	struct text line;
	char *record, last = '\n';
	size_t len = 0;
	int fd, created = 0;

	if (n != 2)
		die(EXIT_USAGE, "append takes FILE LINE (or - to read it from standard input)");
	/* Read before locking: a slow writer on the pipe holds no lock. */
	append_line(args[1], &line);

	store_init(&s, args[0]);
	store_lock(&s, wait, 0);
	fd = open_regular(s.path, O_RDWR | O_APPEND, 0, &st);
	if (fd < 0 && errno == ENOENT) {
		fd = open_regular(s.path, O_RDWR | O_APPEND | O_CREAT | O_EXCL,
				  0666, &st);
		created = 1;
	}
	if (fd < 0)
		die(EXIT_CANTCREAT, "cannot open %s: %s", s.path,
		    strerror(errno));
	while (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
		if (errno != EINTR)
			die(EXIT_CANTCREAT, "cannot read %s: %s", s.path,
			    strerror(errno));

	/* One buffer, one write(): concurrent readers never see half a line. */
	if (line.len > SIZE_MAX - 2)
		die(EXIT_INTERNAL, "out of memory");
	record = xmalloc(line.len + 2);
	if (last != '\n')
		record[len++] = '\n';
	memcpy(record + len, line.data, line.len);
	len += line.len;
	record[len++] = '\n';
	if (write_all(fd, record, len) != 0 || sync_fd(fd) != 0)
		die(EXIT_CANTCREAT, "cannot write %s: %s", s.path,
		    strerror(errno));
	if (close(fd) != 0 && errno != EINTR)
		die(EXIT_CANTCREAT, "cannot close %s: %s", s.path,
		    strerror(errno));
	store_unlock(&s);
	if (created)
		sync_dir(&s);
	free(record);
	free(line.data);
	store_free(&s);
	return 0;
}

/*
 * Replace all of FILE (any file, e.g. a JSON document) by standard input,
 * with the same atomic rename as set.  The input is read before the lock
 * is taken.
 */
static int cmd_put(unsigned wait, char **args, int n)
{
	struct store s;
	struct text content;

	if (n != 1)
		die(EXIT_USAGE, "put takes FILE (the content comes on standard input)");
	read_all(STDIN_FILENO, "standard input", 0, &content);
	store_open(&s, args[0], wait, 0);
	store_replace(&s, &content);
	store_unlock(&s);
	sync_dir(&s);
	free(content.data);
	store_free(&s);
	return 0;
}

/* Print every key=value line; a key's later duplicates are not printed. */
static int cmd_dump(unsigned wait, char **args, int n)
{
	struct store s;
	size_t pos = 0, len, key_len, value_len;
	const char *line;

	if (n != 1)
		die(EXIT_USAGE, "dump takes FILE");
	store_open(&s, args[0], wait, 1);
	store_unlock(&s);
	warn_unknown_lines(s.path, &s.text);

	while (next_line(&s.text, &pos, &line, &len))
		if ((key_len = pair_key_len(line, len)) &&
		    find_value(&s.text, line, key_len, &value_len) ==
			    line + key_len + 1) {
			fwrite(line, 1, len, stdout);
			putchar('\n');
		}
	flush_stdout();
	store_free(&s);
	return 0;
}

/*
 * Print the time in the forms forge records (its shell has no clock of its
 * own, and a date(1) process per reading costs more than this one): UTC
 * RFC 3339, the compact sortable stamp, epoch milliseconds, and the
 * milliseconds of CLOCK_MONOTONIC, which a clock change cannot move, for
 * durations.  Takes no file and no lock.
 */
static int cmd_now(unsigned wait, char **args, int n)
{
	struct timespec real, mono;
	struct tm utc;
	char iso[32], stamp[32];

	(void)wait;
	(void)args;
	if (n != 0)
		die(EXIT_USAGE, "now takes no arguments");
	if (clock_gettime(CLOCK_REALTIME, &real) != 0 ||
	    clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
		die(EXIT_INTERNAL, "cannot read the clock: %s", strerror(errno));
	if (!gmtime_r(&real.tv_sec, &utc) ||
	    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &utc) == 0 ||
	    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc) == 0)
		die(EXIT_INTERNAL, "cannot format the time");
	printf("%s %s %lld %lld\n", iso, stamp,
	       (long long)real.tv_sec * 1000 + real.tv_nsec / 1000000,
	       (long long)mono.tv_sec * 1000 + mono.tv_nsec / 1000000);
	flush_stdout();
	return 0;
}

/* A -w argument: a whole number of seconds. */
static unsigned parse_wait(const char *arg)
{
	long long secs;

	if (!arg)
		die(EXIT_USAGE, "-w needs SECS");
	if (*arg < '0' || *arg > '9' ||
	    !parse_integer(arg, strlen(arg), &secs) || secs > MAX_WAIT)
		die(EXIT_USAGE, "-w takes whole seconds from 0 to %u, not '%s'",
		    MAX_WAIT, arg);
	return (unsigned)secs;
}

#ifndef FORGE_STATE_NO_MAIN /* t/fuzz-state.c includes this file */
int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(unsigned wait, char **args, int n);
	} commands[] = {
		{ "get", cmd_get },       { "set", cmd_set },
		{ "incr", cmd_incr },     { "append", cmd_append },
		{ "put", cmd_put },       { "dump", cmd_dump },
		{ "now", cmd_now },
	};
	unsigned wait = DEFAULT_WAIT;
	size_t c;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		help_option(argv[i]);
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strncmp(argv[i], "-w", 2) == 0) {
			wait = parse_wait(argv[i][2] ? argv[i] + 2 : argv[++i]);
		} else {
			die(EXIT_USAGE, "unknown option '%s'", argv[i]);
		}
	}
	if (i == argc)
		die(EXIT_USAGE, "missing command");
	for (c = 0; c < sizeof commands / sizeof commands[0]; c++)
		if (strcmp(argv[i], commands[c].name) == 0)
			return commands[c].run(wait, argv + i + 1, argc - i - 1);
	die(EXIT_USAGE, "unknown command '%s'", argv[i]);
}
#endif
