/*
 * server.h — the accept/fork/reap loop shared by forge-egress (the
 * allow-list proxy) and forge-relay (the sandbox's 127.0.0.1:3128): one
 * process per client connection, at most a fixed number at once, until
 * TERM, INT or HUP.
 */
#ifndef FORGE_SERVER_H
#define FORGE_SERVER_H

#define SERVER_MAX_CONNS_DEFAULT 64
#define SERVER_MAX_CONNS_LIMIT 4096

struct server {
	int listen_fd;        /* listening, close-on-exec */
	unsigned long max;    /* connections served at once */
	/* Serves one client; runs in its own child process, which then exits 0. */
	void (*serve)(int client, void *ctx);
	/* With MAX connections running: may answer CLIENT before it is closed (NULL: just closed). */
	void (*full)(int client, void *ctx);
	void *ctx;
};

/* The value of --max-conns: a number from 1 to SERVER_MAX_CONNS_LIMIT, else a usage error. */
unsigned long server_max_conns(const char *arg);

/*
 * Sets up the signals the loop needs: SIGPIPE ignored (a client that goes
 * away is an error return, not a death), TERM, INT and HUP stop the loop,
 * SIGCHLD wakes it. Call before server_run (and before listening, so that
 * an early TERM is not lost).
 */
void server_signals(void);

/*
 * Accepts and forks until TERM, INT or HUP. A child has the default
 * dispositions back, dies with this process (PR_SET_PDEATHSIG where there
 * is one) and holds neither the listening socket nor another client's.
 * Then TERMs the children still running and waits for them. Returns
 * 128 + the signal that stopped it.
 */
int server_run(const struct server *s);

#endif
