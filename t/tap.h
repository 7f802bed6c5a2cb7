/*
 * tap.h — the TAP output of the C unit tests (the t/...-unit.c files), read by
 * automake's TAP driver like the bats files: ok() per check, tap_done() at
 * the end of main.
 */
#ifndef FORGE_TAP_H
#define FORGE_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int test_count, test_failed;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void ok(int pass, const char *fmt, ...)
{
	va_list ap;

	test_count++;
	if (!pass)
		test_failed++;
	printf("%sok %d - ", pass ? "" : "not ", test_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Prints the plan; main returns this. */
static int tap_done(void)
{
	printf("1..%d\n", test_count);
	return test_failed ? 1 : 0;
}

#endif
