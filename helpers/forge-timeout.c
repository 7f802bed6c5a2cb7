/*
 * forge-timeout: run a command in its own process group with a time limit.
 *
 * The parent blocks the signals it cares about, forks, and supervises the
 * child from one poll() loop: signal handlers only write the signal number to
 * a self-pipe, so a signal can never be lost between "check" and "sleep", and
 * deadlines come from CLOCK_MONOTONIC so a clock change cannot stretch them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "forge-util.h"

const char forge_help[] =
	"usage: forge-timeout [-k GRACE] SECS COMMAND [ARG...]\n"
	"Run COMMAND in its own process group. After SECS seconds send TERM to the\n"
	"group, after GRACE more seconds KILL. SECS 0 means no time limit.\n"
	"SECS and GRACE: 0, or a decimal from 0.001 to below 1000000000.\n"
	"When COMMAND exits, what it left running in the group gets TERM, then KILL\n"
	"after GRACE. Exit 124 on timeout, else COMMAND's status (128+n if signal n\n"
	"killed it).\n"
	"\n"
	"  -k GRACE   seconds between TERM and KILL (default 5)\n"
	"  -h, --help show this help\n"
	"  --version  show the version\n";

enum { EXIT_TIMED_OUT = 124 };

#define NSEC_PER_SEC 1000000000LL
#define NSEC_PER_MSEC 1000000LL
#define NO_DEADLINE LLONG_MAX
#define DEFAULT_GRACE (5 * NSEC_PER_SEC)
/* How often to look for group members we get no SIGCHLD for. */
#define GROUP_POLL_MS 50

/* Write end of the self-pipe: the only thing a signal handler touches. */
static int signal_pipe_wr = -1;

static const int forwarded_signals[] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };

/* How the child reports a failure before exec: which stage, and errno. */
struct child_failure {
	int at_exec;
	int err;
};

/* The child keeps running without a supervisor unless we take it down too. */
static void give_up(pid_t group, const char *what)
{
	int err = errno;

	kill(-group, SIGKILL);
	die(EXIT_INTERNAL, "%s: %s", what, strerror(err));
}

#define MAX_WHOLE_SECONDS 999999999LL
#define MIN_NSEC NSEC_PER_MSEC

/*
 * A time limit: 0, or a plain decimal number of seconds ("5", "0.5", ".5",
 * "5.") from 0.001 to less than 1000000000, in nanoseconds.  forge-verify
 * validates --timeout and its configuration by the same rule (SPEC 5.3), so
 * a limit it accepts is never a usage error here.  Digits past the
 * nanosecond round up, so an accepted limit never turns into 0, which means
 * "no limit".
 */
static int parse_duration(const char *text, long long *nsec)
{
	long long whole = 0, frac = 0;
	int digits = 0, frac_digits = 0, round_up = 0;
	const char *p = text;

	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		whole = whole * 10 + (*p - '0');
		if (whole > MAX_WHOLE_SECONDS)
			return -1;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++) {
			if (frac_digits < 9) {
				frac = frac * 10 + (*p - '0');
				frac_digits++;
			} else if (*p != '0') {
				round_up = 1;
			}
		}
	}
	if (digits == 0 || *p != '\0')
		return -1;
	for (; frac_digits < 9; frac_digits++)
		frac *= 10;
	/* Checked before rounding: 0.0009999999999 is below 0.001. */
	if (whole == 0 && (frac != 0 || round_up) && frac < MIN_NSEC)
		return -1;
	*nsec = whole * NSEC_PER_SEC + frac + round_up;
	return 0;
}

static long long add_saturating(long long a, long long b)
{
	return a > LLONG_MAX - b ? LLONG_MAX : a + b;
}

static long long monotonic_now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		return -1;
	return (long long)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* Milliseconds for poll(), rounded up so that we never wake up early. */
static int poll_timeout(long long deadline, long long now)
{
	long long left, ms;

	if (deadline == NO_DEADLINE)
		return -1;
	left = deadline - now;
	if (left <= 0)
		return 0;
	ms = left / NSEC_PER_MSEC + (left % NSEC_PER_MSEC != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void make_pipe(int fds[2], int nonblocking)
{
	int i;

	if (pipe(fds) == -1)
		die(EXIT_INTERNAL, "cannot create pipe: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		if (fcntl(fds[i], F_SETFD, FD_CLOEXEC) == -1 ||
		    (nonblocking && fcntl(fds[i], F_SETFL, O_NONBLOCK) == -1))
			die(EXIT_INTERNAL, "cannot set up pipe: %s", strerror(errno));
	}
}

static void on_signal(int sig)
{
	int saved_errno = errno;
	unsigned char byte = (unsigned char)sig;
	/* A full pipe already holds enough wake-ups; nothing to do on failure. */
	ssize_t written = write(signal_pipe_wr, &byte, 1);

	(void)written;
	errno = saved_errno;
}

static int set_handlers(void (*handler)(int))
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
		if (sigaction(forwarded_signals[i], &sa, NULL) == -1)
			return -1;
	sa.sa_flags = SA_NOCLDSTOP;
	return sigaction(SIGCHLD, &sa, NULL);
}

static void handled_signals(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < sizeof forwarded_signals / sizeof forwarded_signals[0]; i++)
		sigaddset(set, forwarded_signals[i]);
	sigaddset(set, SIGCHLD);
}

/*
 * execvp, without its failed execve per PATH element before the one that
 * holds COMMAND: the file is found with stat first and exec'd once, argv[0]
 * unchanged.  Anything unusual (no such file anywhere, a file exec refuses,
 * a script without #!) goes to execvp itself, so errors and the fallback to
 * sh are exactly execvp's.  Returns only on failure, as execvp does.
 */
static void exec_command(char **argv)
{
	const char *path = getenv("PATH"), *dir, *end;
	char file[PATH_MAX];
	struct stat st;
	size_t dir_len, name_len = strlen(argv[0]);

	if (strchr(argv[0], '/') || !path || name_len == 0)
		goto fallback;
	for (dir = path;; dir = end + 1) {
		end = strchr(dir, ':');
		if (!end)
			end = dir + strlen(dir);
		dir_len = (size_t)(end - dir);
		if (dir_len == 0) { /* an empty element is the current directory */
			dir = ".";
			dir_len = 1;
		}
		if (dir_len + 1 + name_len < sizeof file) {
			memcpy(file, dir, dir_len);
			file[dir_len] = '/';
			memcpy(file + dir_len + 1, argv[0], name_len + 1);
			if (stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
			    access(file, X_OK) == 0) {
				execv(file, argv);
				break;
			}
		}
		if (*end == '\0')
			break;
	}
fallback:
	execvp(argv[0], argv);
}

/*
 * In the child: own process group, then the caller's signal state. Our
 * handlers go before the mask is restored: a signal pending here would
 * otherwise run on_signal and write into the parent's self-pipe.
 */
static void run_child(char **argv, const sigset_t *caller_mask, int report_fd)
{
	struct child_failure failure = { 0, 0 };
	ssize_t written;

	if (setpgid(0, 0) == -1 || set_handlers(SIG_DFL) == -1 ||
	    sigprocmask(SIG_SETMASK, caller_mask, NULL) == -1) {
		failure.err = errno;
	} else {
		exec_command(argv);
		failure.at_exec = 1;
		failure.err = errno;
	}
	/* The parent reads this; if the write fails it still sees our exit. */
	written = write(report_fd, &failure, sizeof failure);
	(void)written;
	_exit(failure.err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

/*
 * Fork and exec COMMAND. Returns only once the exec has happened: a
 * close-on-exec pipe stays silent on success and carries errno on failure,
 * so exec errors become our own 126/127 with one clear message.
 */
static pid_t spawn(char **argv, const sigset_t *caller_mask)
{
	int report[2];
	struct child_failure failure;
	size_t got = 0;
	ssize_t n;
	pid_t pid;
	int status;

	make_pipe(report, 0);
	pid = fork();
	if (pid == -1)
		die(EXIT_INTERNAL, "cannot fork: %s", strerror(errno));
	if (pid == 0)
		run_child(argv, caller_mask, report[1]);

	/* Also here, so the group exists before we ever signal it. EACCES:
	 * the child has already exec'd, after its own setpgid. */
	if (close(report[1]) == -1 ||
	    (setpgid(pid, pid) == -1 && errno != EACCES && errno != ESRCH))
		give_up(pid, "cannot set up the child");
	while (got < sizeof failure) {
		n = read(report[0], (char *)&failure + got, sizeof failure - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			give_up(pid, "cannot read from the child");
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (close(report[0]) == -1)
		give_up(pid, "cannot close pipe");
	if (got > 0) {
		while (waitpid(pid, &status, 0) == -1)
			if (errno != EINTR)
				die(EXIT_INTERNAL, "cannot wait for the child: %s",
				    strerror(errno));
		if (got < sizeof failure || !failure.at_exec)
			die(EXIT_INTERNAL, "cannot set up the child: %s",
			    got < sizeof failure ? "short report" : strerror(failure.err));
		die(failure.err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC,
		    "cannot run %s: %s", argv[0], strerror(failure.err));
	}
	return pid;
}

static void signal_group(pid_t group, int sig)
{
	if (kill(-group, sig) == -1 && errno != ESRCH)
		warn("cannot signal process group %ld: %s", (long)group, strerror(errno));
}

/* Zombies still count: they hold the group id, so it cannot be reused. */
static int group_is_empty(pid_t group)
{
	return kill(-group, 0) == -1 && errno == ESRCH;
}

/* 1 and *status once the child has exited, else 0. */
static int try_reap(pid_t child, int *status)
{
	pid_t pid;

	do
		pid = waitpid(child, status, WNOHANG);
	while (pid == -1 && errno == EINTR);
	if (pid == -1)
		give_up(child, "cannot wait for the child");
	return pid == child;
}

/* Sleep until a signal arrives or timeout_ms passes; forward what we got. */
static void wait_for_event(int signal_pipe_rd, int timeout_ms, pid_t group)
{
	struct pollfd pfd = { 0, POLLIN, 0 };
	unsigned char sigs[64];
	ssize_t n, i;

	pfd.fd = signal_pipe_rd;
	if (poll(&pfd, 1, timeout_ms) == -1) {
		if (errno == EINTR)
			return;
		give_up(group, "cannot poll");
	}
	for (;;) {
		n = read(signal_pipe_rd, sigs, sizeof sigs);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n == -1)
			give_up(group, "cannot read signal pipe");
		if (n == 0)
			return;
		for (i = 0; i < n; i++)
			if (sigs[i] != SIGCHLD)
				signal_group(group, sigs[i]);
	}
}

static int exit_code(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/*
 * Wait for the child, forwarding signals. On timeout: TERM (and CONT, so a
 * stopped process sees it) to the group, KILL when GRACE runs out; the result
 * is 124. When the child exits by itself, whatever it left running in its
 * group gets the same TERM, then KILL after GRACE, and the result is the
 * child's own status: a command leaves no stray processes behind. (One that
 * moved to another group or session, setsid, is out of reach.)
 */
static int supervise(pid_t child, int signal_pipe_rd, long long deadline,
                     long long grace)
{
	enum { RUNNING, TERM_SENT, KILL_SENT } phase = RUNNING;
	int reaped = 0, timed_out = 0, status = 0, timeout_ms;
	long long now;

	for (;;) {
		if (!reaped)
			reaped = try_reap(child, &status);
		if (reaped && (phase == KILL_SENT || group_is_empty(child)))
			return timed_out ? EXIT_TIMED_OUT : exit_code(status);

		now = monotonic_now();
		if (now == -1)
			give_up(child, "cannot read the clock");
		if ((reaped || now >= deadline) && phase == RUNNING) {
			timed_out = !reaped;
			signal_group(child, SIGTERM);
			signal_group(child, SIGCONT);
			phase = TERM_SENT;
			deadline = add_saturating(now, grace);
			continue;
		}
		if (now >= deadline && phase == TERM_SENT) {
			signal_group(child, SIGKILL);
			phase = KILL_SENT;
			deadline = NO_DEADLINE;
			continue;
		}

		timeout_ms = poll_timeout(deadline, now);
		/* Grandchildren send us no SIGCHLD: look for an empty group. */
		if (reaped && phase == TERM_SENT &&
		    (timeout_ms == -1 || timeout_ms > GROUP_POLL_MS))
			timeout_ms = GROUP_POLL_MS;
		wait_for_event(signal_pipe_rd, timeout_ms, child);
	}
}

int main(int argc, char **argv)
{
	long long secs, grace = DEFAULT_GRACE, deadline, now;
	int signal_pipe[2], argi;
	sigset_t handled, caller_mask;
	pid_t child;

	/* Options stop at SECS, so COMMAND's own options are never ours. */
	for (argi = 1; argi < argc && argv[argi][0] == '-' && argv[argi][1]; argi++) {
		const char *value;

		help_option(argv[argi]);
		if (strcmp(argv[argi], "--") == 0) {
			argi++;
			break;
		}
		if (strncmp(argv[argi], "-k", 2) != 0)
			die(EXIT_USAGE, "unknown option %s", argv[argi]);
		value = argv[argi][2] ? argv[argi] + 2 : argv[++argi];
		if (!value)
			die(EXIT_USAGE, "option -k needs a value");
		if (parse_duration(value, &grace) == -1)
			die(EXIT_USAGE, "invalid grace period '%s'", value);
	}
	if (argc - argi < 2)
		die(EXIT_USAGE, "%s", argi < argc ? "missing COMMAND" : "missing SECS and COMMAND");
	if (parse_duration(argv[argi], &secs) == -1)
		die(EXIT_USAGE, "invalid time limit '%s'", argv[argi]);

	make_pipe(signal_pipe, 1);
	signal_pipe_wr = signal_pipe[1];
	/* Signals that arrive before the fork wait, blocked, until there is a
	 * group to forward them to. */
	handled_signals(&handled);
	if (sigprocmask(SIG_BLOCK, &handled, &caller_mask) == -1 ||
	    set_handlers(on_signal) == -1)
		die(EXIT_INTERNAL, "cannot set up signals: %s", strerror(errno));
	now = monotonic_now();
	if (now == -1)
		die(EXIT_INTERNAL, "cannot read the clock: %s", strerror(errno));
	deadline = secs == 0 ? NO_DEADLINE : add_saturating(now, secs);

	child = spawn(argv + argi + 1, &caller_mask);
	if (sigprocmask(SIG_UNBLOCK, &handled, NULL) == -1)
		give_up(child, "cannot unblock signals");
	return supervise(child, signal_pipe[0], deadline, grace);
}
