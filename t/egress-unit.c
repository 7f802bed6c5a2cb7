/*
 * Unit tests of forge-egress's allow-list rules (SPEC 4.5); the request
 * parser and the address test have their own (t/http-head-unit.c,
 * t/public-addr-unit.c). Prints TAP for automake's TAP driver.
 */
#define FORGE_EGRESS_NO_MAIN
#include "../helpers/forge-egress.c"

#include "tap.h"

static void test_rules(void)
{
	struct egress_rules rules;
	static const char *const lines[] = { " *.Example.com \n", "bad:443\n", "\n", "exact.org\n" };
	size_t i;

	memset(&rules, 0, sizeof rules);
	for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
		egress_rules_add(&rules, lines[i], strlen(lines[i]), NULL);
	ok(rules.count == 2 && !rules.any, "valid entries kept, invalid and blank ones dropped");
	ok(egress_allowed(&rules, "a.example.com", 13) && egress_allowed(&rules, "exact.org", 9)
		&& !egress_allowed(&rules, "www.exact.org", 13) && !egress_allowed(&rules, "bad", 3),
		"matching uses the entries, lowercased");
	egress_rules_add(&rules, "*\n", 2, NULL);
	ok(rules.any && egress_allowed(&rules, "anything.net", 12), "'*' allows every host name");
	egress_rules_free(&rules);
}

int main(void)
{
	test_rules();
	return tap_done();
}
