# distsampler.torch._shard_file: a shard file read by positioned reads, refused once it changed under the job.
# SPDX-License-Identifier: MIT
"""A running job's shard files are read by positioned reads (never memory-mapped: a file
truncated under a map kills the process with SIGBUS), each read checking that the file's
size, modification time and inode are what they were when the dataset indexed it."""

import os

from .._core import ConfigError


def file_identity(st):
    """What identifies a file's contents for a running job: size, modification time (ns), inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _describe_change(then, now):
    if now is None:
        return "it was removed"
    if now[0] != then[0]:
        return f"its size went from {then[0]} to {now[0]} bytes"
    if now[1] != then[1]:
        return "its modification time changed"
    return "it was replaced by another file (a new inode)"


def changed_error(who, path, then, now, fix):
    return ConfigError(f"{who}: shard {path} changed while this job reads it ({_describe_change(then, now)}): "
                       f"records read from it now would be wrong or missing, so it is not read; {fix}")


class ShardFile:
    """One shard file for positioned reads (never a memory map). Before every read the file at
    `path` must still be the one of `identity` (``file_identity`` of its stat: size, modification
    time and inode); a file that changed is refused with `fix` saying what to do. With
    ``keep_open=False`` it holds no descriptor between reads (StreamDataset keeps a reader for
    every shard it touched, which would otherwise hold as many open files)."""

    def __init__(self, who, path, identity, fix, keep_open=True):
        self.who, self.path, self.identity, self.fix, self.keep_open = who, path, identity, fix, keep_open
        self.fd = None
        self.check()
        if keep_open:
            self._open()

    def _open(self):
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise ConfigError(f"{self.who}: shard {self.path} cannot be opened ({e.strerror}); {self.fix}") from None
        now = file_identity(os.fstat(fd))
        if now != self.identity:
            os.close(fd)
            raise changed_error(self.who, self.path, self.identity, now, self.fix)
        self.fd = fd

    def check(self):
        try:
            now = file_identity(os.stat(self.path))
        except FileNotFoundError:
            now = None
        except OSError as e:
            raise ConfigError(f"{self.who}: shard {self.path} cannot be inspected ({e.strerror}); {self.fix}") from None
        if now != self.identity:
            raise changed_error(self.who, self.path, self.identity, now, self.fix)

    def read(self, start, size):
        """Bytes [start, start + size) of the file, as a bytearray; checks the file first."""
        self.check()
        if start + size > self.identity[0]:
            raise ConfigError(f"{self.who}: shard {self.path}: bytes {start}..{start + size} lie past the end of its "
                              f"{self.identity[0]} bytes (its index does not match it); {self.fix}")
        if self.fd is None:
            self._open()
        try:
            out = bytearray(size)
            view, done = memoryview(out), 0
            while done < size:
                n = os.preadv(self.fd, [view[done:]], start + done)
                if n == 0:  # the file ended early: it shrank after the check
                    raise changed_error(self.who, self.path, self.identity, file_identity(os.fstat(self.fd)),
                                        self.fix)
                done += n
            return out
        finally:
            if not self.keep_open:
                self.close()

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
