"""The minimiser's handle on its checking process (``reduceworker.py``): started once,
warm, one candidate tree judged at a time, killed when it overstays; the messages are
``formats.Description`` and ``formats.Answer``.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, cast

from ..formats import Answer, Description, Probe

WORKER = Path(__file__).with_name("reduceworker.py")
START_TIMEOUT = 600.0  # seconds for the checking process to import torch and load the folder


class ReduceError(Exception):
    """A folder that is not a usable reproducer (exit 2)."""


class Checker:
    """The warm checking process: one candidate tree at a time, killed when it overstays."""

    def __init__(self, folder: Path, trees: Path, log: Path, core: Path | None = None):
        self.folder, self.trees, self.log_path, self.core = folder, trees, log, core
        self.process: subprocess.Popen[bytes] | None = None
        self.description: Description | None = None
        self._buffer = b""

    def launch(self) -> None:
        """Start the process unless it runs; do not wait for it to load. Call this from the
        main thread: the process dies with the thread that started it (its parent-death
        signal follows the thread), and judging threads come and go."""
        if self.process is not None and self.process.poll() is None:
            return
        self.close()
        command = [sys.executable, str(WORKER), str(self.folder), str(self.trees)]
        command += [str(self.core)] if self.core is not None else []
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        with open(self.log_path, "ab") as log:
            # A session of its own: killing the group also ends Inductor's compile workers.
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, env=env,
                                            start_new_session=True)
        self._buffer = b""
        self.description = None

    def start(self) -> Description:
        """Start the process (if needed) and return its description of the reproducer."""
        if self.process is not None and self.process.poll() is None and (
                self.description is not None):
            return self.description
        self.launch()
        answer = self._read(START_TIMEOUT)
        if answer is None or "ready" not in answer:
            self.close()
            raise ReduceError(f"{self.folder}: the reproducer could not be loaded: "
                              f"{(answer or {}).get('error') or self._log_tail()}")
        self.description = cast(Description, answer)  # its first message says it is ready
        return self.description

    def check(self, root: Path, state: bool, timeout: float, **screen: Any) -> Answer | None:
        """The worker's answer for the tree at ``root``; None when it timed out or died.
        ``eager=`` (an exception type or None) screens the candidate with one eager run;
        ``differences=`` (the finding's) rejects one that differs otherwise before the
        triage; ``backend=`` judges it with that backend instead of the reproducer's."""
        return cast(Answer | None, self._ask(root, state, timeout, screen))

    def probe(self, root: Path, state: bool, timeout: float, **overrides: Any
              ) -> Probe | None:
        """The worker's look at the program at ``root`` (``reduceworker.probe``); None when
        it could not tell (it timed out, died or raised)."""
        answer = self._ask(root, state, timeout, {**overrides, "probe": True})
        return None if answer is None or "error" in answer else cast(Probe, answer)

    def _ask(self, root: Path, state: bool, timeout: float, fields: dict[str, Any]
             ) -> dict[str, Any] | None:
        """Send one request about the tree at ``root``; its answer, None when it timed out
        or the process died."""
        self.start()
        request = json.dumps({"root": str(root), "state": state, **fields}) + "\n"
        stdin, _ = self._pipes()
        try:
            stdin.write(request.encode())
            stdin.flush()
        except BrokenPipeError:
            self.close()
            return None
        answer = self._read(timeout)
        if answer is None:
            self.close()
        return answer

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The process's next message (one JSON object a line); None when none came in
        ``timeout`` seconds or the process died."""
        deadline = time.monotonic() + timeout
        _, stdout = self._pipes()
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                chunk = os.read(stdout.fileno(), 65536)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The started process's stdin and stdout (both pipes: see start())."""
        assert self.process is not None
        assert self.process.stdin is not None and self.process.stdout is not None
        return self.process.stdin, self.process.stdout

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no output"
        return "\n".join(lines[-8:]) or "no output"

    def close(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.process.kill()
        self.process.wait()
        for stream in self._pipes():
            stream.close()
        self.process = None
