#!/usr/bin/env python3
"""browser.py - `spore ui` in a real browser (authoring.md §4): headless
Chromium driven over the DevTools protocol (cdp.py). Called by
test_ui_browser.sh with the server's URL, two runs waiting for the signal
`approval`, and the directory for screenshots.

  signal   the runs page lists the run; clicking it opens its page (tab A,
           marked so a reload would show); in tab B the signal form is
           filled in and sent, the answer says `applied` with exit code 0;
           tab A then shows the run completed without a reload (the live
           stream), its graph's final node coloured done.
  refused  a page of another origin POSTs the signal form to the server:
           refused (403 ui.origin-refused); a script on the server's own
           origin POSTs without the CSRF token: refused (ui.csrf-missing).
           The shell checks that the run did not change.

Screenshots: ui-runs.png, ui-run.png, ui-refused.png. Exit 0 when every
check holds, 1 otherwise (the reason on stderr)."""
import http.server
import json
import os
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402


def js(s):
    return json.dumps(s)


def case_signal(b, url, run, shots):
    a = b.tab(url)
    a.wait("document.querySelector('a.run-link[href=\"/runs/%s\"]') !== null" % run,
           "the runs page lists the run")
    a.wait("document.querySelector('link[rel=stylesheet]').sheet !== null", "the CSS loaded")
    a.screenshot(os.path.join(shots, "ui-runs.png"))
    a.eval("document.querySelector('a.run-link[href=\"/runs/%s\"]').click()" % run)
    a.wait("location.pathname === '/runs/%s' && document.readyState === 'complete'" % run,
           "the run's page opens")
    a.wait("document.getElementById('run-status').textContent === 'waiting'",
           "the run's page says waiting")
    a.wait("document.querySelector('#graph svg') !== null", "the run's graph is on its page")
    a.eval("window.__noReload = 'kept'")

    bt = b.tab(url + "runs/" + run)
    bt.wait("document.querySelector('#form-signal') !== null", "the signal form")
    name = bt.eval("document.querySelector('#form-signal input[name=name]').value")
    if name != "approval":
        raise cdp.Failure("the signal form names %r, want the signal the run waits for" % name)
    bt.eval("document.querySelector('#form-signal input[name=outcome]').value = 'approved'")
    bt.eval("document.querySelector('#form-signal textarea[name=data]').value = %s"
            % js('{"by": "browser"}'))
    bt.eval("document.querySelector('#form-signal button[type=submit]').click()")
    answer = bt.wait("document.getElementById('answer') && document.getElementById('answer').textContent",
                     "the signal's answer page")
    if "applied" not in answer:
        raise cdp.Failure("the answer says %r, want applied" % answer)
    if "exit code 0" not in bt.eval("document.body.innerText"):
        raise cdp.Failure("the answer does not give the CLI's exit code")

    a.wait("document.getElementById('run-status').textContent === 'completed'",
           "the open run page shows the run completed (live, no reload)", timeout=60)
    if a.eval("window.__noReload") != "kept":
        raise cdp.Failure("the run page was reloaded instead of updated live")
    done = a.eval("Array.from(document.querySelectorAll('#graph g.node')).filter("
                  "g => g.querySelector('title').textContent === 'done').map("
                  "g => (g.querySelector('polygon,ellipse,path') || {}).getAttribute('fill'))[0]")
    if not done or done.lower() in ("none", "#ffffff", "white"):
        raise cdp.Failure("the graph's node done is not coloured (fill %r)" % done)
    if '"browser"' not in a.eval("document.getElementById('run-result').textContent"):
        raise cdp.Failure("the result on the page lacks the signal's data")
    a.screenshot(os.path.join(shots, "ui-run.png"))


class Foreign(http.server.BaseHTTPRequestHandler):
    """A page of another origin that POSTs the signal form to the server."""
    target = ""

    def do_GET(self):
        page = ("<!doctype html><title>elsewhere</title><form id=f method=post action=%s>"
                "<input name=name value=approval><input name=outcome value=approved>"
                "<input name=csrf value=guess></form>" % self.target).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


def case_refused(b, url, run, shots):
    Foreign.target = url + "runs/" + run + "/signal"
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Foreign)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        t = b.tab(url)  # the session cookie of the server is set
        t.wait("document.querySelector('table.runs, p.empty') !== null", "the runs page")
        t.go("http://127.0.0.1:%d/" % srv.server_address[1])
        t.wait("document.getElementById('f') !== null", "the foreign page")
        t.eval("document.getElementById('f').submit()")
        t.wait("location.href.indexOf(%s) === 0 && document.readyState === 'complete'" % js(url),
               "the foreign form reached the server")
        text = t.wait("document.body && document.body.innerText", "the refusal page")
        if "ui.origin-refused" not in text or "Nothing was changed" not in text:
            raise cdp.Failure("a POST from another origin was not refused: %r" % text[:300])
        t.screenshot(os.path.join(shots, "ui-refused.png"))
    finally:
        srv.shutdown()
        srv.server_close()
    t.go(url + "runs/" + run)
    t.wait("document.getElementById('run-status') !== null", "the run's page")
    answer = t.eval("fetch('/runs/%s/signal', {method: 'POST', headers: {'Accept': 'application/json',"
                    " 'Content-Type': 'application/x-www-form-urlencoded'},"
                    " body: 'name=approval&outcome=approved'}).then(r => r.text().then("
                    "x => r.status + ' ' + x))" % run)
    if not answer.startswith("403 ") or json.loads(answer[4:])["error"]["code"] != "ui.csrf-missing":
        raise cdp.Failure("a POST without the CSRF token was not refused: %r" % answer)


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("signal", "refused"):
        print("usage: browser.py signal|refused <url> <runId> <screenshot dir>", file=sys.stderr)
        return 2
    case, url, run, shots = sys.argv[1:]
    binary = cdp.find_chromium()
    os.makedirs(shots, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="spore-chromium-") as profile:
        b = cdp.Browser(binary, profile, os.path.join(shots, "chromium-%s.log" % case))
        try:
            (case_signal if case == "signal" else case_refused)(b, url, run, shots)
        except cdp.Failure as e:
            print("FAIL (%s): %s" % (case, e), file=sys.stderr)
            return 1
        finally:
            b.close()
    print("browser %s: all checks passed" % case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
