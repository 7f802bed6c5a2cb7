/*
 * forge-shell — the shell a harness runs its commands through (SPEC 4.4).
 *
 * With FORGE_SANDBOX_CONTAINER set and non-empty, it becomes
 *   msb exec --quiet NAME --no-tty -w <physical cwd> -- bash ARGS...
 * and otherwise the host shell, with ARGS unchanged. Either way it is one
 * execv and no fork, so the status, signals and the terminal are those of
 * the program that replaces it. It fails closed: when msb cannot be run it
 * exits 127 and never falls back to the host shell.
 *
 * A namespace sandbox (SPEC 4.5, one with a state folder) has no msb: the
 * command goes to the exec server in it (forge-sandbox-init) over its unix
 * socket instead, with the stdio fds; see run_in_bwrap. With a terminal on
 * stdin and stdout (or --exec-tty) that is terminal mode: a pty inside,
 * this terminal raw (restored on every way out), its size forwarded.
 *
 * It is on the path of every command an agent runs, so it does the least
 * possible before the execv: no stdio unless something is wrong.
 */
#define _XOPEN_SOURCE 700  /* realpath */
#define _DEFAULT_SOURCE    /* CMSG_SPACE, CMSG_LEN */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "exec-proto.h"
#include "forge-util.h"

const char forge_help[] =
	"usage: forge-shell [SHELL-ARGUMENTS...]   e.g. forge-shell -c 'make test'\n"
	"       forge-shell --exec|--exec-kill-group|--exec-tty COMMAND [ARG...]\n"
	"Run a shell command in the sandbox named by FORGE_SANDBOX_CONTAINER (through\n"
	"msb exec, or the exec socket of a namespace sandbox), or in the host shell\n"
	"when it is unset or empty, or \"host\". With FORGE_SANDBOX_REQUIRED=1 an unset\n"
	"or empty one runs nothing (127). The arguments are\n"
	"passed to bash (in the sandbox) or the host shell unchanged; --help and\n"
	"--version are forge-shell's own only as the sole argument (-h is bash's).\n"
	"--exec runs COMMAND itself (no bash) in a namespace sandbox; --exec-kill-group\n"
	"also kills what COMMAND left running in its process group when it ends;\n"
	"--exec-tty runs it on a terminal inside (terminal mode, as when stdin and\n"
	"stdout are terminals).\n";

/* SPEC 4.4: whatever stops msb from running, the answer is 127 (EXIT_NOT_FOUND), not the host. */

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define SANDBOX_NAME_MAX 128

/* Terminal mode: the terminal on fd 0 is raw while this is set; the mode to restore. */
static int tty_raw;
static struct termios tty_saved;

/* The terminal as it was before terminal mode made it raw (also at exit: die() exits). */
static void tty_restore(void)
{
	if (tty_raw && tcsetattr(0, TCSADRAIN, &tty_saved) == 0)
		tty_raw = 0;
}

static void *xmalloc(size_t size)
{
	void *p = malloc(size);

	if (!p)
		die(EXIT_NOT_FOUND, "out of memory; refusing to run");
	return p;
}

static int is_executable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/*
 * Finds NAME like execvp would, without trying to execute anything, so a
 * missing program is known before the execv, with one difference: empty and
 * relative PATH elements (the current directory, which may be a hostile work
 * tree) are skipped, so a ./msb planted there never runs. The shell library
 * applies the same rule (forge_find_program in lib-sh/forge-core.sh; both
 * are tested with the same cases). NULL when not found.
 */
static char *find_program(const char *name)
{
	const char *path = getenv("PATH"), *dir, *end;
	size_t name_len = strlen(name);
	char *candidate;

	if (strchr(name, '/')) {
		candidate = xmalloc(name_len + 1);
		memcpy(candidate, name, name_len + 1);
		return candidate;
	}
	if (!path)
		path = DEFAULT_PATH;
	for (dir = path;; dir = end + 1) {
		size_t dir_len;

		end = strchr(dir, ':');
		if (!end)
			end = dir + strlen(dir);
		dir_len = (size_t)(end - dir);
		if (dir_len > 0 && dir[0] == '/') {
			candidate = xmalloc(dir_len + name_len + 2);
			memcpy(candidate, dir, dir_len);
			candidate[dir_len] = '/';
			memcpy(candidate + dir_len + 1, name, name_len + 1);
			if (is_executable_file(candidate))
				return candidate;
			free(candidate);
		}
		if (*end == '\0')
			return NULL;
	}
}

/* msb's name grammar: 1-128 bytes, an alphanumeric first, then [A-Za-z0-9._-]. */
static int is_sandbox_name(const char *name)
{
	size_t i;

	for (i = 0; name[i]; i++) {
		unsigned char c = (unsigned char)name[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');

		if (i >= SANDBOX_NAME_MAX || !(alnum || (i > 0 && (c == '.' || c == '_' || c == '-'))))
			return 0;
	}
	return i > 0;
}

static char *physical_cwd(void)
{
	size_t size = 4096;

	for (;;) {
		char *buf = xmalloc(size);

		if (getcwd(buf, size))
			return buf;
		free(buf);
		if (errno != ERANGE || size > (size_t)-1 / 2)
			die(EXIT_NOT_FOUND, "cannot run msb (cannot determine the working directory: %s); "
				"refusing to run on the host", strerror(errno));
		size *= 2;
	}
}

static void run_in_sandbox(const char *name, int argc, char **argv, int tty)
{
	const char *msb = getenv("FORGE_MSB");
	char **args, *path;
	int i, n = 0;

	if (!msb || !*msb)
		msb = "msb";
	else if (msb[0] != '/')
		die(EXIT_NOT_FOUND, "cannot run msb (FORGE_MSB=%s is not an absolute path); "
			"refusing to run on the host", msb);
	path = find_program(msb);
	if (!path)
		die(EXIT_NOT_FOUND, "cannot run msb (%s not found on PATH); refusing to run on the host", msb);
	if (access(path, X_OK) != 0)
		die(EXIT_NOT_FOUND, "cannot run msb (%s: %s); refusing to run on the host", path,
			strerror(errno));
	if (!is_sandbox_name(name))
		die(EXIT_NOT_FOUND, "FORGE_SANDBOX_CONTAINER is not a valid sandbox name: '%s'; "
			"refusing to run on the host", name);

	args = xmalloc(((size_t)argc + 9) * sizeof *args);
	args[n++] = path;
	args[n++] = "exec";
	args[n++] = "--quiet";
	args[n++] = (char *)name;
	args[n++] = tty ? "-t" : "--no-tty";
	args[n++] = "-w";
	args[n++] = physical_cwd();
	args[n++] = "--";
	args[n++] = "bash";
	for (i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(path, args);
	die(EXIT_NOT_FOUND, "cannot run msb (%s: %s); refusing to run on the host", path,
		strerror(errno));
}

/*
 * Whether PATH is this very program (also through a symlink or a hard link).
 * Without /proc, a file whose resolved name is forge-shell counts as itself.
 */
static int is_self(const char *path)
{
	struct stat self, st;
	char *real;
	int same;

	if (stat(path, &st) != 0)
		return 0;
	if (stat("/proc/self/exe", &self) == 0)
		return st.st_dev == self.st_dev && st.st_ino == self.st_ino;
	real = realpath(path, NULL);
	if (!real)
		return 1;
	same = strcmp(strrchr(real, '/') + 1, forge_progname()) == 0;
	free(real);
	return same;
}

static void run_on_host(char **argv)
{
	const char *chosen = getenv("FORGE_HOST_SHELL"), *shell = getenv("SHELL");
	const char *base;
	char *path;

	if (chosen && *chosen) {
		path = find_program(chosen);
		if (!path)
			die(EXIT_NOT_FOUND, "cannot run the host shell (FORGE_HOST_SHELL=%s: not found on PATH)",
				chosen);
		if (is_self(path))
			die(EXIT_NOT_FOUND, "FORGE_HOST_SHELL=%s is forge-shell itself; refusing to exec it in a loop",
				chosen);
	} else if (shell && shell[0] == '/' && is_executable_file(shell) && !is_self(shell))
		path = (char *)shell;
	else if (access("/bin/bash", X_OK) == 0)
		path = "/bin/bash";
	else
		path = "/bin/sh";

	/* A login shell ("-forge-shell") stays one: "-bash". Else $0 is the shell's path. */
	if (argv[0] && argv[0][0] == '-') {
		base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		argv[0] = xmalloc(strlen(base) + 2);
		argv[0][0] = '-';
		strcpy(argv[0] + 1, base);
	} else
		argv[0] = path;
	execv(path, argv);
	die(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC, "cannot run the host shell (%s: %s)",
		path, strerror(errno));
}

/* --- the namespace backend (SPEC 4.5): forge-sandbox-init's exec socket ---
 * The wire protocol is documented in helpers/forge-sandbox-init.c. */

#define BWRAP_ENV_FILE_MAX 65536

/*
 * Reads what FD holds, at most BWRAP_ENV_FILE_MAX bytes, into BUF (which has
 * room for one more, the terminating NUL), closes FD and returns the length.
 * A read error ends the text where it happened.
 */
static size_t read_small(int fd, char *buf)
{
	size_t got = 0;

	for (;;) {
		ssize_t r = read(fd, buf + got, BWRAP_ENV_FILE_MAX - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}


/* The connection a signal handler forwards signals over. */
static int bwrap_sock = -1;
/* Terminal mode: the terminal whose size is forwarded (-1: none). */
static int bwrap_tty_fd = -1;

/* "cannot run NAME in its sandbox (WHY: ERR); refusing to run on the host", 127. */
static void bwrap_fail(const char *name, const char *why, const char *detail)
{
	die(EXIT_NOT_FOUND, "cannot run in the sandbox %s (%s%s%s); refusing to run on the host", name,
		why ? why : "", detail ? ": " : "", detail ? detail : "");
}

/*
 * The base of forge's state, by forge_xdg_dir's rule (lib-sh/forge-core.sh):
 * $XDG_STATE_HOME when it is absolute (a relative one is ignored), else
 * $HOME/.local/state when HOME is absolute, else the passwd entry's home of
 * the effective user, so a harness with its own or no HOME still finds the
 * sandbox; NULL when there is no absolute home at all.
 */
static char *state_base(void)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	const char *suffix = "/.local/state";
	size_t len;
	char *base;

	if (xdg && xdg[0] == '/') {
		home = xdg;
		suffix = "";
	} else if (!home || home[0] != '/') {
		struct passwd *pw = getpwuid(geteuid());

		home = pw ? pw->pw_dir : NULL;
		if (!home || home[0] != '/')
			return NULL;
	}
	len = strlen(home);
	/* "${HOME%/}": one trailing slash goes, as in the shell. */
	if (*suffix && len > 1 && home[len - 1] == '/')
		len--;
	base = xmalloc(len + strlen(suffix) + 1);
	memcpy(base, home, len);
	strcpy(base + len, suffix);
	return base;
}

/* BASE/forge/KIND/NAME. */
static char *state_path(const char *base, const char *kind, const char *name)
{
	size_t len = strlen(base) + strlen("/forge//") + strlen(kind) + strlen(name) + 1;
	char *path = xmalloc(len);

	snprintf(path, len, "%s/forge/%s/%s", base, kind, name);
	return path;
}

static int is_real_dir(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Whether forge's registry (BASE/forge/sandboxes/NAME, a forge-state file)
 * records NAME as a namespace sandbox: a line "backend=bwrap".
 */
static int registry_says_bwrap(const char *base, const char *name)
{
	char buf[BWRAP_ENV_FILE_MAX + 1], *path = state_path(base, "sandboxes", name), *line, *next;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), found = 0;

	free(path);
	if (fd < 0)
		return 0;
	(void)read_small(fd, buf);
	for (line = buf; line && !found; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		found = strcmp(line, "backend=bwrap") == 0;
	}
	return found;
}

static void bwrap_send_all(const char *name, int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			bwrap_fail(name, "cannot send the command", strerror(n < 0 ? errno : EIO));
		buf += n;
		len -= (size_t)n;
	}
}

static void bwrap_forward(int sig)
{
	int saved = errno;
	uint32_t frame[2] = { EXEC_FRAME_SIGNAL, (uint32_t)sig };

	if (send(bwrap_sock, frame, sizeof frame, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* The server is gone: the status read below says so. */
	}
	errno = saved;
}

/* A FRAME_WINSIZE value: the terminal's size, or 24x80 without one. */
static uint32_t bwrap_winsize(void)
{
	struct winsize ws;

	if (bwrap_tty_fd < 0 || ioctl(bwrap_tty_fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0)
		return 24u << 16 | 80u;
	return (uint32_t)ws.ws_row << 16 | ws.ws_col;
}

/* SIGWINCH: the new size goes to the pty inside, whose foreground job gets its SIGWINCH. */
static void bwrap_winch(int sig)
{
	int saved = errno;
	uint32_t frame[2] = { EXEC_FRAME_WINSIZE, bwrap_winsize() };

	(void)sig;
	if (send(bwrap_sock, frame, sizeof frame, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* The server is gone: the status read below says so. */
	}
	errno = saved;
}

/* Connects to DIR/exec.sock (through /proc when the path is too long for sun_path). */
static int bwrap_connect(const char *name, const char *dir)
{
	struct sockaddr_un addr;
	int fd, dirfd = -1, rc;

	memset(&addr, 0, sizeof addr);
	addr.sun_family = AF_UNIX;
	if (strlen(dir) + strlen("/exec.sock") < sizeof addr.sun_path)
		snprintf(addr.sun_path, sizeof addr.sun_path, "%s/exec.sock", dir);
	else {
		dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (dirfd < 0)
			bwrap_fail(name, dir, strerror(errno));
		snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/exec.sock", dirfd);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		bwrap_fail(name, "socket", strerror(errno));
	do
		rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
	while (rc != 0 && errno == EINTR);
	if (rc != 0)
		die(EXIT_NOT_FOUND, "the namespace sandbox %s is not running (its exec socket in %s does not answer: %s); forge-sandbox up starts it; refusing to run on the host", name, dir, strerror(errno));
	if (dirfd >= 0)
		close(dirfd);
	return fd;
}

/*
 * Appends the NAME=VALUE entries of the environment names listed in
 * DIR/env (one per line, written by forge-sandbox up) that are set here.
 */
static size_t bwrap_env(const char *dir, char ***entries)
{
	char path[4096], buf[BWRAP_ENV_FILE_MAX + 1], *line, *next;
	size_t n = 0, cap = 16;
	int fd;

	*entries = xmalloc(cap * sizeof **entries);
	if ((size_t)snprintf(path, sizeof path, "%s/env", dir) >= sizeof path)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return 0;
	(void)read_small(fd, buf);
	for (line = buf; line && *line; line = next) {
		const char *value;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!*line || strchr(line, '=') || !(value = getenv(line)))
			continue;
		if (n + 1 >= cap) {
			char **grown = xmalloc(cap * 2 * sizeof *grown);

			memcpy(grown, *entries, n * sizeof *grown);
			free(*entries);
			*entries = grown;
			cap *= 2;
		}
		(*entries)[n] = xmalloc(strlen(line) + strlen(value) + 2);
		sprintf((*entries)[n++], "%s=%s", line, value);
	}
	return n;
}

/* Makes sure fds 0-2 are open, so they can be passed (/dev/null where not). */
static void bwrap_stdio(const char *name)
{
	static const char *const which[] = { "stdin", "stdout", "stderr" };
	struct stat st;

	for (int i = 0; i < 3; i++) {
		if (fcntl(i, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int fd = open("/dev/null", O_RDWR);

		if (fd != i)
			bwrap_fail(name, "cannot open /dev/null", strerror(errno));
	}
	/* A directory handed in would open the host's tree below it to the
	 * sandbox (the exec server refuses it too); so would a block device. */
	for (int i = 0; i < 3; i++) {
		if (fstat(i, &st) != 0)
			bwrap_fail(name, "fstat", strerror(errno));
		if (S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISLNK(st.st_mode))
			bwrap_fail(name, which[i], "a directory or block device never goes into the sandbox");
	}
}

/*
 * A terminal never goes into the sandbox (SPEC 4.5: a process left running
 * there could read what is typed later, or push input with TIOCSTI): each
 * of fds 0-2 that is a terminal is replaced by a pipe, relayed here.
 */
struct bwrap_relay {
	int from, to;  /* -1 once done */
};

static void bwrap_relay_setup(const char *name, int fds[3], struct bwrap_relay relay[3])
{
	for (int i = 0; i < 3; i++) {
		int p[2];

		relay[i].from = relay[i].to = -1;
		if (!isatty(i))
			continue;
		if (pipe(p) != 0 || fcntl(p[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(p[1], F_SETFD, FD_CLOEXEC) != 0)
			bwrap_fail(name, "pipe", strerror(errno));
		if (i == 0) {
			fds[0] = p[0];
			relay[0].from = 0;
			relay[0].to = p[1];
		} else {
			fds[i] = p[1];
			relay[i].from = p[0];
			relay[i].to = i;
		}
	}
}

/*
 * Terminal mode: the command's stdin and stdout are two new pipes, relayed
 * here from fd 0 and to fd 1 (the pty inside merges stderr into stdout).
 */
static void bwrap_tty_setup(const char *name, int fds[3], struct bwrap_relay relay[3])
{
	int in[2], out[2];

	if (pipe(in) != 0 || pipe(out) != 0)
		bwrap_fail(name, "pipe", strerror(errno));
	for (int i = 0; i < 2; i++)
		if (fcntl(in[i], F_SETFD, FD_CLOEXEC) != 0 || fcntl(out[i], F_SETFD, FD_CLOEXEC) != 0)
			bwrap_fail(name, "fcntl", strerror(errno));
	fds[0] = in[0];
	fds[1] = fds[2] = out[1];
	relay[0].from = 0;
	relay[0].to = in[1];
	relay[1].from = out[0];
	relay[1].to = 1;
	relay[2].from = relay[2].to = -1;
	for (int i = 0; i < 3 && bwrap_tty_fd < 0; i++)
		if (isatty(i))
			bwrap_tty_fd = i;
}

/*
 * Terminal mode: the terminal on fd 0 goes raw, so every key (Ctrl-C, Ctrl-Z
 * included) is a byte for the pty inside, whose line discipline makes the
 * signals for the foreground job there. tty_restore undoes it.
 */
static void tty_make_raw(const char *name)
{
	struct termios raw;

	if (!isatty(0))
		return;
	if (tcgetattr(0, &tty_saved) != 0)
		bwrap_fail(name, "tcgetattr", strerror(errno));
	raw = tty_saved;
	raw.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
	raw.c_oflag &= ~(tcflag_t)OPOST;
	raw.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
	raw.c_cflag &= ~(tcflag_t)(CSIZE | PARENB);
	raw.c_cflag |= CS8;
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	tty_raw = 1;
	if (atexit(tty_restore) != 0)
		bwrap_fail(name, "atexit", "cannot register the terminal's restore");
	if (tcsetattr(0, TCSADRAIN, &raw) != 0)
		bwrap_fail(name, "tcsetattr", strerror(errno));
}

/* Copies what FROM has (at most one read) to TO: 1 copied, 2 nothing to
 * read yet (non-blocking), 0 at EOF or on an error. */
static int bwrap_relay_once(struct bwrap_relay *r)
{
	char buf[4096];
	ssize_t n, w;
	size_t done = 0;

	do
		n = read(r->from, buf, sizeof buf);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 2;
	if (n <= 0)
		return 0;
	while (done < (size_t)n) {
		w = write(r->to, buf + done, (size_t)n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 0;
		done += (size_t)w;
	}
	return 1;
}

/*
 * Waits for the status frame on SOCK, relaying the terminal meanwhile;
 * returns 0 with FRAME filled, -1 when the connection broke first.
 */
static int bwrap_wait(int sock, uint32_t frame[2], struct bwrap_relay relay[3])
{
	size_t got = 0;

	while (got < 2 * sizeof(uint32_t)) {
		struct pollfd pfd[4];
		int map[4], n = 0, rc;

		pfd[n].fd = sock;
		pfd[n].events = POLLIN;
		map[n++] = -1;
		for (int i = 0; i < 3; i++) {
			if (relay[i].from < 0)
				continue;
			pfd[n].fd = relay[i].from;
			pfd[n].events = POLLIN;
			map[n++] = i;
		}
		rc = poll(pfd, (nfds_t)n, -1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -1;
		for (int k = 1; k < n; k++) {
			struct bwrap_relay *r = &relay[map[k]];

			if (!pfd[k].revents || bwrap_relay_once(r))
				continue;
			/* Done: stdin's end closes, so the command sees EOF. */
			if (map[k] == 0)
				close(r->to);
			else
				close(r->from);
			r->from = r->to = -1;
		}
		if (pfd[0].revents) {
			ssize_t m = recv(sock, (char *)frame + got, 2 * sizeof(uint32_t) - got, 0);

			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				return -1;
			got += (size_t)m;
		}
	}
	/* What the command wrote before it ended; not what it left running writes later. */
	for (int i = 1; i < 3; i++) {
		if (relay[i].from < 0 || fcntl(relay[i].from, F_SETFL, O_NONBLOCK) != 0)
			continue;
		while (bwrap_relay_once(&relay[i]) == 1) {
		}
	}
	return 0;
}

/*
 * The command died by signal SIG: so does forge-shell, as bash and GNU
 * timeout do, with the default disposition and no core file of its own, so
 * the harness sees the signal (Node: signal 'SIGTERM'; Python: -15), not
 * 128 + SIG. A signal whose default does not kill leaves 128 + SIG.
 */
static void die_by_signal(int sig)
{
	struct rlimit no_core = { 0, 0 };
	struct sigaction sa;
	sigset_t set;

	fflush(NULL);
	tty_restore();
	if (setrlimit(RLIMIT_CORE, &no_core) != 0) {
		/* A core file of forge-shell at worst; the signal matters more. */
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	sigaddset(&set, sig);
	if (sigaction(sig, &sa, NULL) != 0) {
		/* SIGKILL takes no disposition, and needs none. */
	}
	if (sigprocmask(SIG_UNBLOCK, &set, NULL) == 0)
		raise(sig);
	exit(128 + sig);
}

/*
 * Runs ARGV (ARGC strings) in the namespace sandbox NAME whose state folder
 * is DIR, through its exec server, and exits with the command's status.
 */
static void run_in_bwrap(const char *name, const char *dir, int argc, char **argv, uint32_t flags)
{
	static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct exec_header header;
	uint32_t frame[2];
	int fds[3] = { 0, 1, 2 };
	struct bwrap_relay relay[3];
	char *cwd, **env, *payload, *p;
	size_t envc, length, i;
	struct sigaction sa;
	sigset_t block, old;
	ssize_t n;

	if ((uint32_t)argc > EXEC_ARGS_MAX || argc < 1)
		bwrap_fail(name, "too many arguments", NULL);
	bwrap_stdio(name);
	if (flags & EXEC_FLAG_TTY)
		bwrap_tty_setup(name, fds, relay);
	else
		bwrap_relay_setup(name, fds, relay);
	cwd = physical_cwd();
	envc = bwrap_env(dir, &env);
	length = strlen(cwd) + 1;
	for (i = 0; i < (size_t)argc; i++)
		length += strlen(argv[i]) + 1;
	for (i = 0; i < envc; i++)
		length += strlen(env[i]) + 1;
	if (length > EXEC_PAYLOAD_MAX || envc > EXEC_ARGS_MAX)
		bwrap_fail(name, "the command and its environment are too long", NULL);
	p = payload = xmalloc(length);
	p = stpcpy(p, cwd) + 1;
	for (i = 0; i < (size_t)argc; i++)
		p = stpcpy(p, argv[i]) + 1;
	for (i = 0; i < envc; i++) {
		p = stpcpy(p, env[i]) + 1;
		free(env[i]);
	}
	free(env);
	free(cwd);

	bwrap_sock = bwrap_connect(name, dir);
	/* No signal is forwarded before the request is whole. */
	sigemptyset(&block);
	for (i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		sigaddset(&block, forwarded[i]);
	sigaddset(&block, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &block, &old) != 0)
		bwrap_fail(name, "sigprocmask", strerror(errno));
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = bwrap_forward;
	sa.sa_flags = SA_RESTART;
	/* One frame at a time: no handler interrupts another's send. */
	sa.sa_mask = block;
	for (i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++)
		if (sigaction(forwarded[i], &sa, NULL) != 0)
			bwrap_fail(name, "sigaction", strerror(errno));
	if (flags & EXEC_FLAG_TTY) {
		sa.sa_handler = bwrap_winch;
		if (sigaction(SIGWINCH, &sa, NULL) != 0)
			bwrap_fail(name, "sigaction", strerror(errno));
		/* A terminal that went away is a failed write, not a silent death raw. */
		sa.sa_handler = SIG_IGN;
		if (sigaction(SIGPIPE, &sa, NULL) != 0)
			bwrap_fail(name, "sigaction", strerror(errno));
	}

	header.magic = EXEC_MAGIC;
	header.flags = flags | EXEC_FLAG_SIGNAL_STATUS;
	header.argc = (uint32_t)argc;
	header.envc = (uint32_t)envc;
	header.length = (uint32_t)length;
	if ((n = exec_send_header(bwrap_sock, &header, fds)) < 0)
		bwrap_fail(name, "cannot send the command", strerror(errno));
	bwrap_send_all(name, bwrap_sock, (const char *)&header + n, sizeof header - (size_t)n);
	bwrap_send_all(name, bwrap_sock, payload, length);
	free(payload);
	if (flags & EXEC_FLAG_TTY) {
		/* The size the pty starts with, part of the request. */
		frame[0] = EXEC_FRAME_WINSIZE;
		frame[1] = bwrap_winsize();
		bwrap_send_all(name, bwrap_sock, (const char *)frame, sizeof frame);
		tty_make_raw(name);
	}
	if (sigprocmask(SIG_SETMASK, &old, NULL) != 0)
		bwrap_fail(name, "sigprocmask", strerror(errno));

	/* The sandbox has its own copies of the relayed pipes' ends now. */
	for (i = 0; i < 3; i++)
		if (fds[i] != (int)i && (i == 0 || fds[i] != fds[i - 1]))
			close(fds[i]);
	if (bwrap_wait(bwrap_sock, frame, relay) != 0)
		die(EXIT_NOT_FOUND, "lost the connection to the sandbox %s before the command's status came",
			name);
	if (frame[0] == EXEC_FRAME_STATUS && frame[1] > 256 && frame[1] < 256 + 65)
		die_by_signal((int)(frame[1] - 256));
	if (frame[0] != EXEC_FRAME_STATUS || frame[1] > 255)
		die(EXIT_NOT_FOUND, "the sandbox %s sent an invalid answer", name);
	tty_restore();
	exit((int)frame[1]);
}

/*
 * Which backend NAME is, and where its state folder is. A namespace sandbox
 * is named so by what `forge-sandbox env` exports (FORGE_SANDBOX_BACKEND=bwrap,
 * FORGE_SANDBOX_STATE=its state folder), by its state folder, or by forge's
 * registry (backend=bwrap); FORGE_SANDBOX_BACKEND=msb, or none of these,
 * is an msb sandbox (NULL). A namespace sandbox that is expected but not
 * there is 127 here: its name never goes to msb, whose "not found" an agent
 * would read as a failed command.
 */
static char *namespace_state(const char *name)
{
	const char *backend = getenv("FORGE_SANDBOX_BACKEND"), *state = getenv("FORGE_SANDBOX_STATE");
	const char *slash;
	char *base, *dir;
	int expected = 0;

	if (backend && *backend && strcmp(backend, "bwrap") != 0 && strcmp(backend, "msb") != 0)
		die(EXIT_NOT_FOUND, "FORGE_SANDBOX_BACKEND=%s is neither bwrap nor msb; refusing to run on the host", backend);
	if (state && *state) {
		slash = strrchr(state, '/');
		if (state[0] != '/' || strcmp(slash + 1, name) != 0)
			die(EXIT_NOT_FOUND, "FORGE_SANDBOX_STATE=%s is not the absolute state folder of %s; refusing to run on the host", state, name);
		if (backend && strcmp(backend, "msb") == 0)
			die(EXIT_NOT_FOUND, "FORGE_SANDBOX_BACKEND=msb with FORGE_SANDBOX_STATE=%s (a namespace sandbox's); refusing to run on the host", state);
		dir = xmalloc(strlen(state) + 1);
		strcpy(dir, state);
		expected = 1;
	} else {
		if (backend && strcmp(backend, "msb") == 0)
			return NULL;
		base = state_base();
		if (!base) {
			if (backend && *backend)
				die(EXIT_NOT_FOUND, "cannot find the state folder of the namespace sandbox %s (no absolute XDG_STATE_HOME or HOME, and no home in the passwd entry); refusing to run on the host", name);
			return NULL;
		}
		dir = state_path(base, "bwrap", name);
		expected = (backend && *backend) || registry_says_bwrap(base, name);
		free(base);
	}
	if (is_real_dir(dir))
		return dir;
	if (expected)
		die(EXIT_NOT_FOUND, "the namespace sandbox %s is not there (no state folder %s): removed? forge-sandbox up in its worktree starts it; refusing to run on the host", name, dir);
	free(dir);
	return NULL;
}

/*
 * A namespace sandbox goes to its exec socket; any other to msb.
 * "--exec[-kill-group] COMMAND..." runs COMMAND itself (forge-sandbox exec).
 */
static void route_to_sandbox(const char *name, int argc, char **argv)
{
	uint32_t flags = 0;
	char *dir, **args;
	int exec_mode = argc >= 3 && (strcmp(argv[1], "--exec") == 0 || strcmp(argv[1], "--exec-kill-group") == 0 ||
		strcmp(argv[1], "--exec-tty") == 0);
	/* Terminal mode (SPEC 4.4): a terminal on both ends; output to a pipe or
	 * a file stays byte-exact (no pty's \r\n). */
	int tty = exec_mode ? strcmp(argv[1], "--exec-tty") == 0 : isatty(0) && isatty(1);
	int login = argv[0][0] == '-', n = 1;

	if (!is_sandbox_name(name))
		die(EXIT_NOT_FOUND, "FORGE_SANDBOX_CONTAINER is not a valid sandbox name: '%s'; "
			"refusing to run on the host", name);
	dir = namespace_state(name);
	if (!dir) {
		if (exec_mode)
			die(EXIT_NOT_FOUND, "--exec needs a namespace sandbox; %s has no state folder; "
				"refusing to run on the host", name);
		run_in_sandbox(name, argc, argv, tty);
	}
	if (tty)
		flags |= EXEC_FLAG_TTY;
	if (exec_mode) {
		if (strcmp(argv[1], "--exec-kill-group") == 0)
			flags |= EXEC_FLAG_KILL_AT_END;
		run_in_bwrap(name, dir, argc - 2, argv + 2, flags);
	}
	/* A login shell ("-forge-shell", as tmux starts its default-shell) is one inside. */
	args = xmalloc(((size_t)argc + 2) * sizeof *args);
	args[0] = "bash";
	if (login)
		args[n++] = "-l";
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	run_in_bwrap(name, dir, n, args, flags);
}

int main(int argc, char **argv)
{
	const char *name = getenv("FORGE_SANDBOX_CONTAINER"), *required = getenv("FORGE_SANDBOX_REQUIRED");

	/* Names in messages come from the environment: shown escaped. */
	forge_escape_messages = 1;
	/*
	 * A shell shim receives shell arguments: only a lone --help/--version is
	 * ours; -h is the shell's (SPEC 4.4).
	 */
	if (argc == 2 && strcmp(argv[1], "-h") != 0)
		help_option(argv[1]);
	if (argc < 1 || !argv[0]) {
		static char *no_args[] = { "forge-shell", NULL };

		argc = 1;
		argv = no_args;
	}
	/* "host" is the one way to the host shell in required mode (SPEC 4.4). */
	if (name && strcmp(name, "host") == 0)
		run_on_host(argv);
	if (name && *name)
		route_to_sandbox(name, argc, argv);
	if (required && *required && strcmp(required, "0") != 0) {
		if (strcmp(required, "1") != 0)
			die(EXIT_NOT_FOUND, "FORGE_SANDBOX_REQUIRED=%s is neither 1 nor 0; refusing to run on the host", required);
		die(EXIT_NOT_FOUND, "no sandbox for this session; refusing to run on the host");
	}
	run_on_host(argv);
	return EXIT_NOT_FOUND;
}
