/*
 * seccomp-probe: tries each system call the namespace sandbox's seccomp
 * filter must deny (helpers/forge-seccomp.c) and prints "NAME RESULT" per
 * line, RESULT being EPERM, ENOSYS, "allowed" or another errno number.
 * t/sandbox-bwrap.bats runs it inside a real sandbox.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *name, long rc)
{
	if (rc >= 0)
		printf("%s allowed\n", name);
	else if (errno == EPERM)
		printf("%s EPERM\n", name);
	else if (errno == ENOSYS)
		printf("%s ENOSYS\n", name);
	else
		printf("%s %d\n", name, errno);
}

/* clone with FLAGS: a child that is made exits at once. */
static long try_clone(unsigned long flags)
{
	long rc = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);

	if (rc == 0)
		_exit(0);
	if (rc > 0)
		waitpid((pid_t)rc, NULL, 0);
	return rc;
}

int main(void)
{
	char c = 'x';
	unsigned char params[120];
	unsigned long long clone_args[11];

	memset(params, 0, sizeof params);
	memset(clone_args, 0, sizeof clone_args);
	report("io_uring_setup", syscall(SYS_io_uring_setup, 1, params));
	report("keyctl", syscall(SYS_keyctl, 0, -3, 0));
	report("add_key", syscall(SYS_add_key, "user", "forge", "x", 1, -3));
	report("request_key", syscall(SYS_request_key, "user", "forge", NULL, 0));
	report("bpf", syscall(SYS_bpf, 0, NULL, 0));
	report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	report("unshare-user", syscall(SYS_unshare, CLONE_NEWUSER));
	report("unshare-mount", syscall(SYS_unshare, CLONE_NEWNS));
	report("clone-newnet", try_clone(CLONE_NEWNET));
	report("clone-newuser", try_clone(CLONE_NEWUSER));
	clone_args[0] = CLONE_NEWUSER;
	report("clone3", syscall(SYS_clone3, clone_args, sizeof clone_args));
	/* A target that does not exist: ENOENT if allowed, never a real mount. */
	report("mount", syscall(SYS_mount, "none", "/nonexistent-forge-probe", "tmpfs", 0, NULL));
	report("ioctl-tiocsti", syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI, &c));
	report("ioctl-tiocsti-high", syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &c));
	report("plain-fork", try_clone(0));
	return fflush(stdout) == 0 ? 0 : 1;
}
