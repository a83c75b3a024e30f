import json, sys, os
OUT = sys.argv[1]
def ev(seq, kind, payload, eid=None, at=None):
    return {"eventId": eid or ("start" if kind == "run.started" else "e%d" % seq), "sequence": str(seq),
            "acceptedAtMs": str(at if at is not None else 1000 + 10*seq), "kind": kind, "payload": payload}
def start(seq=1, inp=None, run="run_1"):
    return {"event": ev(seq, "run.started", {"tenant": "default", "runId": run, "input": inp})}
def result(seq, inv, attempt, status="success", eid=None, **kw):
    p = {"invocationId": inv, "attemptId": "%s.%d" % (inv, attempt), "attempt": attempt, "status": status}
    p.update(kw)
    return {"event": ev(seq, "activity.result", p, eid or "att:%s.%d" % (inv, attempt))}
def signal(seq, name, outcome=None, data=None):
    p = {"name": name}
    if outcome is not None: p["outcome"] = outcome
    if data is not None: p["data"] = data
    return {"event": ev(seq, "signal.received", p, "sig:m%d" % seq)}
def fired(seq, tid, at=None):
    return {"event": ev(seq, "timer.fired", {"timerId": tid}, "tmr:" + tid, at)}
def cancel(seq, reason="stop", by="user:test"):
    return {"event": ev(seq, "run.cancel", {"reason": reason, "requestedBy": by}, "res:c%d" % seq)}
def resolved(seq, inv, resolution):
    return {"event": ev(seq, "invocation.resolved", {"invocationId": inv, "resolution": resolution}, "res:r%d" % seq)}
def write(name, desc, workflow, steps, limits=None):
    d = {"format": "runspore.trace/0.1", "name": name, "description": desc, "workflow": workflow}
    if limits: d["limits"] = limits
    d["steps"] = steps
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(d, f, indent=1)
import hashlib, struct
def h(tag, parts):
    m = hashlib.sha256()
    m.update(b"runspore/v1/" + tag.encode() + b"\x00")
    for p in parts:
        b = p.encode()
        m.update(struct.pack(">Q", len(b)) + b)
    return m.hexdigest()
def inv(act, run="run_1", tenant="default"): return "inv_" + h("invocation", [tenant, run, act])[:32]
def tmr(act, run="run_1", tenant="default"): return "tmr_" + h("timer", [tenant, run, act])[:32]
