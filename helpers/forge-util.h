/*
 * forge-util.h — what every C helper of forge shares: the exit statuses
 * (SPEC 2), one die/warn, and one way to answer -h/--help/--version and to
 * report a usage error.
 *
 * Each program defines one string, forge_help, what --help prints. It opens
 * with the synopsis: the line "usage: PROG ..." and its continuations (the
 * lines after it that start with a space), printed after every usage error.
 * PROG ("forge-state"), the word after "usage: ", names the program at the
 * start of every message (forge_progname).
 */
#ifndef FORGE_UTIL_H
#define FORGE_UTIL_H

/* Exit statuses: SPEC section 2, sysexits values where one fits. */
enum {
	EXIT_USAGE = 64,        /* a usage error (die adds the synopsis) */
	EXIT_DATA = 65,         /* bad data: a file or value that is invalid */
	EXIT_UNAVAILABLE = 69,  /* a service or program that is needed is not there */
	EXIT_INTERNAL = 70,     /* internal (software) error */
	EXIT_OSERR = 71,        /* a system call failed that should not */
	EXIT_CANTCREAT = 73,    /* cannot create (or safely open) a needed file */
	EXIT_IOERR = 74,        /* an I/O error */
	EXIT_TEMPFAIL = 75,     /* temporary failure (a lock wait timed out) */
	EXIT_CANNOT_EXEC = 126, /* a program was found but could not be executed */
	EXIT_NOT_FOUND = 127    /* a program was not found (or, forge-shell: refused) */
};

#if defined(__GNUC__) || defined(__clang__)
#define FORGE_NORETURN __attribute__((noreturn))
#define FORGE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define FORGE_NORETURN
#define FORGE_PRINTF(fmt, args)
#endif

extern const char forge_help[];

/* The program's name: PROG of forge_help's synopsis. */
const char *forge_progname(void);

/*
 * When set (forge-shell sets it: its messages carry names from the
 * environment), die and warn write every byte of the message outside
 * printable ASCII, and the backslash, as \xNN.
 */
extern int forge_escape_messages;

/*
 * "PROG: error: MESSAGE" on stderr, in one write, then exit STATUS. A usage
 * error (EXIT_USAGE) is followed by the synopsis.
 */
FORGE_NORETURN FORGE_PRINTF(2, 3) void die(int status, const char *fmt, ...);

/* "PROG: warning: MESSAGE" on stderr, in one write. */
FORGE_PRINTF(1, 2) void warn(const char *fmt, ...);

/*
 * The options every program answers the same way, wherever one of its
 * options may stand: -h and --help print forge_help on stdout, --version
 * prints "PROG VERSION"; then exit 0 (70 when stdout
 * cannot be written). Any other ARG: returns.
 */
void help_option(const char *arg);

#endif
