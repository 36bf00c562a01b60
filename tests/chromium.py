"""Headless Chromium driven over its DevTools pipe: open a page at a window
size, wait for it to load, and read back what the browser laid out.  The
report has no script of its own; the expression is the test's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time


def find() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Pipe:
    def __init__(self, proc: subprocess.Popen, to_fd: int, from_fd: int) -> None:
        self.proc, self.to_fd, self.from_fd = proc, to_fd, from_fd
        self.buf = b""
        self.next_id = 0

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self.next_id += 1
        msg: dict[str, object] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_fd, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def wait(self, pred, timeout_s: float) -> dict:
        end = time.monotonic() + timeout_s
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if pred(m):
                    return m
            if time.monotonic() > end:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self.buf += chunk

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout_s: float = 60.0) -> dict:
        i = self.send(method, params, session)
        m = self.wait(lambda m: m.get("id") == i, timeout_s)
        if "error" in m:
            raise RuntimeError(f"{method}: {m['error']}")
        return m["result"]


def evaluate(url: str, expression: str, width: int = 1200, height: int = 900,
             timeout_s: float = 90.0) -> object:
    """The value of a JavaScript expression in the page at url, once loaded,
    in a window of width x height CSS pixels."""
    chromium = find()
    if chromium is None:
        raise RuntimeError("chromium is missing")
    to_r, to_w = os.pipe()  # commands: we write, Chromium reads on fd 3
    from_r, from_w = os.pipe()  # answers: Chromium writes on fd 4

    def fds() -> None:
        os.dup2(to_r, 3)
        os.dup2(from_w, 4)

    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         "--hide-scrollbars", f"--window-size={width},{height}", "about:blank"],
        pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    os.close(to_r)
    os.close(from_w)
    pipe = _Pipe(proc, to_w, from_r)
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        pipe.call("Page.enable", session=s)
        pipe.call("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=s)
        pipe.call("Page.navigate", {"url": url}, session=s)
        pipe.wait(lambda m: m.get("method") == "Page.loadEventFired", timeout_s)
        got = pipe.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                        session=s)
        if "exceptionDetails" in got:
            raise RuntimeError(f"the expression failed: {got['exceptionDetails']}")
        return got["result"].get("value")
    finally:
        try:
            pipe.send("Browser.close")
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, 9)
            proc.wait()
        os.close(to_w)
        os.close(from_r)


# The first screen as laid out: where the summary and its parts are, which
# of its figures loaded, and what lies on the screen before anything else.
FIRST_SCREEN = """JSON.stringify((() => {
  const box = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  const s = document.getElementById('summary');
  return {
    height: innerHeight,
    summary: s ? box(s) : null,
    firstH2: (document.querySelector('h2') || {}).textContent || '',
    facts: s ? [...s.querySelectorAll('.facts')].map(e => ({...box(e), text: e.innerText}))
             : [],
    heads: s ? [...s.querySelectorAll('.card .head')].map(e => ({...box(e),
                                                                 text: e.innerText})) : [],
    images: s ? [...s.querySelectorAll('img')].map(i => ({...box(i), loaded: i.complete
                  && i.naturalWidth > 0, src: i.getAttribute('src')})) : [],
    findings: box(document.getElementById('findings')),
    headline: document.getElementById('headline')
      ? {...box(document.getElementById('headline')),
         text: document.getElementById('headline').innerText} : null,
  };
})())"""


def first_screen(url: str, width: int = 1200, height: int = 900) -> dict:
    return json.loads(evaluate(url, FIRST_SCREEN, width, height))  # type: ignore[arg-type]


# How wide the page lays out, with every folded <details> opened: the
# document's scroll width against the window, what sticks out past the
# window's right edge, and the width of each table of the runs section.
LAYOUT = """JSON.stringify((() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const right = e => e.getBoundingClientRect().right;
  const runs = [];
  const h = document.getElementById('provenance');
  for (let e = h && h.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
    if (e.tagName === 'TABLE') runs.push(Math.round(e.getBoundingClientRect().width));
  }
  return {
    inner: innerWidth,
    scroll: document.documentElement.scrollWidth,
    out: [...document.querySelectorAll('body *')].filter(e => right(e) > innerWidth + 0.5)
           .slice(0, 8).map(e => e.tagName + ' ' + Math.round(right(e)) + ' '
                             + (e.textContent || '').trim().slice(0, 60)),
    runs: runs,
  };
})())"""


def layout(url: str, width: int = 1280, height: int = 900) -> dict:
    return json.loads(evaluate(url, LAYOUT, width, height))  # type: ignore[arg-type]
