# checks.jq - the crash suite's assertions on one finished scenario
# (engine.md H6, cli.md §6). Prints one line per failed assertion; nothing
# when the scenario passed.
#
# Arguments (jq --slurpfile / --argjson):
#   $ref     [status]  `spore status --json` of the uninterrupted reference run
#   $st      [status]  `spore status --json` of this scenario's run at the end
#   $ev      [events]  `spore events --json` of this scenario's run
#   $exec    text      exec.log: lines "<node> <attempt> <effect key>"
#   $deploy  text      deploy.log: one effect key per deploy
#   $trace   [entries] one per spore invocation the driver made:
#                      {inv, kind, rc, crashed, fp, fired, status (after a crash, or null)}
#   $armed   string    the failpoint this scenario arms ("" for a SIGKILL scenario)
#   $maps    [names]   the workflow's map nodes (one invocation per item; format 0.2)

def dropped: [.diagnostics[].code]
  | any(. == "result.stale" or . == "resolve.not-applicable" or . == "event.ignored-terminal"
        or . == "signal.outcome-unrouted" or . == "signal.buffer-overflow");

def lines: split("\n") | map(select(length > 0));

# The deploy invocation a status shows in flight, or null: 0.1 has one
# `invocation` at the `position`; 0.2 lists `invocations`.
def deploy_inv:
  if . == null then null
  elif .position.nodeId? == "deploy" and .invocation != null then .invocation
  else ((.invocations // []) | map(select(.nodeId == "deploy")) | .[0]) end;

($ref[0]) as $ref | ($st[0]) as $st | ($ev[0].events) as $events
| ($deploy | lines) as $deploy
| ($exec | lines | map(split(" ") | {node: .[0], attempt: (.[1] | tonumber), key: .[2]})) as $runs
| ($events | length) as $n
| [
    # -- the final state equals the uninterrupted run's --
    (if $st.status != $ref.status then "final status \($st.status) differs from the reference's \($ref.status)" else empty end),
    (if $st.result != $ref.result then "final result \($st.result | tojson) differs from the reference's \($ref.result | tojson)" else empty end),
    (if $st.nodes != $ref.nodes then "node results \($st.nodes | tojson) differ from the reference's \($ref.nodes | tojson)" else empty end),
    (if $st.quarantine != null then "the run is quarantined: \($st.quarantine | tojson)" else empty end),

    # -- events gapless, all consumed, revisions 1..N gapless --
    (($events | map(.sequence | tonumber)) as $seq
     | if $seq != [range(1; $n + 1)] then "event sequences are not 1..\($n): \($seq)" else empty end),
    ($events | map(select(.consumedRevision == null) | "\(.sequence):\(.kind)")
     | if length > 0 then "events never consumed: \(join(", "))" else empty end),
    (($events | map(.consumedRevision // empty | tonumber) | sort) as $revs
     | if $revs != [range(1; $n + 1)] then "consumed revisions are not 1..\($n), each once: \($revs)" else empty end),
    (if ($st.revision | tonumber) != $n then "revision \($st.revision) but \($n) events" else empty end),

    # -- per activity node and invocation (a map node has one per item): what
    #    ran, what was accepted --
    ( ["fetch", "build", "deploy"][] as $node
      | ($runs | map(select(.node == $node))) as $all
      | if ($all | length) == 0 then "\($node) never ran" else
        ($all | map(.key) | unique) as $keys
        | (if ($keys | length) != 1 and ($maps | index($node)) == null
           then "\($node) ran with \($keys | length) effect keys: \($keys)" else empty end),
          ( $keys[] as $inv
            | ($all | map(select(.key == $inv))) as $mine
            | ($mine | map(.attempt)) as $attempts
            | ($events | map(select(.kind == "activity.result" and .payload.invocationId == $inv))) as $results
            | ($results | map(select(.consumedRevision != null and .payload.status == "success" and (dropped | not)))) as $accepted
            | ($events | map(select(.kind == "invocation.resolved" and .payload.invocationId == $inv
                                    and .payload.resolution.action == "complete"
                                    and .consumedRevision != null and (dropped | not)))) as $resolved
            | (if ($attempts | unique | length) != ($attempts | length) then "\($node) \($inv) ran one attempt number twice: \($attempts)" else empty end),
              (if $node != "deploy" and (($attempts | length) > 3 or ($attempts | max) > 3)
               then "idempotent \($node) ran \($attempts | length) times (attempts \($attempts)), more than maxAttempts 3" else empty end),
              (if (($accepted | length) + ($resolved | length)) != 1
               then "\($node) \($inv): \($accepted | length) accepted results and \($resolved | length) completing resolutions, not exactly one" else
                 (if ($accepted | length) == 1 then $accepted[0].payload.attempt
                  else ($results | map(.payload.attempt) | max) end) as $last
                 | ($attempts | map(select(. > $last))) as $again
                 | (if ($again | length) > 0
                    then "\($node) \($inv) ran again (attempts \($again)) after its result from attempt \($last) was accepted" else empty end),
                   (if ($accepted | length) == 1 and ($attempts | index($last)) == null
                    then "\($node) \($inv): the accepted result of attempt \($last) has no execution behind it" else empty end)
               end),
              ($attempts[] as $a
               | if ($results | map(select(.payload.attempt == $a and .consumedRevision != null)) | length) != 1
                 then "\($node) \($inv) attempt \($a) ran, but not exactly one result of it was recorded and consumed" else empty end),
              (if $node == "deploy" and $deploy != [$inv]
               then "the unsafe deploy ran \($deploy | length) times (deploy log \($deploy), effect key \($inv))" else empty end) )
        end ),

    # -- a deploy claimed but unreported at crash time makes the next run exit 4 --
    ( ($runs | map(select(.node == "deploy")) | .[0].key // "") as $dinv
      | ($events | map(select(.kind == "activity.result" and .payload.invocationId == $dinv
                              and .payload.status == "expired") | .payload.attempt)) as $expired
      | ( $trace | to_entries[] | select(.value.crashed) as {key: $i, value: $c}
          | ($c.status | deploy_inv) as $di
          | select($di != null and $di.state == "scheduled"
                   and ($expired | index($di.attempt)) != null)
          | ($trace[$i + 1:] | map(select(.kind == "run" and (.crashed | not))) | .[0]) as $next
          | if $next == null or $next.rc != 4
            then "deploy attempt \($di.attempt) was claimed but unreported when invocation \($c.inv) crashed, yet the next run exited \($next.rc // "never"), not 4"
            else empty end ),
        ( if ($trace | any(.kind == "run" and .rc == 4)) and ($expired | length) == 0
          then "a run exited 4 although no deploy attempt was left unreported" else empty end ),
        ( $trace[] | select(.fired and .fp == $armed
                            and ($armed | test("^host[.]attempt[.]after-(claim|effect)$"))
                            and (.status | deploy_inv) != null)
          | (.status | deploy_inv).attempt as $a
          | if ($expired | index($a)) == null
            then "\($armed) fired at deploy attempt \($a), but that attempt did not expire"
            elif ($trace | any(.kind == "run" and .rc == 4)) | not
            then "\($armed) fired at deploy, but the scenario never passed through exit 4"
            else empty end ) )
  ]
| .[]
