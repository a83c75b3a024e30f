#!/usr/bin/env python3
"""otlp_receiver.py - a local OTLP/HTTP JSON receiver for spore's tracing tests.

usage: otlp_receiver.py <dir> ok|hang

Listens on 127.0.0.1 on a free port and writes the port to <dir>/port.
  ok:   every POST /v1/traces body is checked against the OTLP/JSON shape
        (ids as lowercase hex of the right length and not zero, times as
        decimal strings of nanoseconds with end >= start, known span kinds and
        status codes, attribute values as one-member value objects, no
        unknown span members). A valid request is answered 200 and each of
        its spans appended as one JSON line to <dir>/spans.jsonl (with the
        resource's service.name); an invalid one is answered 400 and the
        reason appended to <dir>/errors.txt (the test fails on it).
  hang: accepts connections, reads nothing, never answers.
Only the Python standard library.
"""
import json
import os
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HEX = re.compile(r"^[0-9a-f]+$")
DIGITS = re.compile(r"^(0|[1-9][0-9]*)$")
SPAN_KEYS = {"traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind",
             "startTimeUnixNano", "endTimeUnixNano", "attributes", "droppedAttributesCount",
             "events", "droppedEventsCount", "links", "droppedLinksCount", "status"}
VALUE_KEYS = {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
              "kvlistValue", "bytesValue"}
BODY_MAX = 16 << 20


class Invalid(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Invalid(what)


def check_id(value, length, what):
    need(isinstance(value, str) and len(value) == length and HEX.match(value)
         and value != "0" * length, f"{what}: {value!r} is not {length} lowercase hex, non-zero")


def check_nanos(value, what):
    need(isinstance(value, str) and DIGITS.match(value), f"{what}: {value!r} is not a decimal string")
    return int(value)


def check_value(v, what):
    need(isinstance(v, dict) and len(v) == 1 and set(v) <= VALUE_KEYS, f"{what}: bad value {v!r}")
    (key, inner), = v.items()
    if key == "stringValue":
        need(isinstance(inner, str), f"{what}: stringValue not a string")
    elif key == "intValue":
        need((isinstance(inner, str) and re.match(r"^-?[0-9]+$", inner)) or
             (isinstance(inner, int) and not isinstance(inner, bool)), f"{what}: intValue {inner!r}")
    elif key == "boolValue":
        need(isinstance(inner, bool), f"{what}: boolValue")


def check_attributes(attrs, what):
    need(isinstance(attrs, list), f"{what}: attributes not a list")
    keys = set()
    for a in attrs:
        need(isinstance(a, dict) and set(a) == {"key", "value"} and isinstance(a["key"], str)
             and a["key"], f"{what}: attribute {a!r}")
        need(a["key"] not in keys, f"{what}: attribute {a['key']} twice")
        keys.add(a["key"])
        check_value(a["value"], f"{what} {a['key']}")


def check_span(s):
    need(isinstance(s, dict), "span not an object")
    need(set(s) <= SPAN_KEYS, f"span: unknown members {sorted(set(s) - SPAN_KEYS)}")
    check_id(s.get("traceId"), 32, "traceId")
    check_id(s.get("spanId"), 16, "spanId")
    if "parentSpanId" in s:
        check_id(s["parentSpanId"], 16, "parentSpanId")
    need(isinstance(s.get("name"), str) and s["name"], "span name")
    need(s.get("kind") in (0, 1, 2, 3, 4, 5), f"span kind {s.get('kind')!r}")
    start = check_nanos(s.get("startTimeUnixNano"), "startTimeUnixNano")
    end = check_nanos(s.get("endTimeUnixNano"), "endTimeUnixNano")
    need(start > 0 and end >= start, f"span times {start}..{end}")
    check_attributes(s.get("attributes", []), "span")
    for e in s.get("events", []):
        need(isinstance(e, dict) and isinstance(e.get("name"), str) and e["name"], f"event {e!r}")
        check_nanos(e.get("timeUnixNano"), "event timeUnixNano")
        check_attributes(e.get("attributes", []), "event")
    if "status" in s:
        st = s["status"]
        need(isinstance(st, dict) and st.get("code", 0) in (0, 1, 2) and
             set(st) <= {"code", "message"}, f"status {st!r}")
        need(isinstance(st.get("message", ""), str), "status message")


def check_request(body):
    need(isinstance(body, dict) and set(body) == {"resourceSpans"}, "not {resourceSpans}")
    rs = body["resourceSpans"]
    need(isinstance(rs, list) and rs, "resourceSpans empty")
    out = []
    for r in rs:
        attrs = r.get("resource", {}).get("attributes", [])
        check_attributes(attrs, "resource")
        service = [a["value"].get("stringValue") for a in attrs if a["key"] == "service.name"]
        need(len(service) == 1 and service[0], "resource without service.name")
        need(isinstance(r.get("scopeSpans"), list) and r["scopeSpans"], "scopeSpans empty")
        for ss in r["scopeSpans"]:
            need(isinstance(ss.get("scope", {}), dict), "scope")
            need(isinstance(ss.get("spans"), list) and ss["spans"], "spans empty")
            for s in ss["spans"]:
                check_span(s)
                out.append(dict(s, service=service[0]))
    return out


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, text):
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        d = self.server.dir
        try:
            need(self.path == "/v1/traces", f"path {self.path}")
            need(self.headers.get("Content-Type", "").startswith("application/json"),
                 "Content-Type is not application/json")
            n = int(self.headers.get("Content-Length", "-1"))
            need(0 < n <= BODY_MAX, f"Content-Length {n}")
            need(self.headers.get("X-Test-Header") == self.server.want_header,
                 f"X-Test-Header {self.headers.get('X-Test-Header')!r}")
            spans = check_request(json.loads(self.rfile.read(n)))
        except (Invalid, ValueError) as e:
            with self.server.lock, open(f"{d}/errors.txt", "a") as f:
                f.write(f"{e}\n")
            self.answer(400, json.dumps({"error": str(e)}))
            return
        with self.server.lock, open(f"{d}/spans.jsonl", "a") as f:
            for s in spans:
                f.write(json.dumps(s, sort_keys=True) + "\n")
        self.answer(200, "{}")


def write_port(d, port):
    with open(f"{d}/port.tmp", "w") as f:
        f.write(str(port))
    os.rename(f"{d}/port.tmp", f"{d}/port")


def hang(d):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    write_port(d, srv.getsockname()[1])
    held = []
    while True:
        conn, _ = srv.accept()
        held.append(conn)  # never read, never answered, never closed


def main():
    d, mode = sys.argv[1], sys.argv[2]
    if mode == "hang":
        hang(d)
        return
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.dir = d
    srv.lock = threading.Lock()
    srv.want_header = sys.argv[3] if len(sys.argv) > 3 else None
    write_port(d, srv.server_address[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
