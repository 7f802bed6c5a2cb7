/*
 * forge-util.c — see forge-util.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge-util.h"

#ifndef FORGE_VERSION
#define FORGE_VERSION "unknown"
#endif

int forge_escape_messages;

#define MESSAGE_MAX 8192  /* a path of PATH_MAX and the words around it */

static FORGE_PRINTF(2, 0) void report(const char *level, const char *fmt, va_list ap)
{
	char msg[MESSAGE_MAX], line[MESSAGE_MAX * 4 + 256];
	size_t n = 0, i;
	int len = vsnprintf(msg, sizeof msg, fmt, ap);

	if (len < 0)
		msg[0] = '\0';
	n = (size_t)snprintf(line, sizeof line, "%s: %s: ", forge_progname, level);
	for (i = 0; msg[i] && n + 6 < sizeof line; i++) {
		unsigned char c = (unsigned char)msg[i];

		if (forge_escape_messages && (c < 0x20 || c >= 0x7f || c == '\\'))
			n += (size_t)snprintf(line + n, sizeof line - n, "\\x%02x", c);
		else
			line[n++] = (char)c;
	}
	line[n++] = '\n';
	/* One write: stderr is unbuffered, so the line goes out whole. */
	fwrite(line, 1, n, stderr);
}

void die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("error", fmt, ap);
	va_end(ap);
	if (status == EXIT_USAGE)
		fputs(forge_usage, stderr);
	exit(status);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report("warning", fmt, ap);
	va_end(ap);
}

void help_option(const char *arg)
{
	if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
		fputs(forge_usage, stdout);
		fputs(forge_help, stdout);
	} else if (strcmp(arg, "--version") == 0)
		printf("%s %s\n", forge_progname, FORGE_VERSION);
	else
		return;
	exit(fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_INTERNAL);
}
