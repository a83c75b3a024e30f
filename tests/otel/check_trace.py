#!/usr/bin/env python3
"""check_trace.py - the trace of one run as the receiver recorded it.

usage: check_trace.py <spans.jsonl> <tenant> <runId> <traceparents file> <service>

Checks, with the trace identities recomputed here from docs/tracing.md
(hash(tag, parts) = SHA-256("runspore/v1/" + tag + NUL + for each part:
u64be(len) + part)): every span is in the run's trace; span IDs are unique;
one root, the run span; every parent was exported; the run span ended
completed; attempt spans carry the spore.* attributes; flaky's attempt 1
failed and attempt 2 succeeded under the same invocation; the signal is a
span event; each TRACEPARENT a step printed names the trace and an exported
span of that step and attempt. Prints what failed and exits 1.
"""
import hashlib
import json
import struct
import sys


def frame(tag, *parts):
    h = hashlib.sha256(b"runspore/v1/" + tag.encode() + b"\0")
    for p in parts:
        p = p.encode()
        h.update(struct.pack(">Q", len(p)) + p)
    return h.hexdigest()


failures = []


def need(cond, what):
    if not cond:
        failures.append(what)
    return cond


def attrs(span):
    out = {}
    for a in span.get("attributes", []):
        (kind, value), = a["value"].items()
        out[a["key"]] = int(value) if kind == "intValue" else value
    return out


def main():
    path, tenant, run_id, tp_path, service = sys.argv[1:6]
    spans = [json.loads(line) for line in open(path)]
    trace = frame("trace", tenant, run_id)[:32]
    run_span = frame("span.run", tenant, run_id)[:16]
    mine = [s for s in spans if attrs(s).get("spore.run.id") == run_id]
    need(mine, f"no span of run {run_id}")
    for s in mine:
        need(s["traceId"] == trace, f"span {s['name']} in trace {s['traceId']}, want {trace}")
        need(s["service"] == service, f"span {s['name']} of service {s['service']}")
    ids = [s["spanId"] for s in mine]
    need(len(ids) == len(set(ids)), f"span IDs exported twice: {sorted(i for i in ids if ids.count(i) > 1)}")
    by_id = {s["spanId"]: s for s in mine}
    roots = [s for s in mine if "parentSpanId" not in s]
    need([r["spanId"] for r in roots] == [run_span],
         f"roots {[(r['name'], r['spanId']) for r in roots]}, want the run span {run_span}")
    for s in mine:
        if "parentSpanId" in s:
            need(s["parentSpanId"] in by_id, f"span {s['name']} {s['spanId']}: parent {s['parentSpanId']} was not exported")
    if need(run_span in by_id, "no run span"):
        r = by_id[run_span]
        need(attrs(r).get("spore.run.status") == "completed", f"run span status {attrs(r)}")
        need(r["status"]["code"] == 1, f"run span status code {r['status']}")
        need(r["name"] == "run", f"run span name {r['name']}")
    turns = [s for s in mine if s["name"].startswith("turn ")]
    for t in turns:
        seq = str(attrs(t)["spore.event.sequence"])
        need(t["spanId"] == frame("span.turn", tenant, run_id, seq)[:16], f"turn span {t['name']} id")
        need(t.get("parentSpanId") == run_span, f"turn span {t['name']} parent")
    steps = [s for s in mine if s["name"].startswith("step ")]
    flaky = sorted((s for s in steps if attrs(s).get("spore.node.id") == "flaky"),
                   key=lambda s: attrs(s)["spore.attempt"])
    if need(len(flaky) == 2, f"{len(flaky)} flaky attempt spans, want 2"):
        a1, a2 = attrs(flaky[0]), attrs(flaky[1])
        for a in (a1, a2):
            need(a.get("spore.action.kind") == "command" and a.get("spore.effect") == "idempotent"
                 and a.get("spore.action.id") == "flaky" and a.get("spore.attempt.end") == "settled",
                 f"flaky attempt attributes {a}")
        need(a1["spore.attempt"] == 1 and a1.get("spore.outcome") == "failure" and
             a1.get("spore.error.code", "").startswith("command."), f"flaky attempt 1: {a1}")
        need(flaky[0]["status"]["code"] == 2, f"flaky attempt 1 status {flaky[0]['status']}")
        need(a2["spore.attempt"] == 2 and a2.get("spore.outcome") == "ok" and
             "spore.error.code" not in a2, f"flaky attempt 2: {a2}")
        need(flaky[1]["status"]["code"] == 1, f"flaky attempt 2 status {flaky[1]['status']}")
        need(a1["spore.invocation.id"] == a2["spore.invocation.id"], "flaky attempts of two invocations")
        for s in flaky:
            need(s["spanId"] == frame("span", attrs(s)["spore.attempt.id"])[:16], "attempt span id")
            # one worker committed the turn that scheduled it and ran it: that turn is its parent
            parent = by_id.get(s.get("parentSpanId"), {})
            need(parent.get("name", "").startswith("turn ") and attrs(parent).get("spore.scheduled", 0) >= 1,
                 f"flaky attempt {attrs(s)['spore.attempt']}: parent {parent.get('name')}, want the turn that scheduled it")
    signals = [e for s in turns for e in s.get("events", []) if e["name"] == "signal.received"]
    if need(len(signals) == 1, f"{len(signals)} signal.received span events, want 1"):
        need(attrs(signals[0]).get("spore.signal.name") == "approval" and
             attrs(signals[0]).get("spore.signal.outcome") == "approved", f"signal event {signals[0]}")
    lines = [line.split() for line in open(tp_path) if line.strip()]
    need(lines, "no TRACEPARENT printed by a step")
    for node, attempt, tp in lines:
        parts = tp.split("-")
        if not need(len(parts) == 4 and parts[0] == "00" and parts[3] == "01", f"TRACEPARENT {tp}"):
            continue
        need(parts[1] == trace, f"{node} attempt {attempt}: TRACEPARENT trace {parts[1]}, want {trace}")
        span = by_id.get(parts[2])
        if need(span is not None, f"{node} attempt {attempt}: TRACEPARENT span {parts[2]} was not exported"):
            a = attrs(span)
            need(a.get("spore.node.id", node) == node and a.get("spore.attempt", int(attempt)) == int(attempt),
                 f"{node} attempt {attempt}: its TRACEPARENT names span {span['name']} {a}")
    for f in failures:
        print("trace check:", f)
    kinds = sorted(s["name"] for s in mine)
    print(f"trace {trace}: {len(mine)} spans: {kinds}")
    sys.exit(1 if failures else 0)


main()
