/*
 * forge-seccomp — the seccomp filter of a namespace sandbox (SPEC 4.5), as
 * BPF on stdout, for `bwrap --seccomp FD`.
 *
 * Everything is allowed except what widens the kernel surface a sandboxed
 * process can reach or lets it leave its namespaces: io_uring, the key
 * store, bpf, perf events, mounting, new namespaces (unshare, setns, and
 * clone with a namespace flag), faking terminal input (TIOCSTI), and
 * AF_VSOCK sockets (a channel to the hypervisor and other VMs, past the
 * network namespace).
 * clone3 answers ENOSYS, not EPERM: libc then falls back to clone, whose
 * flags a filter can read (clone3 passes them in memory). System calls of
 * another architecture (32-bit calls on x86-64) kill the process.
 */
#define _GNU_SOURCE  /* CLONE_NEW* */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "forge-util.h"

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

const char forge_help[] =
	"usage: forge-seccomp\n"
	"Write the namespace sandbox's seccomp filter (BPF) to stdout, for bwrap --seccomp FD.\n";

/* Denied outright (EPERM). Names this libseccomp does not know are skipped. */
static const char *const denied[] = {
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open",
	"mount", "umount2", "pivot_root", "setns",
	"open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	NULL
};

/* Namespace flags: unshare with any of them, or clone with one of the
 * first seven (CLONE_NEWTIME shares its bit with clone's exit signal). */
static const unsigned long ns_flags[] = {
	CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
	CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME
};

/* libseccomp's calls return -errno. */
static void fail(const char *what, int rc)
{
	die(EXIT_INTERNAL, "%s: %s", what, strerror(rc < 0 ? -rc : rc));
}

static int resolve(const char *name)
{
	return seccomp_syscall_resolve_name(name);
}

static void deny(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned count,
	const struct scmp_arg_cmp *cmp)
{
	int nr = resolve(name), rc;

	if (nr == __NR_SCMP_ERROR)
		return;
	rc = count ? seccomp_rule_add_array(ctx, action, nr, count, cmp) : seccomp_rule_add(ctx, action, nr, 0);
	if (rc < 0)
		fail(name, rc);
}

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	unsigned i;
	int rc;

	if (argc == 2)
		help_option(argv[1]);
	if (argc != 1)
		die(EXIT_USAGE, "no arguments expected");
	if (isatty(STDOUT_FILENO))
		die(EXIT_USAGE, "refusing to write BPF to a terminal");

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		fail("seccomp_init", ENOMEM);
	for (i = 0; denied[i]; i++)
		deny(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0, NULL);
	for (i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++) {
		struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);

		deny(ctx, SCMP_ACT_ERRNO(EPERM), "unshare", 1, &cmp);
		if (ns_flags[i] != CLONE_NEWTIME)
			deny(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &cmp);
	}
	deny(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	{
		/* The request is an int: the high 32 bits are ignored by the kernel. */
		struct scmp_arg_cmp sti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
		struct scmp_arg_cmp linux_ = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX);

		deny(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &sti);
		deny(ctx, SCMP_ACT_ERRNO(EPERM), "ioctl", 1, &linux_);
	}
	{
		/* The domain is an int too. On x86-64 the i386 socketcall, whose
		 * arguments no filter can read, never gets here: another ABI is
		 * killed (see the top of this file). */
		struct scmp_arg_cmp vsock = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, AF_VSOCK);

		deny(ctx, SCMP_ACT_ERRNO(EPERM), "socket", 1, &vsock);
		deny(ctx, SCMP_ACT_ERRNO(EPERM), "socketpair", 1, &vsock);
	}
	rc = seccomp_export_bpf(ctx, STDOUT_FILENO);
	seccomp_release(ctx);
	if (rc < 0)
		fail("cannot write the filter", rc);
	return 0;
}
