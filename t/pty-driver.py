#!/usr/bin/env python3
"""pty-driver: runs COMMAND on a new pseudo-terminal, as a terminal emulator
would, and plays the steps read from stdin against it (t/terminal.bats).

  pty-driver.py ROWS COLS -- COMMAND [ARG...]  <STEPS

COMMAND is the session leader with the pty's slave as its controlling
terminal, sized ROWS x COLS. Steps, one per line:
  send TEXT          write TEXT to the terminal (Python escapes: \\r, \\x03)
  expect REGEX       wait until the output since the last match matches
  winsize ROWS COLS  resize the terminal (TIOCSWINSZ) and send SIGWINCH to
                     COMMAND, as a terminal emulator does
Then it reads until COMMAND ends, prints everything the terminal showed and
exits with COMMAND's status (128+n for signal n); 99 when an expect did not
match within the guard, or COMMAND had not ended the guard after the last
step (it is killed then: a shell that refused to exit, say, is a failure
with the terminal's output, never a hang). The guard is 30 seconds,
PTY_DRIVER_GUARD seconds when set: a hang guard, never a timing assertion.
"""
import fcntl
import os
import re
import select
import signal
import struct
import sys
import termios
import time

GUARD = float(os.environ.get("PTY_DRIVER_GUARD") or 30)


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main():
    rows, cols = int(sys.argv[1]), int(sys.argv[2])
    if sys.argv[3] != "--":
        sys.exit("usage: pty-driver.py ROWS COLS -- COMMAND [ARG...]")
    command = sys.argv[4:]
    steps = sys.stdin.read().splitlines()
    master, slave = os.openpty()
    set_size(slave, rows, cols)
    pid = os.fork()
    if pid == 0:
        os.close(master)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        if slave > 2:
            os.close(slave)
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    seen = b""
    pending = b""

    def read_some(deadline):
        nonlocal seen, pending
        wait = max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([master], [], [], wait)
        if not ready:
            return False
        try:
            data = os.read(master, 65536)
        except OSError:
            data = b""
        if not data:
            return None
        seen += data
        pending += data
        return True

    failed = None
    for step in steps:
        if not step.strip():
            continue
        verb, _, arg = step.partition(" ")
        if verb == "send":
            os.write(master, arg.encode().decode("unicode_escape").encode("latin-1"))
        elif verb == "winsize":
            r, c = (int(x) for x in arg.split())
            set_size(slave, r, c)
            os.kill(pid, signal.SIGWINCH)
        elif verb == "expect":
            pattern = re.compile(arg.encode())
            deadline = time.monotonic() + GUARD
            while True:
                m = pattern.search(pending)
                if m:
                    pending = pending[m.end():]
                    break
                got = read_some(deadline)
                if not got:
                    failed = "expect %r: %s" % (arg, "no match in time" if got is False else "the terminal closed")
                    break
        else:
            sys.exit("pty-driver: unknown step %r" % step)
        if failed:
            break
    if failed:
        os.kill(pid, signal.SIGKILL)
    os.close(slave)
    # The rest of the output, until every holder of the slave closed it.
    deadline = time.monotonic() + GUARD
    while read_some(deadline):
        pass
    # COMMAND's end, within the same guard. (A process it left may hold the
    # terminal past its end: the output then stops at the guard, as above.)
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() >= deadline:
            failed = failed or "the command had not ended %g seconds after the last step" % GUARD
            os.kill(pid, signal.SIGKILL)
            _, st = os.waitpid(pid, 0)
            break
        time.sleep(0.05)
    sys.stdout.write(seen.decode("utf-8", "replace"))
    sys.stdout.write("\n")
    if failed:
        sys.stderr.write("pty-driver: %s\n" % failed)
        sys.exit(99)
    sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))


if __name__ == "__main__":
    main()
