/*
 * forge-sandbox-init — PID 1 and exec server of a namespace sandbox (SPEC 4.5).
 *
 *   forge-sandbox-init start [--cgroup FILE]... [--cpus N] [--keep FD2]...
 *                            [--user UID:GID] SOCKET FD -- COMMAND...
 *       On the host: creates the owner-only unix socket SOCKET, listening, as
 *       file descriptor FD; closes every other descriptor above 2 but the
 *       FD2s (so no pipe of the caller stays open for as long as the
 *       sandbox runs, nor reaches inside); joins each cgroup by writing to
 *       its cgroup.procs FILE; keeps the first N of the allowed CPUs; with
 *       --user, drops
 *       to UID:GID with no supplementary groups (root starting the sandbox
 *       of another user's worktree); starts a new session; then execs
 *       COMMAND (bwrap ... forge-sandbox-init serve FD), which inherits the
 *       socket. The socket file is never mounted in the sandbox.
 *   forge-sandbox-init serve FD
 *       Inside: PID 1. Closes every descriptor above 2 but FD; reaps every
 *       child and runs each request received on the listening socket FD in
 *       its own session and process group.
 *
 * The wire protocol (one connection per command) is in exec-proto.h. A
 * client that disconnects before its status was sent has its command's
 * process group killed (SIGKILL). A request whose stdio fds are not all
 * pipes, sockets, regular files or character devices (a directory would
 * open the host's tree below it) is refused: the connection is closed.
 */
#define _GNU_SOURCE  /* accept4, pipe2, sched_setaffinity, prctl */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "exec-proto.h"
#include "forge-util.h"

const char forge_help[] =
	"usage: forge-sandbox-init start [--cgroup FILE]... [--cpus N] [--keep FD2]...\n"
	"                                [--user UID:GID] SOCKET FD -- COMMAND...\n"
	"       forge-sandbox-init serve FD\n"
	"start (on the host): create the owner-only unix socket SOCKET listening as\n"
	"file descriptor FD, close other fds but the FD2s, join the cgroups, keep N\n"
	"CPUs, drop to UID:GID, start a new session and exec COMMAND. serve (PID 1 of the sandbox): reap children and run each exec\n"
	"request received on the socket FD. The wire protocol is in forge-sandbox-init(1).\n";


#define CONNS_MAX 256
#define REQUEST_TIMEOUT_SECS 10
#define SIGNALS_MAX NSIG  /* one past the highest signal number */
#define TTY_BUF 4096
#define TTY_DRAIN_MS 200

/*
 * Terminal mode: the pty's master and the client's two pipes, with what is
 * read from one side and not yet written to the other. Nothing blocks: a
 * side that cannot take more is polled for POLLOUT, its source not read.
 */
struct tty {
	int master, in, out;  /* -1 once closed; in: from the client, out: to it */
	int master_eof;       /* the slave is closed everywhere: nothing more comes */
	int done, status;     /* the command was reaped; its status to send */
	struct timespec deadline;  /* done: send the status by then at the latest */
	size_t tm_off, tm_len, tc_off, tc_len;
	char to_master[TTY_BUF], to_client[TTY_BUF];
};

/*
 * One client. A slot is free when fd < 0 and pid == 0. While its request
 * is read (reading != 0), nothing blocks on it: the bytes and fds arrive
 * as the poll loop finds them, and a request not whole by its deadline is
 * dropped, so a client that stalls delays no other.
 */
struct conn {
	int fd;        /* -1 once the client is gone */
	pid_t pid;     /* the command (and its process group); 0: none */
	uint32_t flags;
	int reading;   /* the request is still arriving */
	struct timespec deadline;
	struct exec_header h;
	size_t got;    /* bytes of the header, then (payload set) of the payload */
	int fds[3], nfds;
	char *payload;
	struct tty *tty;  /* terminal mode; NULL otherwise */
};

/* Write end of the self-pipe: the only thing the SIGCHLD handler touches. */
static int child_pipe_wr = -1;

/* A decimal in [min, max], or -1. */
static long parse_number(const char *s, long min, long max)
{
	char *end;
	long n = -1;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	n = strtol(s, &end, 10);
	if (errno || *end || n < min || n > max)
		return -1;
	return n;
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die(EXIT_CANTCREAT, "cannot write: %s", strerror(n < 0 ? errno : EIO));
		p += n;
		len -= (size_t)n;
	}
}

/* The descriptors above 2 that are not in KEEP (N of them), closed. */
static void close_other_fds(const long *keep, int n)
{
	int open_fds[1024], count = 0;
	DIR *dir = opendir("/proc/self/fd");

	if (dir) {
		struct dirent *e;

		while ((e = readdir(dir)) && count < (int)(sizeof open_fds / sizeof open_fds[0])) {
			long fd = parse_number(e->d_name, 3, INT_MAX);

			if (fd >= 0 && fd != dirfd(dir))
				open_fds[count++] = (int)fd;
		}
		closedir(dir);
	} else {
		/* No /proc: every descriptor a default limit allows. */
		for (int fd = 3; fd < 1024 && count < 1024; fd++)
			open_fds[count++] = fd;
	}
	for (int i = 0; i < count; i++) {
		int kept = 0;

		for (int k = 0; k < n; k++)
			kept |= keep[k] == open_fds[i];
		if (!kept)
			close(open_fds[i]);
	}
}

/* --- start: on the host --------------------------------------------------- */

/*
 * A PATH longer than a unix socket address holds (a deep state folder, a
 * long sandbox name) is reached through its folder, opened here:
 * /proc/self/fd/N/NAME, as forge-shell connects to it.
 */
static int listen_socket(const char *path)
{
	struct sockaddr_un addr;
	const char *base = strrchr(path, '/');
	int fd, dirfd = -1;
	mode_t old;

	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	if (strlen(path) < sizeof addr.sun_path)
		memcpy(addr.sun_path, path, strlen(path) + 1);
	else {
		char *dir = strdup(path);

		if (!dir)
			die(EXIT_INTERNAL, "out of memory");
		if (!base || base == path)
			die(EXIT_USAGE, "socket path too long: %s", path);
		dir[base - path] = '\0';
		dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dirfd < 0)
			die(EXIT_CANTCREAT, "cannot open %s: %s", dir, strerror(errno));
		free(dir);
		if ((size_t)snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d%s", dirfd, base) >=
			sizeof addr.sun_path)
			die(EXIT_USAGE, "socket path too long: %s", path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die(EXIT_INTERNAL, "socket: %s", strerror(errno));
	old = umask(077);  /* owner-only from the moment it exists */
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
		die(EXIT_CANTCREAT, "cannot create the socket %s: %s", path, strerror(errno));
	umask(old);
	if (chmod(addr.sun_path, 0600) != 0 || listen(fd, 64) != 0)
		die(EXIT_CANTCREAT, "cannot listen on %s: %s", path, strerror(errno));
	if (dirfd >= 0 && close(dirfd) != 0)
		die(EXIT_INTERNAL, "close: %s", strerror(errno));
	return fd;
}

static void join_cgroup(const char *procs)
{
	int fd = open(procs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		die(EXIT_CANTCREAT, "cannot join the cgroup %s: %s", procs, strerror(errno));
	write_all(fd, "0\n", 2);  /* 0: the writing process */
	if (close(fd) != 0)
		die(EXIT_CANTCREAT, "cannot join the cgroup %s: %s", procs, strerror(errno));
}

/* Keeps the first N of the CPUs this process may run on. */
static void keep_cpus(long n)
{
	cpu_set_t set, keep;
	int cpu;

	if (sched_getaffinity(0, sizeof set, &set) != 0)
		die(EXIT_INTERNAL, "sched_getaffinity: %s", strerror(errno));
	CPU_ZERO(&keep);
	for (cpu = 0; cpu < CPU_SETSIZE && n > 0; cpu++) {
		if (CPU_ISSET(cpu, &set)) {
			CPU_SET(cpu, &keep);
			n--;
		}
	}
	if (sched_setaffinity(0, sizeof keep, &keep) != 0)
		die(EXIT_INTERNAL, "sched_setaffinity: %s", strerror(errno));
}

/* Becomes UID:GID, with no supplementary group, for good. */
static void drop_to(const char *spec)
{
	char *end;
	unsigned long uid, gid;

	errno = 0;
	uid = strtoul(spec, &end, 10);
	if (errno || end == spec || *end != ':' || uid == 0 || uid > 0xfffffffeUL)
		die(EXIT_USAGE, "--user takes UID:GID (not root), not '%s'", spec);
	spec = end + 1;
	gid = strtoul(spec, &end, 10);
	if (errno || end == spec || *end || gid > 0xfffffffeUL)
		die(EXIT_USAGE, "--user takes UID:GID (not root), not '%s'", spec);
	if (setgroups(0, NULL) != 0 || setgid((gid_t)gid) != 0 || setuid((uid_t)uid) != 0)
		die(EXIT_INTERNAL, "cannot become %lu:%lu: %s", uid, gid, strerror(errno));
	if (getuid() != (uid_t)uid || geteuid() != (uid_t)uid || getegid() != (gid_t)gid || setuid(0) == 0)
		die(EXIT_INTERNAL, "could not drop to %lu:%lu for good", uid, gid);
}

static int cmd_start(int argc, char **argv)
{
	long cpus = 0, target, keep[17];
	const char *user = NULL;
	int i, fd, nkeep = 1;

	for (i = 2; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--") != 0; i += 2) {
		if (i + 1 >= argc)
			die(EXIT_USAGE, "%s needs a value", argv[i]);
		if (strcmp(argv[i], "--cgroup") == 0)
			continue;  /* joined below, once the arguments are known good */
		if (strcmp(argv[i], "--keep") == 0) {
			if (nkeep >= (int)(sizeof keep / sizeof keep[0]) ||
				(keep[nkeep++] = parse_number(argv[i + 1], 3, 1023)) < 0)
				die(EXIT_USAGE, "--keep takes at most 16 fds from 3 to 1023, not '%s'", argv[i + 1]);
			continue;
		}
		if (strcmp(argv[i], "--user") == 0) {
			user = argv[i + 1];
			continue;
		}
		if (strcmp(argv[i], "--cpus") != 0)
			die(EXIT_USAGE, "unknown option '%s'", argv[i]);
		if ((cpus = parse_number(argv[i + 1], 1, CPU_SETSIZE)) < 0)
			die(EXIT_USAGE, "--cpus takes a number from 1 to %d, not '%s'", CPU_SETSIZE, argv[i + 1]);
	}
	if (argc - i < 4 || strcmp(argv[i + 2], "--") != 0)
		die(EXIT_USAGE, "start takes SOCKET FD -- COMMAND...");
	target = parse_number(argv[i + 1], 3, 1023);
	if (target < 0)
		die(EXIT_USAGE, "FD must be a number from 3 to 1023, not '%s'", argv[i + 1]);

	keep[0] = target;
	for (int k = 1; k < nkeep; k++)
		if (keep[k] == target)
			die(EXIT_USAGE, "--keep %ld: that is FD, where the socket goes", target);
	fd = listen_socket(argv[i]);
	if (fd != target) {
		if (dup2(fd, (int)target) < 0)
			die(EXIT_INTERNAL, "dup2: %s", strerror(errno));
		if (close(fd) != 0)
			die(EXIT_INTERNAL, "close: %s", strerror(errno));
	} else if (fcntl(fd, F_SETFD, 0) != 0)
		die(EXIT_INTERNAL, "fcntl: %s", strerror(errno));
	close_other_fds(keep, nkeep);
	for (int j = 2; j < i; j += 2)
		if (strcmp(argv[j], "--cgroup") == 0)
			join_cgroup(argv[j + 1]);
	if (cpus > 0)
		keep_cpus(cpus);
	if (user)
		drop_to(user);
	if (setsid() < 0 && errno != EPERM)
		die(EXIT_INTERNAL, "setsid: %s", strerror(errno));
	execvp(argv[i + 3], argv + i + 3);
	die(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC, "cannot run %s: %s", argv[i + 3], strerror(errno));
	return EXIT_INTERNAL;
}

/* --- serve: PID 1 inside ------------------------------------------------------ */

static void on_sigchld(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(child_pipe_wr, &c, 1) < 0) {
		/* The pipe is full: a wakeup is pending anyway. */
	}
	errno = saved;
}

/* Reads exactly LEN bytes; 0 on success, -1 on EOF, error or timeout. */
static int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * True when the received FD may become a command's stdio: a pipe, a socket,
 * a regular file or a character device. A directory (or an O_PATH handle
 * of one) is a way out of the sandbox's view: openat() and /proc/self/fd/N
 * reach everything below it on the host. A block device is the whole disk.
 */
static int stdio_allowed(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return 0;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISREG(st.st_mode) || S_ISCHR(st.st_mode);
}

/* Checks that PAYLOAD holds exactly COUNT NUL-terminated strings and points STRS at them. */
static int split_payload(char *payload, uint32_t length, char **strs, uint32_t count)
{
	uint32_t i = 0, at = 0;

	while (at < length && i < count) {
		char *end = memchr(payload + at, '\0', length - at);

		if (!end)
			return -1;
		strs[i++] = payload + at;
		at = (uint32_t)(end - payload) + 1;
	}
	strs[i] = NULL;
	return i == count && at == length ? 0 : -1;
}

/*
 * Every signal's disposition to SIG_DFL. The C library refuses the numbers
 * it keeps for itself (32 to 34), which can still arrive ignored from an
 * ancestor: those through the system call, with the kernel's struct
 * sigaction all zero (SIG_DFL, no flags, an empty mask, on every layout).
 */
static void default_signals(void)
{
	static const unsigned char zero[64];

	for (int sig = 1; sig < SIGNALS_MAX; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && signal(sig, SIG_DFL) == SIG_ERR)
			(void)syscall(SYS_rt_sigaction, sig, zero, NULL, (size_t)(SIGNALS_MAX - 1) / 8);
}

/*
 * In the forked child: becomes the command. Never returns. SLAVE >= 0
 * (terminal mode): the pty's slave becomes its controlling terminal and
 * stdio, in place of FDS.
 */
static void run_command(const int fds[3], int slave, char **strs, uint32_t argc, uint32_t envc)
{
	sigset_t none;
	const char *cwd = strs[0];
	char **argv = strs + 1;

	/* Every disposition back to its default, as a fresh process has it:
	 * the sandbox started from a background job, which ignores SIGINT and
	 * SIGQUIT, and an interrupt forwarded by forge-shell must work. (Not
	 * every number is a signal: those calls fail, harmlessly.) */
	sigemptyset(&none);
	default_signals();
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0)
		_exit(EXIT_CANNOT_EXEC);
	if (slave >= 0 && ioctl(slave, TIOCSCTTY, 0) != 0)
		_exit(EXIT_CANNOT_EXEC);
	for (int i = 0; i < 3; i++)
		if (dup2(slave >= 0 ? slave : fds[i], i) < 0)
			_exit(EXIT_CANNOT_EXEC);
	close_fds(fds, 3);
	if (slave > 2)
		close(slave);
	if (chdir(cwd) != 0) {
		fprintf(stderr, "%s: error: cannot change to %s inside the sandbox: %s\n", forge_progname(), cwd,
			strerror(errno));
		_exit(EXIT_CANNOT_EXEC);
	}
	for (uint32_t i = 0; i < envc; i++)
		if (strchr(argv[argc + 1 + i], '=') && putenv(argv[argc + 1 + i]) != 0)
			_exit(EXIT_CANNOT_EXEC);
	if (setenv("PWD", cwd, 1) != 0)
		_exit(EXIT_CANNOT_EXEC);
	argv[argc] = NULL;
	execvp(argv[0], argv);
	fprintf(stderr, "%s: error: %s: %s\n", forge_progname(), argv[0], strerror(errno));
	_exit(errno == ENOENT || errno == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

/* Drops the request being read on C and closes its connection. */
static void tty_close(struct conn *c);
static void tty_finish(struct conn *c);

static void conn_drop(struct conn *c)
{
	tty_close(c);
	close_fds(c->fds, c->nfds);
	c->nfds = 0;
	free(c->payload);
	c->payload = NULL;
	c->reading = 0;
	close(c->fd);
	c->fd = -1;
}

static void conn_accept(struct conn *c, int fd)
{
	c->fd = fd;
	c->pid = 0;
	c->reading = 1;
	c->got = 0;
	c->nfds = 0;
	c->payload = NULL;
	c->tty = NULL;
	if (clock_gettime(CLOCK_MONOTONIC, &c->deadline) != 0)
		die(EXIT_INTERNAL, "clock_gettime: %s", strerror(errno));
	c->deadline.tv_sec += REQUEST_TIMEOUT_SECS;
}

/* Keeps the fds of a control message: at most three, the rest closed. */
static int conn_keep_fds(struct conn *c, struct msghdr *msg)
{
	int ok = !(msg->msg_flags & MSG_CTRUNC);

	for (struct cmsghdr *m = CMSG_FIRSTHDR(msg); m; m = CMSG_NXTHDR(msg, m)) {
		if (m->cmsg_level != SOL_SOCKET || m->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((m->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int received;

			memcpy(&received, CMSG_DATA(m) + i * sizeof(int), sizeof received);
			if (c->nfds < 3)
				c->fds[c->nfds++] = received;
			else {
				close(received);
				ok = 0;
			}
		}
	}
	return ok;
}

/*
 * Terminal mode: a pty inside, its size WS; C->tty with the master and the
 * client's pipes (non-blocking from now on), and the slave in *SLAVE.
 */
static int tty_open(struct conn *c, const struct winsize *ws, int *slave)
{
	struct tty *t = calloc(1, sizeof *t);
	const char *name;
	int master = -1;

	*slave = -1;
	if (!t)
		return -1;
	t->master = t->in = t->out = -1;
	c->tty = t;
	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0)
		return -1;
	t->master = master;
	if (fcntl(master, F_SETFD, FD_CLOEXEC) != 0 || grantpt(master) != 0 || unlockpt(master) != 0 ||
		!(name = ptsname(master)))
		return -1;
	/* Opened here, before the fork: the master never sees "no slave" (EIO)
	 * before the command has it. */
	*slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*slave < 0 || ioctl(master, TIOCSWINSZ, ws) != 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		int fd = i < 2 ? c->fds[i] : master, fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
			return -1;
	}
	return 0;
}

/* The pty's size from a EXEC_FRAME_WINSIZE value. */
static struct winsize tty_size(uint32_t value)
{
	struct winsize ws;

	memset(&ws, 0, sizeof ws);
	ws.ws_row = (unsigned short)(value >> 16);
	ws.ws_col = (unsigned short)(value & 0xffffu);
	return ws;
}

/* Starts the command of C's whole request. */
static void conn_start(struct conn *c)
{
	char **strs = malloc(((size_t)c->h.argc + c->h.envc + 3) * sizeof *strs);
	int flags = fcntl(c->fd, F_GETFL), slave = -1;
	pid_t pid;

	/* The frames that follow are read whole, as before: blocking again. */
	if (!strs || flags < 0 || fcntl(c->fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
		split_payload(c->payload, c->h.length, strs, 1 + c->h.argc + c->h.envc) != 0) {
		free(strs);
		conn_drop(c);
		return;
	}
	if (c->h.flags & EXEC_FLAG_TTY) {
		uint32_t frame[2];
		struct winsize ws;

		memcpy(frame, c->payload + c->h.length, sizeof frame);
		ws = tty_size(frame[1]);
		if (frame[0] != EXEC_FRAME_WINSIZE || tty_open(c, &ws, &slave) != 0) {
			if (slave >= 0)
				close(slave);
			free(strs);
			conn_drop(c);
			return;
		}
	}
	/* The argv's terminator goes where the first env entry was: keep it. */
	memmove(strs + 2 + c->h.argc, strs + 1 + c->h.argc, ((size_t)c->h.envc + 1) * sizeof *strs);
	pid = fork();
	if (pid == 0)
		run_command(c->fds, slave, strs, c->h.argc, c->h.envc);
	free(strs);
	if (slave >= 0)
		close(slave);
	if (pid < 0) {
		conn_drop(c);
		return;
	}
	if (c->tty) {
		/* The client's input pipe and output pipe are the pty's other side. */
		c->tty->in = c->fds[0];
		c->tty->out = c->fds[1];
		close(c->fds[2]);
	} else
		close_fds(c->fds, c->nfds);
	c->nfds = 0;
	free(c->payload);
	c->payload = NULL;
	c->reading = 0;
	c->pid = pid;
	c->flags = c->h.flags;
}

/*
 * Reads what has arrived of C's request (its socket is non-blocking): the
 * header with the three stdio fds, then the payload; starts the command
 * once the request is whole and valid, drops the connection when it is not.
 */
static void conn_read(struct conn *c)
{
	if (!c->payload) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(4 * sizeof(int))];
		} control;
		struct iovec iov = { (char *)&c->h + c->got, sizeof c->h - c->got };
		struct msghdr msg;
		ssize_t n;

		memset(&msg, 0, sizeof msg);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof control.buf;
		do
			n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		while (n < 0 && errno == EINTR);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0 || !conn_keep_fds(c, &msg)) {
			conn_drop(c);
			return;
		}
		c->got += (size_t)n;
		if (c->got < sizeof c->h)
			return;
		if (c->nfds != 3 || c->h.magic != EXEC_MAGIC || c->h.argc < 1 || c->h.argc > EXEC_ARGS_MAX ||
			c->h.envc > EXEC_ARGS_MAX || c->h.length > EXEC_PAYLOAD_MAX || c->h.length < 1) {
			conn_drop(c);
			return;
		}
		for (int i = 0; i < 3; i++)
			if (!stdio_allowed(c->fds[i])) {
				conn_drop(c);
				return;
			}
		c->payload = malloc(c->h.length + ((c->h.flags & EXEC_FLAG_TTY) ? 8u : 0u));
		if (!c->payload) {
			conn_drop(c);
			return;
		}
		c->got = 0;
	}
	while (c->got < c->h.length + ((c->h.flags & EXEC_FLAG_TTY) ? 8u : 0u)) {
		ssize_t n = read(c->fd, c->payload + c->got, c->h.length + ((c->h.flags & EXEC_FLAG_TTY) ? 8u : 0u) - c->got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_drop(c);
			return;
		}
		c->got += (size_t)n;
	}
	conn_start(c);
}

/* Milliseconds until the earliest deadline of a request being read (-1: none); drops expired ones. */
static int conn_expire(struct conn *conns)
{
	struct timespec now;
	long wait = -1;

	if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
		die(EXIT_INTERNAL, "clock_gettime: %s", strerror(errno));
	for (int i = 0; i < CONNS_MAX; i++) {
		struct tty *t = conns[i].tty;
		int draining = t && t->done;

		if (!conns[i].reading && !draining)
			continue;
		const struct timespec *at = draining ? &t->deadline : &conns[i].deadline;
		long ms = (long)(at->tv_sec - now.tv_sec) * 1000 + (at->tv_nsec - now.tv_nsec) / 1000000;
		if (ms <= 0 && draining) {
			tty_finish(&conns[i]);
			continue;
		}
		if (ms <= 0) {
			conn_drop(&conns[i]);
			continue;
		}
		if (wait < 0 || ms < wait)
			wait = ms;
	}
	return (int)wait;
}

static void send_status(struct conn *c, int status)
{
	uint32_t frame[2] = { EXEC_FRAME_STATUS, (uint32_t)status };
	ssize_t n;

	do
		n = send(c->fd, frame, sizeof frame, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	close(c->fd);
	c->fd = -1;
}

/* Closes what terminal mode holds of C (the master last: that hangs the pty up). */
static void tty_close(struct conn *c)
{
	struct tty *t = c->tty;

	if (!t)
		return;
	if (t->in >= 0)
		close(t->in);
	if (t->out >= 0)
		close(t->out);
	if (t->master >= 0)
		close(t->master);
	free(t);
	c->tty = NULL;
}

/* Writes what is buffered from *OFF to *LEN to FD, as much as it takes; -1 on an error. */
static int tty_flush(int fd, const char *buf, size_t *off, size_t *len)
{
	while (*off < *len) {
		ssize_t n = write(fd, buf + *off, *len - *off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		*off += (size_t)n;
	}
	*off = *len = 0;
	return 0;
}

/* Reads what FD has into an empty BUF: 1 read, 0 nothing yet, -1 at EOF or on an error. */
static int tty_fill(int fd, char *buf, size_t *off, size_t *len)
{
	ssize_t n;

	do
		n = read(fd, buf, TTY_BUF);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n <= 0)
		return -1;
	*off = 0;
	*len = (size_t)n;
	return 1;
}

/* The command's status to C's client once the pty has given its output. */
static void tty_finish(struct conn *c)
{
	struct tty *t = c->tty;

	/* What is left goes if the pipe takes it; the status does not wait more. */
	int status = t->status;

	if (t->out >= 0 && t->tc_len > 0 && tty_flush(t->out, t->to_client, &t->tc_off, &t->tc_len) != 0)
		t->tc_len = 0;
	/* Hung up before the status goes: nothing left on the pty outlasts the command's answer. */
	tty_close(c);
	if (c->fd >= 0)
		send_status(c, status);
}

/* Moves bytes both ways between C's pty and its client's pipes, as far as they go now. */
static void tty_relay(struct conn *c)
{
	struct tty *t = c->tty;

	for (int moved = 1; moved;) {
		moved = 0;
		if (t->in >= 0 && t->tm_len == 0) {
			int r = tty_fill(t->in, t->to_master, &t->tm_off, &t->tm_len);

			if (r < 0) {
				close(t->in);
				t->in = -1;
			}
			moved |= r > 0;
		}
		if (t->tm_len > 0 && tty_flush(t->master, t->to_master, &t->tm_off, &t->tm_len) != 0)
			t->tm_len = 0;  /* the pty is gone: what was typed goes nowhere */
		if (!t->master_eof && t->tc_len == 0) {
			int r = tty_fill(t->master, t->to_client, &t->tc_off, &t->tc_len);

			/* EIO: no process holds the slave any more. */
			t->master_eof = r < 0;
			moved |= r > 0;
			if (r > 0 && t->out < 0)
				t->tc_len = 0;  /* the client's output pipe is gone: dropped */
		}
		if (t->out >= 0 && t->tc_len > 0 && tty_flush(t->out, t->to_client, &t->tc_off, &t->tc_len) != 0) {
			close(t->out);
			t->out = -1;
			t->tc_len = 0;
		}
	}
	if (t->done && t->master_eof && t->tc_len == 0)
		tty_finish(c);
}

static void reap(struct conn *conns)
{
	for (;;) {
		int st, status;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return;
		status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
		for (int i = 0; i < CONNS_MAX; i++) {
			if (conns[i].pid != pid)
				continue;
			if (WIFSIGNALED(st) && (conns[i].flags & EXEC_FLAG_SIGNAL_STATUS))
				status = 256 + WTERMSIG(st);
			if (conns[i].flags & EXEC_FLAG_KILL_AT_END)
				kill(-pid, SIGKILL);
			conns[i].pid = 0;
			if (conns[i].tty && conns[i].fd >= 0) {
				struct tty *t = conns[i].tty;

				/* The status waits for the output still in the pty. */
				t->done = 1;
				t->status = status;
				if (clock_gettime(CLOCK_MONOTONIC, &t->deadline) != 0)
					die(EXIT_INTERNAL, "clock_gettime: %s", strerror(errno));
				t->deadline.tv_nsec += TTY_DRAIN_MS * 1000000L;
				if (t->deadline.tv_nsec >= 1000000000L) {
					t->deadline.tv_sec++;
					t->deadline.tv_nsec -= 1000000000L;
				}
				tty_relay(&conns[i]);
				continue;
			}
			tty_close(&conns[i]);
			if (conns[i].fd >= 0)
				send_status(&conns[i], status);
		}
	}
}

/* A frame or EOF from a client whose command runs. */
static void client_input(struct conn *c)
{
	uint32_t frame[2];

	if (read_exact(c->fd, frame, sizeof frame) != 0) {
		/* Gone before its status: nothing of its command may outlive it
		 * (in terminal mode, the hangup reaches the rest of its session).
		 * A command already reaped (its pty still draining) has pid 0:
		 * kill(-0) would signal init's own process group. */
		if (c->pid > 0)
			kill(-c->pid, SIGKILL);
		tty_close(c);
		close(c->fd);
		c->fd = -1;
		return;
	}
	if (frame[0] == EXEC_FRAME_WINSIZE && c->tty && c->tty->master >= 0) {
		struct winsize ws = tty_size(frame[1]);

		if (ioctl(c->tty->master, TIOCSWINSZ, &ws) != 0) {
			/* The pty is going away: its size no longer matters. */
		}
		return;
	}
	if (frame[0] == EXEC_FRAME_SIGNAL && c->pid > 0 && (frame[1] == SIGINT || frame[1] == SIGTERM ||
		frame[1] == SIGHUP || frame[1] == SIGQUIT))
		kill(-c->pid, (int)frame[1]);
}

static int cmd_serve(int argc, char **argv)
{
	static struct conn conns[CONNS_MAX];
	/* Per connection its socket and, in terminal mode, 3 more. */
	static struct pollfd pfd[CONNS_MAX * 4 + 2];
	static int slot[CONNS_MAX * 4 + 2], is_tty[CONNS_MAX * 4 + 2];
	struct sigaction sa;
	int pipefd[2], listen_fd, null_fd;
	long n = -1;

	if (argc != 3 || (n = parse_number(argv[2], 0, 1023)) < 0)
		die(EXIT_USAGE, "serve takes FD, a number from 0 to 1023");
	listen_fd = (int)n;
	/* No process of the sandbox may read this one's memory or fds. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		die(EXIT_INTERNAL, "prctl: %s", strerror(errno));
	if (fcntl(listen_fd, F_SETFD, FD_CLOEXEC) != 0)
		die(EXIT_USAGE, "fd %ld is not open: %s", n, strerror(errno));
	/* Nothing bwrap or the caller left open reaches the commands. */
	close_other_fds(&n, 1);
	/* Received fds must never land on 0-2. */
	while ((null_fd = open("/dev/null", O_RDWR)) >= 0 && null_fd <= 2) {
	}
	if (null_fd < 0)
		die(EXIT_INTERNAL, "/dev/null: %s", strerror(errno));
	close(null_fd);
	if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
		die(EXIT_INTERNAL, "pipe: %s", strerror(errno));
	child_pipe_wr = pipefd[1];
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigchld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		die(EXIT_INTERNAL, "sigaction: %s", strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < CONNS_MAX; i++)
		conns[i].fd = -1;

	for (;;) {
		int nfds = 0, free_slot = -1, wait;

		wait = conn_expire(conns);
		pfd[nfds].fd = pipefd[0];
		pfd[nfds++].events = POLLIN;
		for (int i = 0; i < CONNS_MAX; i++) {
			struct tty *t = conns[i].tty;

			if (t) {
				int fd[3] = { t->in, t->master, t->out };
				short ev[3] = {
					(short)(t->tm_len == 0 ? POLLIN : 0),
					(short)((t->tm_len > 0 ? POLLOUT : 0) | (!t->master_eof && t->tc_len == 0 ? POLLIN : 0)),
					(short)(t->tc_len > 0 ? POLLOUT : 0),
				};

				for (int j = 0; j < 3; j++) {
					if (fd[j] < 0 || !ev[j])
						continue;
					slot[nfds] = i;
					is_tty[nfds] = 1;
					pfd[nfds].fd = fd[j];
					pfd[nfds++].events = ev[j];
				}
			}
			if (conns[i].fd >= 0 && (conns[i].pid > 0 || conns[i].reading)) {
				slot[nfds] = i;
				is_tty[nfds] = 0;
				pfd[nfds].fd = conns[i].fd;
				pfd[nfds++].events = POLLIN;
			} else if (conns[i].pid == 0 && conns[i].fd < 0 && free_slot < 0)
				free_slot = i;
		}
		if (free_slot >= 0) {
			pfd[nfds].fd = listen_fd;
			pfd[nfds++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)nfds, wait) < 0) {
			if (errno == EINTR)
				continue;
			die(EXIT_INTERNAL, "poll: %s", strerror(errno));
		}
		if (pfd[0].revents) {
			char drain[64];

			while (read(pipefd[0], drain, sizeof drain) > 0) {
			}
			reap(conns);
		}
		for (int k = 1; k < nfds; k++) {
			if (!pfd[k].revents)
				continue;
			if (k < nfds - (free_slot >= 0) && is_tty[k]) {
				if (conns[slot[k]].tty)
					tty_relay(&conns[slot[k]]);
			} else if (pfd[k].fd == listen_fd) {
				int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

				if (fd >= 0) {
					conn_accept(&conns[free_slot], fd);
					conn_read(&conns[free_slot]);
				}
				else if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
					warn("accept: %s", strerror(errno));
			} else if (conns[slot[k]].fd == pfd[k].fd && conns[slot[k]].reading)
				conn_read(&conns[slot[k]]);
			else if (conns[slot[k]].fd == pfd[k].fd)
				client_input(&conns[slot[k]]);
		}
	}
	return EXIT_INTERNAL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		die(EXIT_USAGE, "missing command");
	help_option(argv[1]);
	if (strcmp(argv[1], "start") == 0)
		return cmd_start(argc, argv);
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc, argv);
	die(EXIT_USAGE, "unknown command '%s'", argv[1]);
}
