/*
 * server.c — see server.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "forge-util.h"
#include "server.h"

static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) { stop_signal = sig; }
static void on_child(int sig) { (void)sig; }

static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP };

unsigned long server_max_conns(const char *arg)
{
	unsigned long max;
	char *end;

	errno = 0;
	max = strtoul(arg, &end, 10);
	if (errno || *end || end == arg || arg[0] == '-' || max == 0 || max > SERVER_MAX_CONNS_LIMIT)
		die(EXIT_USAGE, "--max-conns needs a number from 1 to %d", SERVER_MAX_CONNS_LIMIT);
	return max;
}

static void set_handler(int sig, void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = handler;  /* no SA_RESTART: poll returns EINTR */
	if (sigaction(sig, &sa, NULL) != 0)
		die(EXIT_INTERNAL, "sigaction: %s", strerror(errno));
}

void server_signals(void)
{
	size_t i;

	set_handler(SIGPIPE, SIG_IGN);
	for (i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
		set_handler(stop_signals[i], on_stop);
	set_handler(SIGCHLD, on_child);
}

/* Forgets the children in KIDS (COUNT of them) that ended; with BLOCK, waits for one. */
static void reap(pid_t *kids, size_t *count, int block)
{
	pid_t pid;
	size_t i;

	while (*count > 0 && (pid = waitpid(-1, NULL, block ? 0 : WNOHANG)) != 0) {
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			*count = 0;  /* no child left to wait for */
			return;
		}
		for (i = 0; i < *count; i++)
			if (kids[i] == pid) {
				kids[i] = kids[--*count];
				break;
			}
	}
}

/* In the child: what the parent set up for itself is undone; then serve. */
static void child(const struct server *s, int client, pid_t parent, pid_t *kids)
{
	size_t i;

#ifdef __linux__
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
	for (i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
		signal(stop_signals[i], SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	close(s->listen_fd);
	free(kids);
	if (getppid() != parent)
		_exit(0);  /* it died before PR_SET_PDEATHSIG */
	s->serve(client, s->ctx);
	_exit(0);
}

int server_run(const struct server *s)
{
	size_t count = 0, i;
	pid_t *kids = calloc(s->max, sizeof *kids);

	if (!kids)
		die(EXIT_INTERNAL, "out of memory");
	while (!stop_signal) {
		struct pollfd pfd = { s->listen_fd, POLLIN, 0 };
		int fd;
		pid_t pid, parent;

		reap(kids, &count, 0);
		/* A second at most: a SIGCHLD landing just before poll costs no more. */
		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		if ((fd = accept(s->listen_fd, NULL, NULL)) < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				sleep(1);
			continue;
		}
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
			close(fd);
			continue;
		}
		if (count == s->max) {
			/* The client sees the connection closed: try again later. */
			if (s->full)
				s->full(fd, s->ctx);
			close(fd);
			continue;
		}
		parent = getpid();
		pid = fork();
		if (pid == 0)
			child(s, fd, parent, kids);
		if (pid > 0)
			kids[count++] = pid;
		close(fd);
	}
	for (i = 0; i < count; i++)
		kill(kids[i], SIGTERM);
	reap(kids, &count, 1);
	free(kids);
	return 128 + stop_signal;
}
