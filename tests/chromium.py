"""A headless Chromium driven over the DevTools protocol through a pipe (no websockets, no
extra package): load a page, evaluate JavaScript, take a screenshot.

Chromium reads protocol messages from file descriptor 3 and writes to 4 when started with
``--remote-debugging-pipe``; each message is JSON followed by a NUL byte.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]


def executable() -> str | None:
    """Debian's chromium (apt-get install chromium), if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with a fresh profile, and one page."""

    def __init__(self, binary: str, timeout: float = 60.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="eqrewrite-chromium-")
        to_chrome, self._write = os.pipe()
        self._read, from_chrome = os.pipe()

        def wire() -> None:  # in the child: our pipe ends become fds 3 and 4
            high_in = fcntl.fcntl(to_chrome, fcntl.F_DUPFD, 100)
            high_out = fcntl.fcntl(from_chrome, fcntl.F_DUPFD, 100)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer, self._next = b"", 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target,
                                                           "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def call(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        """Send one command and wait for its answer (events are skipped)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                answer = json.loads(raw)
                if answer.get("id") == self._next:
                    if "error" in answer:
                        raise RuntimeError(f"{method}: {answer['error']}")
                    return answer["result"]
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium closed the pipe during {method}")
            self._buffer += chunk
        raise TimeoutError(f"{method}: no answer within {self.timeout} s")

    def open(self, path: Path, ready: str = "document.body.dataset.ready === '1'") -> None:
        """Load a file and wait until ``ready`` is true."""
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(f"document.readyState === 'complete' && ({ready})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not become ready")
            time.sleep(0.1)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page; page errors raise."""
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int = 1280, height: int = 900) -> None:
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1,
                                                         "mobile": False}, session=True)
        shot = self.call("Page.captureScreenshot", {"format": "png"}, session=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError, TimeoutError):
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._read)
        os.close(self._write)
        shutil.rmtree(self.profile, ignore_errors=True)
