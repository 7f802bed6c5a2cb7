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
 * It is on the path of every command an agent runs, so it does the least
 * possible before the execv: no stdio unless something is wrong.
 */
#define _XOPEN_SOURCE 700  /* realpath */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define USAGE \
	"usage: forge-shell [SHELL-ARGUMENTS...]   e.g. forge-shell -c 'make test'\n" \
	"Run a shell command in the sandbox named by FORGE_SANDBOX_CONTAINER (through\n" \
	"msb exec), or in the host shell when it is unset or empty. The arguments are\n" \
	"passed to bash (in the sandbox) or the host shell unchanged; --help and\n" \
	"--version are forge-shell's own only as the sole argument.\n"

/* SPEC 4.4: whatever stops msb from running, the answer is 127, not the host. */
enum { EXIT_CANNOT_EXEC = 126, EXIT_NOT_FOUND = 127 };

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define SANDBOX_NAME_MAX 128

static const char *const progname = "forge-shell";

/* Writes s to stderr with bytes outside printable ASCII as \xNN. */
static void put_safe(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '\\')
			putc(c, stderr);
		else
			fprintf(stderr, "\\x%02x", c);
	}
}

/*
 * Prints "forge-shell: error: " and the parts, every second one (a name or a
 * value from the environment) made safe, then exits with STATUS.
 */
static void die(int status, const char *part, ...)
{
	va_list ap;
	int safe = 0;

	fprintf(stderr, "%s: error: ", progname);
	va_start(ap, part);
	for (; part; part = va_arg(ap, const char *), safe = !safe) {
		if (safe)
			put_safe(part);
		else
			fputs(part, stderr);
	}
	va_end(ap);
	putc('\n', stderr);
	exit(status);
}

static void *xmalloc(size_t size)
{
	void *p = malloc(size);

	if (!p)
		die(EXIT_NOT_FOUND, "out of memory; refusing to run", (const char *)NULL);
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
			die(EXIT_NOT_FOUND, "cannot run msb (cannot determine the working directory: ",
				strerror(errno), "); refusing to run on the host", (const char *)NULL);
		size *= 2;
	}
}

static void run_in_sandbox(const char *name, int argc, char **argv)
{
	const char *msb = getenv("FORGE_MSB");
	char **args, *path;
	int i, n = 0;

	if (!msb || !*msb)
		msb = "msb";
	else if (msb[0] != '/')
		die(EXIT_NOT_FOUND, "cannot run msb (FORGE_MSB=", msb,
			" is not an absolute path); refusing to run on the host", (const char *)NULL);
	path = find_program(msb);
	if (!path)
		die(EXIT_NOT_FOUND, "cannot run msb (", msb, " not found on PATH); refusing to run on the host",
			(const char *)NULL);
	if (access(path, X_OK) != 0)
		die(EXIT_NOT_FOUND, "cannot run msb (", path, ": ", strerror(errno),
			"); refusing to run on the host", (const char *)NULL);
	if (!is_sandbox_name(name))
		die(EXIT_NOT_FOUND, "FORGE_SANDBOX_CONTAINER is not a valid sandbox name: '", name,
			"'; refusing to run on the host", (const char *)NULL);

	args = xmalloc(((size_t)argc + 9) * sizeof *args);
	args[n++] = path;
	args[n++] = "exec";
	args[n++] = "--quiet";
	args[n++] = (char *)name;
	args[n++] = "--no-tty";
	args[n++] = "-w";
	args[n++] = physical_cwd();
	args[n++] = "--";
	args[n++] = "bash";
	for (i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(path, args);
	die(EXIT_NOT_FOUND, "cannot run msb (", path, ": ", strerror(errno),
		"); refusing to run on the host", (const char *)NULL);
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
	same = strcmp(strrchr(real, '/') + 1, progname) == 0;
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
			die(EXIT_NOT_FOUND, "cannot run the host shell (FORGE_HOST_SHELL=", chosen,
				": not found on PATH)", (const char *)NULL);
		if (is_self(path))
			die(EXIT_NOT_FOUND, "FORGE_HOST_SHELL=", chosen,
				" is forge-shell itself; refusing to exec it in a loop", (const char *)NULL);
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
	die(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC, "cannot run the host shell (", path,
		": ", strerror(errno), ")", (const char *)NULL);
}

int main(int argc, char **argv)
{
	const char *name = getenv("FORGE_SANDBOX_CONTAINER");

	/* A shell shim receives shell arguments: only a lone --help/--version is ours. */
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs(USAGE, stdout);
		return fflush(stdout) == 0 ? 0 : 70;
	}
	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("forge-shell %s\n", FORGE_VERSION);
		return fflush(stdout) == 0 ? 0 : 70;
	}
	if (argc < 1 || !argv[0]) {
		static char *no_args[] = { "forge-shell", NULL };

		argc = 1;
		argv = no_args;
	}
	if (name && *name)
		run_in_sandbox(name, argc, argv);
	run_on_host(argv);
	return EXIT_NOT_FOUND;
}
