"""A step's printed output, bounded, in a sub-agent's kernel: shipped into each kernel beside `kernel_side`.

Around each step ``sys.stdout`` and ``sys.stderr`` pass on the first half of `OUTPUT_KEPT` characters,
keep the last half, count the rest, and at the end write one line saying how much was left out, then
the kept tail: a step that prints a gigabyte sends its head and tail to the host, not the gigabyte.
(On the host, `capture.BoundedBuffer` does the same for the root's steps.) Standard library only.
"""

import sys
import sysconfig
import threading

OUTPUT_KEPT = 200_000  # characters of one step's printed output sent on: the first and the last half


class _Limited:
    """A stream that passes on the first half of `OUTPUT_KEPT` characters, keeps the last half, counts the
    rest, and at the end of the step writes a line saying what was left out, then the kept tail."""

    def __init__(self, stream, kept=OUTPUT_KEPT):
        self._stream, self._half = stream, kept // 2
        self._passed = 0
        self._tail = []
        self._tail_size = 0
        self.left_out = 0
        self._lock = threading.Lock()

    def write(self, text):
        text = text if isinstance(text, str) else str(text)
        size = len(text)
        with self._lock:
            room = self._half - self._passed
            if room > 0:
                self._stream.write(text[:room])
                self._passed += min(room, size)
                text = text[room:]
            if text:
                self._tail.append(text)
                self._tail_size += len(text)
                while self._tail and self._tail_size - len(self._tail[0]) >= self._half:
                    self.left_out += len(self._tail[0])
                    self._tail_size -= len(self._tail.pop(0))
                if self._tail_size > 4 * self._half:  # one huge write: keep its end only
                    joined = "".join(self._tail)
                    self.left_out += len(joined) - self._half
                    self._tail, self._tail_size = [joined[-self._half:]], self._half
        return size

    def finish(self):
        tail = "".join(self._tail)
        if len(tail) > self._half:
            self.left_out += len(tail) - self._half
            tail = tail[-self._half:]
        if self.left_out:
            self._stream.write(f"\n... ({self.left_out:,} characters of output left out here) ...\n")
        if tail:
            self._stream.write(tail)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class limited:
    """Around a step: ``sys.stdout`` and ``sys.stderr`` pass on a bounded amount (`_Limited`); put back after."""

    def __enter__(self):
        self._saved = sys.stdout, sys.stderr
        self._streams = _Limited(sys.stdout), _Limited(sys.stderr)
        sys.stdout, sys.stderr = self._streams
        return self

    def __exit__(self, *exc_info):
        sys.stdout, sys.stderr = self._saved
        for stream in self._streams:
            try:
                stream.finish()
            except Exception:  # noqa: BLE001 - the stream of a kernel going away: nothing to finish
                pass
        return False


def library_path(path):
    """A library file in a traceback by its import path (``pandas/io/common.py``), not the folder Python is
    installed in: fewer characters, and the same error reads the same on every machine."""
    stdlib = (sysconfig.get_paths().get("stdlib") or "//").rstrip("/") + "/"
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    return path[len(stdlib):] if path.startswith(stdlib) else path
