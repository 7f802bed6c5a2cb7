/*
 * seccomp-probe: tries each system call the namespace sandbox's seccomp
 * filter must deny (helpers/forge-seccomp.c) and prints "NAME RESULT" per
 * line, RESULT being EPERM, ENOSYS, "allowed" or another errno number; for
 * the calls of another ABI (x86-64 only), "killed" when the filter killed
 * the child that made it, "no-ia32" when the kernel has no i386 emulation,
 * else what the call returned. t/sandbox-bwrap.bats runs it inside a real
 * sandbox.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
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

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

#if defined(__x86_64__)
/* In a child: the i386 socketcall(SYS_SOCKET, args) through int 0x80, or
 * socket(AF_VSOCK) through the x32 ABI. The child exits 0 when the call
 * returned (whatever it returned); the filter kills it otherwise. */
static void foreign_abi(const char *name, int x32)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		long rc;

		if (x32) {
			rc = syscall(0x40000000L | SYS_socket, AF_VSOCK, SOCK_STREAM, 0);
		} else {
			/* The arguments' address is unreadable through the 32-bit
			 * ABI: the call returns EFAULT, if anything lets it run. */
			__asm__ volatile ("int $0x80" : "=a"(rc) : "a"(102L), "b"(1L), "c"(0L) : "memory");
		}
		(void)rc;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		printf("%s %d\n", name, errno);
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		printf("%s killed\n", name);
	else if (!x32 && WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		printf("%s no-ia32\n", name);
	else
		printf("%s allowed\n", name);
}
#endif

/* A socket of DOMAIN (AF_VSOCK: to the hypervisor or another VM), or a
 * pair with PAIR; closed at once. */
static long try_socket(int domain, int pair)
{
	int sv[2];
	long rc = pair ? socketpair(domain, SOCK_STREAM, 0, sv) : socket(domain, SOCK_STREAM, 0);

	if (rc >= 0 && !pair)
		close((int)rc);
	if (rc >= 0 && pair) {
		close(sv[0]);
		close(sv[1]);
	}
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
	report("socket-vsock", try_socket(AF_VSOCK, 0));
	report("socketpair-vsock", try_socket(AF_VSOCK, 1));
	report("socket-inet", try_socket(AF_INET, 0));
	report("socketpair-unix", try_socket(AF_UNIX, 1));
#if defined(__x86_64__)
	fflush(stdout);
	foreign_abi("socketcall-i386", 0);
	foreign_abi("socket-vsock-x32", 1);
#endif
	report("plain-fork", try_clone(0));
	return fflush(stdout) == 0 ? 0 : 1;
}
