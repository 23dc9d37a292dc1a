"""Headless Chromium driven over the DevTools protocol, with the standard library only.

Starts ``chromium --headless --remote-debugging-port=0`` (``--no-sandbox``: tests run as root),
finds the page target, and talks to it over a WebSocket written here (RFC 6455 client frames:
masked, text, with continuation frames reassembled). Enough for the HTML report's browser test:
navigate, evaluate, dispatch real mouse events, collect console errors, take screenshots.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import urllib.request
from typing import Any
from urllib.parse import urlparse

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _WebSocket:
    def __init__(self, url: str, timeout: float) -> None:
        parsed = urlparse(url)
        self.sock = socket.create_connection((parsed.hostname, parsed.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {parsed.path} HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            response += chunk
        head, _, self.buffer = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"WebSocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def receive(self) -> str:
        parts = []
        while True:
            first, second = self._read(2)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            mask = self._read(4) if second & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if opcode == 0x9:  # ping: nothing to answer for a short session
                continue
            parts.append(data)
            if first & 0x80:
                return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless Chromium with one page; ``call`` sends a DevTools command and returns its
    result, keeping every event that arrives meanwhile in ``events``."""

    def __init__(self, executable: str, *, timeout: float = 60.0, width: int = 1280, height: int = 900) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="lp-chromium-")
        self.process = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            # The sanitizer job preloads libasan into the tests' processes: not into the browser.
            env={k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")},
        )
        self.events: list[dict[str, Any]] = []
        self._next = 0
        try:
            port = self._port()
            self.ws = _WebSocket(self._page_url(port), timeout)
        except Exception:
            self.close()
            raise

    def _port(self) -> int:
        deadline = time.monotonic() + self.timeout
        assert self.process.stderr is not None
        seen = []
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                if self.process.poll() is not None:
                    raise RuntimeError(f"chromium exited {self.process.returncode}: {''.join(seen)[-2000:]}")
                continue
            seen.append(line)
            match = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if match:
                # Keep reading what it prints, so a full pipe never blocks the browser.
                threading.Thread(target=self._drain, daemon=True).start()
                return int(match.group(1))
        raise TimeoutError("chromium did not announce its DevTools port")

    def _drain(self) -> None:
        assert self.process.stderr is not None
        try:
            for _ in self.process.stderr:
                pass
        except (OSError, ValueError):
            pass

    def _page_url(self, port: int) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=self.timeout) as answer:
                targets = json.load(answer)
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.1)
        raise TimeoutError("chromium has no page target")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            message = json.loads(self.ws.receive())
            self.events.append(message)
            if message.get("method") == method:
                return message

    def open(self, url: str) -> None:
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def reload(self) -> None:
        """Load the page again; errors() then covers the new load only."""
        self.events.clear()
        self.call("Page.reload", ignoreCache=True)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluation failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(json.dumps(params.get("args", []))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(params["entry"].get("text", "")[:500])
        return out

    def mouse(self, kind: str, x: float, y: float, button: str = "none") -> None:
        clicks = 1 if button != "none" else 0
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button, clickCount=clicks)

    def screenshot(self, path: str, *, full_height: int | None = None, width: int = 1280) -> None:
        if full_height is not None:
            self.call("Emulation.setDeviceMetricsOverride", width=width, height=full_height, deviceScaleFactor=1,
                      mobile=False)
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
