/*
 * exec-proto.h — the wire protocol of a namespace sandbox's exec socket
 * (SPEC 4.5), spoken by forge-sandbox-init (the server), forge-shell (the
 * client) and t/exec-raw.c (a test client that sends what forge-shell never
 * would). Native byte order, one connection per command, every length
 * bounded:
 *   client -> server  a 20-byte header (struct exec_header) sent with
 *                     SCM_RIGHTS carrying exactly three fds (the command's
 *                     stdin, stdout, stderr): magic EXEC_MAGIC, flags
 *                     (EXEC_FLAG_KILL_AT_END: kill the command's process
 *                     group when the command ends; EXEC_FLAG_SIGNAL_STATUS:
 *                     report death by signal n as 256+n; EXEC_FLAG_TTY:
 *                     terminal mode, below), argc (1..EXEC_ARGS_MAX),
 *                     envc (0..EXEC_ARGS_MAX), length (at most
 *                     EXEC_PAYLOAD_MAX);
 *                     then `length` bytes: 1 + argc + envc NUL-terminated
 *                     strings: the physical cwd, argv, NAME=VALUE entries.
 *                     In terminal mode one EXEC_FRAME_WINSIZE frame (the
 *                     terminal's size at the start) follows: part of the
 *                     request.
 *   client -> server  8-byte frames: EXEC_FRAME_SIGNAL, a signal number
 *                     (INT, TERM, HUP or QUIT; sent to the process group);
 *                     EXEC_FRAME_WINSIZE, rows << 16 | columns (terminal
 *                     mode: set on the pty, which sends SIGWINCH inside).
 *   server -> client  one 8-byte frame: EXEC_FRAME_STATUS, the status (the
 *                     exit code, 128+n for signal n (256+n with
 *                     EXEC_FLAG_SIGNAL_STATUS), 126 when the command
 *                     cannot be executed, 127 when it is not found); then
 *                     the server closes the connection.
 * Terminal mode: the server allocates a pty inside the sandbox; the command
 * runs as the session leader with the pty's slave as its controlling
 * terminal and stdin, stdout and stderr; the server copies the stdin fd to
 * the pty and the pty to the stdout fd (the stderr fd is not used). The
 * status is sent once the pty has given everything the command wrote, or
 * TTY_DRAIN_MS after the command ended when something it left holds the
 * pty; the pty is hung up just before.
 * forge-sandbox-init(1) describes it for readers of the manual.
 */
#ifndef FORGE_EXEC_PROTO_H
#define FORGE_EXEC_PROTO_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#define EXEC_MAGIC 0x31495346u  /* "FSI1" little-endian */
#define EXEC_FLAG_KILL_AT_END 1u
#define EXEC_FLAG_SIGNAL_STATUS 2u  /* death by signal n comes back as 256 + n */
#define EXEC_FLAG_TTY 4u  /* terminal mode: a pty inside */
#define EXEC_FRAME_SIGNAL 1u
#define EXEC_FRAME_STATUS 2u
#define EXEC_FRAME_WINSIZE 3u  /* u32 rows << 16 | columns */
#define EXEC_ARGS_MAX 65536u
#define EXEC_PAYLOAD_MAX (4u << 20)

struct exec_header {
	uint32_t magic, flags, argc, envc, length;
};

/*
 * Sends HEADER with the three FDS (SCM_RIGHTS) in one sendmsg. Returns what
 * sendmsg returns (the bytes of the header sent, or -1 with errno; EINTR is
 * retried); the caller sends the rest of a short write.
 */
static inline ssize_t exec_send_header(int sock, const struct exec_header *header, const int fds[3])
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(3 * sizeof(int))];
	} control;
	struct iovec iov;
	struct msghdr msg;
	ssize_t n;

	iov.iov_base = (void *)header;
	iov.iov_len = sizeof *header;
	memset(&msg, 0, sizeof msg);
	memset(&control, 0, sizeof control);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control.buf;
	msg.msg_controllen = sizeof control.buf;
	CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), fds, 3 * sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

#endif
