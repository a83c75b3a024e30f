#!/usr/bin/env python3
"""skeletons.py OUT - writes the skeletons (workflow + events, no expectations)
of the frozen 0.2 traces into OUT; tests/conformance/make_traces_02.sh fills
them with trace_record. Each skeleton's description says which rule of
workflows-0.2.md it pins down."""
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib import *
os.makedirs(OUT, exist_ok=True)

def act(effect="pure", outcomes=None, retry=None):
    a = {"argv": ["x"], "effect": effect, "kind": "command"}
    if outcomes: a["outcomes"] = outcomes
    if retry: a["retry"] = retry
    return a

def wf(name, start_node, nodes, actions=None, limits=None):
    w = {"format": "spore.workflow/0.2", "name": name, "start": start_node, "nodes": nodes,
         "actions": actions if actions is not None else {"a": act()}}
    if limits: w["limits"] = limits
    return w

def fail_node(code): return {"kind": "fail", "error": {"code": code, "message": code + " happened"}}
def activity(target, action="a", **kw):
    n = {"kind": "activity", "action": action, "outcomes": {"ok": target}}
    n.update(kw); return n
done = {"kind": "complete", "output": {"$get": ["nodes", "gather", "output"]}}

# ---- parallel ----
w = wf("parallel-arrival", "review", {
    "review": {"kind": "parallel", "branches": {"security": "sec", "style": "lint", "tests": "test"}, "join": "gather"},
    "sec": activity("gather"),
    "lint": {"kind": "activity", "action": "check", "outcomes": {"ok": "gather", "red": "fix"}},
    "fix": activity("lint"),
    "test": activity("gather"),
    "gather": {"kind": "join", "outcomes": {"ok": "done", "failed": "report"}},
    "report": fail_node("review.failed"),
    "done": done}, {"a": act(), "check": act(outcomes=["ok", "red"])})
write("01-parallel-arrival-join", "Entering a parallel starts every branch in name order in one transition; branches arrive in any order (style loops once through fix); the join is entered once, when the last arrives, with {branch: {node, outcome, output}}.", w, [
    start(),
    result(2, inv("test/1"), 1, output={"tests": "green"}),
    result(3, inv("lint/1"), 1, outcome="red", output=None),
    result(4, inv("fix/1"), 1, output={"fixed": True}),
    result(5, inv("sec/1"), 1, output={"sec": "clean"}),
    result(6, inv("lint/2"), 1, output={"lint": "clean"})])

w = wf("parallel-branch-failure", "review", {
    "review": {"kind": "parallel", "branches": {"a-fails": "bad", "b-runs": "slow", "c-waits": "hold", "d-sleeps": "nap", "e-quick": "quick"}, "join": "gather"},
    "quick": activity("gather"),
    "bad": {"kind": "activity", "action": "a", "outcomes": {"ok": "gather", "failed": "oops"}},
    "oops": fail_node("branch.broken"),
    "slow": activity("gather"),
    "hold": {"kind": "await-signal", "signal": "go", "timeoutMs": "60000", "outcomes": {"received": "gather", "timeout": "gather"}},
    "nap": {"kind": "sleep", "durationMs": "5000", "outcomes": {"ok": "gather"}},
    "gather": {"kind": "join", "outcomes": {"ok": "done", "failed": "report"}},
    "report": activity("reported"),
    "reported": {"kind": "complete", "output": {"$get": ["nodes", "gather", "output"]}},
    "done": done})
write("02a-parallel-branch-failure-cancels", "The first branch failure (a-fails reaches a fail node through its failed route) stops the others: activity.cancel for b-runs' invocation, timer.cancel for c-waits' deadline and d-sleeps' timer, and the join is entered failed with {error, branch, arrived: e-quick's result}; a late result of the cancelled invocation is result.stale.", w, [
    start(),
    result(2, inv("quick/1"), 1, output="quick"),
    result(3, inv("bad/1"), 1, status="failure", retryable=False, error={"code": "tool.crashed", "message": "boom"}),
    result(4, inv("slow/1"), 1, output="late"),
    result(5, inv("report/1"), 1)])

w = wf("parallel-branch-failure-no-route", "review", {
    "review": {"kind": "parallel", "branches": {"one": "first", "two": "second"}, "join": "gather"},
    "first": activity("gather"),
    "second": {"kind": "activity", "action": "a", "outcomes": {"ok": "broken"}},
    "broken": fail_node("second.broken"),
    "gather": {"kind": "join", "outcomes": {"ok": "done"}},
    "done": done})
write("02b-parallel-branch-failure-no-route", "A branch failure when the join does not route failed: the other branch is cancelled, the join is recorded failed, and the run fails with the branch's error.", w, [
    start(), result(2, inv("second/1"), 1, output=1)])

w = wf("parallel-nested", "outer", {
    "outer": {"kind": "parallel", "branches": {"left": "inner", "right": "r"}, "join": "gather"},
    "inner": {"kind": "parallel", "branches": {"x": "ix", "y": "iy"}, "join": "ijoin"},
    "ix": activity("ijoin"), "iy": activity("ijoin"),
    "ijoin": {"kind": "join", "outcomes": {"ok": "after"}},
    "after": activity("gather"),
    "r": activity("gather"),
    "gather": {"kind": "join", "outcomes": {"ok": "done"}},
    "done": done})
write("03-parallel-nested", "A parallel nested in a branch: its branches are strands of their own; its join continues the outer branch (after), which then arrives at the outer join.", w, [
    start(), result(2, inv("iy/1"), 1, output="y"), result(3, inv("r/1"), 1, output="r"),
    result(4, inv("ix/1"), 1, output="x"), result(5, inv("after/1"), 1, output="a")])

w = wf("parallel-stuck-branch", "review", {
    "review": {"kind": "parallel", "branches": {"one": "first", "two": "second"}, "join": "gather"},
    "first": activity("gather"), "second": activity("gather"),
    "gather": {"kind": "join", "outcomes": {"ok": "done"}}, "done": done})
write("04-parallel-stuck-branch", "A step failure in a branch without a failed route makes the invocation stuck (invocation.stuck); the other branch goes on; status is running while one is authorized, needs-intervention once only the stuck one is left; resolve retry re-authorizes it and the join completes.", w, [
    start(),
    result(2, inv("first/1"), 1, status="failure", retryable=False, error={"code": "tool.bad", "message": "bad input"}),
    result(3, inv("second/1"), 1, output=2),
    resolved(4, inv("first/1"), {"action": "retry"}),
    result(5, inv("first/1"), 2, output=1)])

# ---- map ----
mapnodes = lambda extra_outcomes, conc: {
    "plan": {"kind": "activity", "action": "a", "outcomes": {"ok": "each"}},
    "each": {"kind": "map", "items": {"$get": ["nodes", "plan", "output", "files"]}, "action": "review",
             "input": {"path": {"$get": ["item"]}, "n": {"$get": ["index"]}}, "maxConcurrency": conc,
             "outcomes": dict({"ok": "done"}, **extra_outcomes)},
    "done": {"kind": "complete", "output": {"$get": ["nodes", "each", "output"]}},
    "report": {"kind": "complete", "output": {"failed": {"$get": ["nodes", "each", "output"]}}}}
MA = {"a": act(), "review": act(effect="idempotent", outcomes=["ok", "nit"])}
items = lambda i: inv("each/1#%d" % i)
files = {"files": ["a.c", "b.c", "c.c", "d.c", "e.c"]}
write("05-map-max-concurrency", "A map over 5 items with maxConcurrency 2: two items authorized at entry, the next in index order as one settles (never more than 2 at once); results in item order whatever the settling order.", wf("map-conc", "plan", mapnodes({"failed": "report"}, 2), MA), [
    start(), result(2, inv("plan/1"), 1, output=files),
    result(3, items(1), 1, output={"r": 1}), result(4, items(0), 1, outcome="nit", output={"r": 0}),
    result(5, items(3), 1, output={"r": 3}), result(6, items(2), 1, output={"r": 2}),
    result(7, items(4), 1, output={"r": 4})])
write("06a-map-item-failed-route", "With a failed route on the map, the first failed item cancels the in-flight ones (activity.cancel) and the map leaves through failed with {error, index, results} (unfinished items null).", wf("map-failed", "plan", mapnodes({"failed": "report"}, 3), MA), [
    start(), result(2, inv("plan/1"), 1, output=files),
    result(3, items(0), 1, output="ok0"),
    result(4, items(2), 1, status="failure", retryable=False, error={"code": "review.bad", "message": "cannot"})])
write("06b-map-item-stuck", "Without a failed route on the map a failed item becomes stuck and keeps its place (maxConcurrency 2: one slot left); the others go on; resolve complete settles it and the map completes.", wf("map-stuck", "plan", mapnodes({}, 2), MA), [
    start(), result(2, inv("plan/1"), 1, output={"files": ["a", "b", "c"]}),
    result(3, items(0), 1, status="failure", retryable=False, error={"code": "review.bad", "message": "cannot"}),
    result(4, items(1), 1, output="one"), result(5, items(2), 1, output="two"),
    resolved(6, items(0), {"action": "complete", "outcome": "ok", "output": "zero by hand"})])
write("07a-map-empty", "A map over an empty array completes at once with {results: []}.", wf("map-empty", "plan", mapnodes({}, 2), MA), [
    start(), result(2, inv("plan/1"), 1, output={"files": []})])
w = wf("map-items-invalid", "plan", dict(mapnodes({}, 2), each=dict(mapnodes({}, 2)["each"], maxItems=3)), MA)
write("07b-map-items-not-array", "items that do not evaluate to an array end the run: map.items-invalid with details {type}.", w, [
    start(), result(2, inv("plan/1"), 1, output={"files": "a.c"})])
write("07c-map-items-too-many", "items longer than maxItems (3) end the run: map.items-invalid with details {length}.", w, [
    start(), result(2, inv("plan/1"), 1, output={"files": [1, 2, 3, 4]})])

MAU = {"a": act(), "review": act(effect="unsafe")}
write("07d-map-unsafe-unknown", "An unsafe item whose outcome is unknown needs intervention for that item alone (invocation.unknown, no command); the others go on (status running while one is authorized).", wf("map-unsafe", "plan", mapnodes({}, 3), MAU), [
    start(), result(2, inv("plan/1"), 1, output={"files": ["a", "b"]}),
    result(3, items(0), 1, status="unknown"), result(4, items(1), 1, output="b"),
    resolved(5, items(0), {"action": "complete", "outcome": "ok", "output": "a by hand"})])

# ---- timers ----
w = wf("sleep", "nap", {
    "nap": {"kind": "sleep", "durationMs": "3600000", "outcomes": {"ok": "wake"}},
    "wake": {"kind": "sleep", "until": {"$get": ["input", "at"]}, "outcomes": {"ok": "done"}},
    "done": {"kind": "complete", "output": {"slept": True}}})
write("08-sleep", "sleep durationMs emits timer.start with dueAtMs = logical now + duration; timer.fired routes ok; sleep until takes the mapped epoch-ms time.", w, [
    start(inp={"at": "9000000"}), fired(2, tmr("nap/1"), at=3601010), fired(3, tmr("wake/1"), at=9000000)])
write("09-timer-stale", "A timer.fired that matches no live timer (fired already, or unknown) is the diagnostic timer.stale and nothing else.", w, [
    start(inp={"at": "9000000"}), fired(2, tmr("nap/1")), fired(3, tmr("nap/1")), fired(4, "tmr_00000000000000000000000000000000")])
w = wf("signal-timeout", "ask", {
    "ask": {"kind": "await-signal", "signal": "approval", "timeoutMs": "86400000", "outcomes": {"approved": "done", "timeout": "late"}},
    "done": {"kind": "complete", "output": "approved"},
    "late": {"kind": "complete", "output": {"$get": ["nodes", "ask"]}}})
write("10a-signal-timeout", "await-signal with timeoutMs: parking emits timer.start; the timer firing while the activation waits records {visit, outcome: timeout, output: null} and routes timeout; a signal afterwards finds a terminal run.", w, [
    start(), fired(2, tmr("ask/1")), signal(3, "approval", "approved")])
w = wf("signal-before-timeout", "ask", dict(w["nodes"], ask=dict(w["nodes"]["ask"], outcomes={"approved": "deploy", "timeout": "late"}), deploy=activity("done")))
write("10b-signal-before-timeout", "A signal taken before the deadline routes and cancels the timer (timer.cancel); the timer firing anyway (a race with the cancel) is timer.stale and nothing else.", w, [
    start(), signal(2, "approval", "approved", {"by": "ann"}), fired(3, tmr("ask/1")), result(4, inv("deploy/1"), 1)])
w = wf("signal-first-waiter", "both", {
    "both": {"kind": "parallel", "branches": {"a": "slow", "b": "wait-b"}, "join": "gather"},
    "slow": activity("wait-a"),
    "wait-a": {"kind": "await-signal", "signal": "go", "outcomes": {"received": "gather"}},
    "wait-b": {"kind": "await-signal", "signal": "go", "outcomes": {"received": "gather"}},
    "gather": {"kind": "join", "outcomes": {"ok": "done"}}, "done": done})
write("10c-signal-first-waiter", "A signal is taken by the waiting activation that began waiting first (branch b waits from the start, a only after its step); the next one goes to a; each is consumed exactly once.", w, [
    start(), result(2, inv("slow/1"), 1), signal(3, "go", data="first"), signal(4, "go", data="second")])

# ---- cancellation ----
w = wf("cancel", "fan", {
    "fan": {"kind": "parallel", "branches": {"a": "one", "b": "two", "c": "nap"}, "join": "gather"},
    "one": activity("gather"), "two": activity("gather"),
    "nap": {"kind": "sleep", "durationMs": "1000", "outcomes": {"ok": "gather"}},
    "gather": {"kind": "join", "outcomes": {"ok": "done"}}, "done": done})
write("11a-cancel-running", "run.cancel while two invocations run and a timer is live: activity.cancel for each, timer.cancel, status cancelled with error run.cancelled (message = reason); afterwards nothing is scheduled (a late result is event.ignored-terminal).", w, [
    start(), cancel(2, "no longer needed"), result(3, inv("one/1"), 1)])
w = wf("cancel-terminal", "one", {"one": activity("end"), "end": {"kind": "complete"}})
write("11b-cancel-terminal", "run.cancel on a terminal run changes nothing: event.ignored-terminal.", w, [
    start(), result(2, inv("one/1"), 1), cancel(3)])

# ---- stuck steps, loop limits ----
w = wf("stuck", "work", {"work": activity("end"), "end": {"kind": "complete", "output": {"$get": ["nodes", "work", "output"]}}},
       {"a": act(retry={"maxAttempts": 2})})
write("12a-stuck-then-retry", "A failure with retries exhausted on a node without a failed route makes the invocation stuck (kept error, invocation.stuck, status needs-intervention) instead of failing the run; resolve retry starts a new attempt at once regardless of maxAttempts; its success completes the run.", w, [
    start(), result(2, inv("work/1"), 1, status="failure"),
    result(3, inv("work/1"), 2, status="failure", error={"code": "tool.down", "message": "down"}),
    resolved(4, inv("work/1"), {"action": "retry"}), result(5, inv("work/1"), 3, output="done")])
write("12b-stuck-then-fail", "resolve fail on a stuck invocation ends the run with the kept error; a resolve of a scheduled invocation is not applicable.", w, [
    start(), resolved(2, inv("work/1"), {"action": "retry"}),
    result(3, inv("work/1"), 1, status="failure", retryable=False, error={"code": "tool.bad", "message": "bad"}),
    resolved(4, inv("work/1"), {"action": "fail", "error": {"code": "operator.failed", "message": "given up"}})])
w = wf("loop-limit", "check", {
    "check": {"kind": "activity", "action": "check", "loopLimits": {"red": 2}, "outcomes": {"ok": "end", "red": "fix", "exhausted": "giveup"}},
    "fix": activity("check"),
    "end": {"kind": "complete", "output": "green"},
    "giveup": {"kind": "complete", "output": {"gaveUpAfter": {"$get": ["nodes", "check", "visit"]}}}},
    {"a": act(), "check": act(outcomes=["ok", "red"])})
write("13-loop-limit-exhausted", "loopLimits {red: 2}: two red loop-backs are followed (streaks counts them), the third red exhausts: loop.exhausted {outcome, limit} and the exhausted route.", w, [
    start(), result(2, inv("check/1"), 1, outcome="red"), result(3, inv("fix/1"), 1),
    result(4, inv("check/2"), 1, outcome="red"), result(5, inv("fix/2"), 1),
    result(6, inv("check/3"), 1, outcome="red")])

# ---- semantics selection ----
w01 = {"format": "runspore.workflow/0.1", "name": "old", "start": "d", "nodes": {"d": {"kind": "complete"}}}
write("14a-semantics-0.1-package", "Under semantics 0.2 a runspore.workflow/0.1 package is incompatible-version/version.semantics (even before the codec check); the default semantics of a 0.1 workflow stays 0.1.", w01, [
    dict(start(), identity={"semanticsVersion": "0.2"}),
    dict(start(), identity={"semanticsVersion": "0.2", "codecVersion": "jcs/2"}),
    start()])
w = wf("sem", "d", {"d": {"kind": "sleep", "durationMs": "1", "outcomes": {"ok": "e"}}, "e": {"kind": "complete"}})
write("14b-semantics-0.2-package", "Under semantics 0.1 a spore.workflow/0.2 package fails W01 (workflow.invalid); under 0.2 (the default for it) it runs; a runspore.state/0.1 snapshot is version.state-format.", w, [
    dict(start(), identity={"semanticsVersion": "0.1"}),
    start(),
    dict(fired(2, tmr("d/1")), snapshotRaw='{"format":"runspore.state/0.1","semantics":"0.1"}'),
    {"event": ev(2, "signal.received", {"name": "x"}, "sig:x")}])

# ---- validation ----
def invalid(name, desc, nodes, actions=None, start_node="s", limits=None):
    write(name, desc, wf(name, start_node, nodes, actions, limits), [start()])
end = {"kind": "complete"}
invalid("15-validation-W07-exhausted", "W07 (0.2): exhausted is reserved, never an action outcome.",
        {"s": {"kind": "activity", "action": "b", "outcomes": {"ok": "e", "exhausted": "e"}}, "e": end},
        {"b": act(outcomes=["ok", "exhausted"])})
invalid("15-validation-W08-exhausted-route", "W08 (0.2): exhausted is a route key only on a node with loopLimits.",
        {"s": {"kind": "activity", "action": "a", "outcomes": {"ok": "e", "exhausted": "e"}}, "e": end})
invalid("15-validation-W12-loop-limits", "W12: a loop limit's value + 1 must not exceed maxVisitsPerNode.",
        {"s": {"kind": "activity", "action": "a", "loopLimits": {"ok": 4}, "outcomes": {"ok": "s", "exhausted": "e"}}, "e": end},
        limits={"maxVisitsPerNode": 4})
invalid("15-validation-W14-parallel", "W14: a parallel's join must name a join node.",
        {"s": {"kind": "parallel", "branches": {"a": "x"}, "join": "e"}, "x": activity("e"), "e": end})
invalid("15-validation-W15-join", "W15: a join routes ok (and failed at most).",
        {"s": {"kind": "parallel", "branches": {"a": "x"}, "join": "j"}, "x": activity("j"),
         "j": {"kind": "join", "outcomes": {"ok": "e", "timeout": "e"}}, "e": end})
invalid("15-validation-W16-map", "W16: maxConcurrency is 1..=64.",
        {"s": {"kind": "map", "items": [], "action": "a", "maxConcurrency": 65, "outcomes": {"ok": "e"}}, "e": end})
invalid("15-validation-W17-sleep", "W17: a sleep node has exactly one of durationMs and until.",
        {"s": {"kind": "sleep", "durationMs": "1", "until": "5", "outcomes": {"ok": "e"}}, "e": end})
invalid("15-validation-W18-timeout", "W18: an await-signal with timeoutMs must route timeout.",
        {"s": {"kind": "await-signal", "signal": "go", "timeoutMs": "10", "outcomes": {"received": "e"}}, "e": end})
par = lambda branches, join="j": {"kind": "parallel", "branches": branches, "join": join}
J = {"kind": "join", "outcomes": {"ok": "e"}}
invalid("15-validation-W19-disjoint", "W19: the branch regions of one parallel are disjoint.",
        {"s": par({"a": "x", "b": "y"}), "x": activity("y"), "y": activity("j"), "j": J, "e": end})
invalid("15-validation-W19-complete-in-region", "W19: a branch region never contains a complete node.",
        {"s": par({"a": "x"}), "x": {"kind": "activity", "action": "a", "outcomes": {"ok": "j", "failed": "e"}}, "j": J, "e": end})
invalid("15-validation-W19-route-into-region", "W19: no route from outside a region enters it except the parallel's own start.",
        {"s": activity("p"), "p": par({"a": "x"}), "x": activity("y"), "y": activity("j"),
         "j": {"kind": "join", "outcomes": {"ok": "e", "failed": "y"}}, "e": end}, start_node="s")
invalid("15-validation-W19-nested-join", "W19: a nested parallel and its join lie inside one region.",
        {"s": par({"a": "q", "b": "z"}), "q": par({"c": "x"}, "j"), "x": activity("j"),
         "z": activity("j"), "j": J, "e": end})
deep = {"e": end}
for d in range(9):
    deep["p%d" % d] = par({"a": "p%d" % (d + 1) if d < 8 else "leaf"}, "j%d" % d)
    deep["j%d" % d] = {"kind": "join", "outcomes": {"ok": "j%d" % (d - 1) if d else "e"}}
deep["leaf"] = activity("j8")
invalid("15-validation-W19-depth", "W19: parallels nest at most 8 deep (9 here).", deep, start_node="p0")
invalid("15-validation-W19-join-owner", "W19: each join belongs to exactly one parallel (this one to none).",
        {"s": par({"a": "x"}), "x": activity("j"), "j": J, "orphan": {"kind": "join", "outcomes": {"ok": "e"}}, "e": end})
invalid("15-validation-W13-shape", "W13: outputSchemas keys are outcomes the node can produce (never failed).",
        {"s": {"kind": "activity", "action": "a", "outputSchemas": {"failed": {"type": "object"}}, "outcomes": {"ok": "e", "failed": "e"}}, "e": end})
invalid("15-validation-W13-invalid-schema", "W13: a schema outside the subset of kernel.md §5 is workflow.invalid-schema.",
        {"s": {"kind": "activity", "action": "a", "outputSchemas": {"ok": {"type": "number"}}, "outcomes": {"ok": "e"}}, "e": end})
invalid("15-validation-W13-shared-signal", "W13: await-signal nodes waiting on the same signal declare equal schemas per shared outcome.",
        {"s": {"kind": "await-signal", "signal": "go", "outputSchemas": {"received": {"type": "object"}}, "outcomes": {"received": "t"}},
         "t": {"kind": "await-signal", "signal": "go", "outputSchemas": {"received": {"type": "string"}}, "outcomes": {"received": "e"}}, "e": end})
write("15-validation-W13-valid", "A package whose output schemas are inside the subset runs; the kernel never checks data against them (the engine does).",
      wf("schemas", "s", {"s": {"kind": "activity", "action": "a", "outputSchemas": {"ok": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"], "additionalProperties": False}}, "outcomes": {"ok": "e"}}, "e": {"kind": "complete", "output": {"$get": ["nodes", "s", "output"]}}}),
      [start(), result(2, inv("s/1"), 1, output={"n": 3})])
