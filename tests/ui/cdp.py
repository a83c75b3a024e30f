"""cdp.py - a small client of the Chrome DevTools Protocol over
--remote-debugging-pipe (NUL-delimited JSON on the browser's fds 3 and 4),
with the Python standard library only: start headless Chromium, open tabs,
evaluate JavaScript, poll the DOM with a bound, take screenshots.

Used by tests/ui/browser.py. Never waits without a deadline."""
import base64
import json
import os
import select
import shutil
import subprocess
import time


class Failure(Exception):
    pass


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, binary, profile_dir, log_path):
        to_r, to_w = os.pipe()      # we write, the browser reads (its fd 3)
        from_r, from_w = os.pipe()  # the browser writes (its fd 4), we read
        hi_r, hi_w = fcntl_dup(to_r), fcntl_dup(from_w)  # above 4: dup2 onto 3/4 keeps them

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        args = [binary, "--headless=new", "--remote-debugging-pipe",
                "--user-data-dir=" + profile_dir, "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--disable-dev-shm-usage", "--disable-extensions", "--disable-background-networking",
                "--disable-sync", "--disable-component-update", "--password-store=basic",
                "--window-size=1280,1000", "--hide-scrollbars", "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # CI runs as root
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log, preexec_fn=child_fds, pass_fds=(3, 4))
        for fd in (to_r, from_w, hi_r, hi_w):
            os.close(fd)
        self.w, self.r = to_w, from_r
        self.buf = b""
        self.next_id = 0
        self.events = []

    # ---- the pipe ----
    def _send(self, msg):
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.w, data)
            data = data[n:]

    def _read_one(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failure("the browser did not answer in time")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise Failure("the browser closed its pipe (see its log)")
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._send(msg)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_one(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Failure("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)
        self.log.close()

    # ---- tabs ----
    def tab(self, url="about:blank"):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        t = Tab(self, session)
        self.call("Page.enable", session=session)
        self.call("Runtime.enable", session=session)
        if url != "about:blank":
            t.go(url)
        return t


def fcntl_dup(fd):
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


class Tab:
    def __init__(self, browser, session):
        self.b, self.s = browser, session

    def go(self, url):
        self.b.call("Page.navigate", {"url": url}, session=self.s)

    def eval(self, expr):
        res = self.b.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                               "awaitPromise": True}, session=self.s)
        if "exceptionDetails" in res:
            raise Failure("script failed: %s: %s" % (expr, res["exceptionDetails"].get("text")))
        return res.get("result", {}).get("value")

    def wait(self, expr, what, timeout=30):
        """Poll `expr` until it is truthy; fail with `what` after `timeout` s."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.eval(expr)
                if last:
                    return last
            except Failure as e:  # a page between two documents
                last = str(e)
            time.sleep(0.1)
        raise Failure("%s: not true after %d s (%s; page: %s)" % (
            what, timeout, last, self.safe_text()))

    def safe_text(self):
        try:
            return (self.eval("location.href + ' | ' + document.body.innerText") or "")[:600]
        except Failure:
            return "?"

    def screenshot(self, path):
        data = self.b.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                           session=self.s)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
