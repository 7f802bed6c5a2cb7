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
#define NAME_MAX_LEN 64

const char *forge_progname(void)
{
	static const char prefix[] = "usage: ";
	static char name[NAME_MAX_LEN];

	if (name[0] == '\0') {
		const char *p = forge_help;
		size_t n;

		if (strncmp(p, prefix, sizeof prefix - 1) == 0)
			p += sizeof prefix - 1;
		n = strcspn(p, " \n");
		if (n == 0 || n >= sizeof name)
			p = "forge", n = 5;
		memcpy(name, p, n);
		name[n] = '\0';
	}
	return name;
}

/* The length of forge_help's synopsis: its first line and the lines after
 * it that start with a space. */
static size_t synopsis_len(void)
{
	const char *end = strchr(forge_help, '\n');

	while (end && end[1] == ' ')
		end = strchr(end + 1, '\n');
	return end ? (size_t)(end + 1 - forge_help) : strlen(forge_help);
}

static FORGE_PRINTF(2, 0) void report(const char *level, const char *fmt, va_list ap)
{
	char msg[MESSAGE_MAX], line[MESSAGE_MAX * 4 + 256];
	size_t n = 0, i;
	int len = vsnprintf(msg, sizeof msg, fmt, ap);

	if (len < 0)
		msg[0] = '\0';
	n = (size_t)snprintf(line, sizeof line, "%s: %s: ", forge_progname(), level);
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
		fwrite(forge_help, 1, synopsis_len(), stderr);
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
	if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
		fputs(forge_help, stdout);
	else if (strcmp(arg, "--version") == 0)
		printf("%s %s\n", forge_progname(), FORGE_VERSION);
	else
		return;
	exit(fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_INTERNAL);
}
