#!/usr/bin/env bash
# soak.sh - the long mixed run of issue 6 (`make soak SOAK_SECONDS=600`; not
# part of make check).
#
# Starts tickd at 60 Hz on a private socket and, for SOAK_SECONDS, drives it
# with a scripted mix through tickctl: spawns (every built-in class but
# burner, with components, intervals and life spans) and destroys around a
# steady population, interval/group/enabled changes, prerequisites, timers
# with actions (set, paused, cleared, firing spawns), tickables, subscribers
# that connect and vanish (killed without unsubscribing; some stopped so they
# never read), a runaway self-spawner in a level that is removed at once,
# and bad input (unknown methods, bad params, unknown ids, state errors;
# raw junk lines too when socat or an `nc -U` is installed).  It samples the
# daemon every SAMPLE_S seconds and checks, after a warm-up:
#   - RSS flat: the last sample within SOAK_RSS_PCT percent of the one at the
#     end of the warm-up (the workload holds the population steady, so growth
#     is a leak or unbounded buffering);
#   - open fds back to the baseline (taken at start, no client connected)
#     once every client is gone;
#   - TPS held: every tps_10s sample >= SOAK_MIN_TPS;
#   - no error log lines except the expected ones (the runaway spawner's,
#     plus SOAK_EXPECTED_ERRORS, an extended regex);
#   - the daemon alive throughout, then a graceful shutdown (exit 0, socket
#     removed).
# Prints a report and "soak: PASS" or "soak: FAIL (...)"; exits 0 or 1 (2 if
# it cannot start).  Needs bash, coreutils, awk, sed, grep and /proc - no
# python, no jq.
#
# Environment: TICKD_BIN, TICKCTL_BIN (default build/tickd, build/tickctl),
# SOAK_SECONDS (600), SOAK_WARMUP (20% of the run, 20..120 s), SOAK_ENTITIES
# (3000), SOAK_MIN_TPS (59), SOAK_RSS_PCT (5), SOAK_EXPECTED_ERRORS (empty),
# SOAK_ROUND_SLEEP (0.05 s between rounds: about 10 rounds, 100 requests a
# second; 0 drives as fast as tickctl can), SOAK_KEEP (1: keep the work
# directory with the daemon's log).
set -u

TICKD_BIN=${TICKD_BIN:-build/tickd}
TICKCTL_BIN=${TICKCTL_BIN:-build/tickctl}
SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_ENTITIES=${SOAK_ENTITIES:-3000}
SOAK_MIN_TPS=${SOAK_MIN_TPS:-59}
SOAK_RSS_PCT=${SOAK_RSS_PCT:-5}
SOAK_EXPECTED_ERRORS=${SOAK_EXPECTED_ERRORS:-}
SOAK_KEEP=${SOAK_KEEP:-0}
SOAK_ROUND_SLEEP=${SOAK_ROUND_SLEEP:-0.05}
SAMPLE_S=10              # seconds between samples
BATCH=25                 # entities spawned and destroyed per round
RUNAWAY_EVERY=60         # seconds between two runaway-spawner episodes
# Error lines the workload provokes on purpose (tick.c's runaway guard).
EXPECTED_RE='runaway recursive spawning'
[ -n "$SOAK_EXPECTED_ERRORS" ] && EXPECTED_RE="$EXPECTED_RE|$SOAK_EXPECTED_ERRORS"

if [ -z "${SOAK_WARMUP:-}" ]; then
  SOAK_WARMUP=$((SOAK_SECONDS / 5))
  [ "$SOAK_WARMUP" -lt 20 ] && SOAK_WARMUP=20
  [ "$SOAK_WARMUP" -gt 120 ] && SOAK_WARMUP=120
fi
if [ "$SOAK_SECONDS" -le "$SOAK_WARMUP" ]; then
  echo "soak: SOAK_SECONDS ($SOAK_SECONDS) must exceed the warm-up ($SOAK_WARMUP s)" >&2
  exit 2
fi
for b in "$TICKD_BIN" "$TICKCTL_BIN"; do
  [ -x "$b" ] || { echo "soak: $b is not built (make, or make soak)" >&2; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tickd-soak.XXXXXX") || exit 2
SOCK=$WORK/tickd.sock
LOG=$WORK/tickd.log
DPID=
WATCHERS=()              # pids of subscriber processes
WATCH_END=()             # when each is to vanish (seconds since start)
WATCH_STOP=()            # when each is to stop reading (0: never, or done)

cleanup() {
  local p
  for p in "${WATCHERS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
    kill -TERM "$DPID" 2>/dev/null
    sleep 1
    kill -KILL "$DPID" 2>/dev/null
  fi
  if [ "$SOAK_KEEP" = 1 ]; then echo "soak: work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now() { echo $((SECONDS - T0)); }
say() { printf 'soak [%4ss] %s\n' "$(now)" "$*"; }

# One request; prints the compact result (empty on error).  Errors are
# counted, not fatal: bad input is part of the mix.
ctl() {
  "$TICKCTL_BIN" --socket "$SOCK" --compact --timeout 10 "$@" 2>>"$WORK/ctl.err"
}
# A request that must succeed (the daemon must answer good requests); a
# failure is recorded in $WORK/fails (callers run it in a subshell).
must() {
  local out
  if ! out=$(ctl "$@"); then
    echo "request failed at $(now)s: $*: $(tail -n 1 "$WORK/ctl.err")" >>"$WORK/fails"
    return 1
  fi
  printf '%s' "$out"
}
# Field of a compact JSON object (numbers and booleans at any depth; first match).
field() { sed -n "s/.*\"$1\":\([-0-9.eE+a-z]*\).*/\1/p" <<<"$2" | head -n 1; }
# The ids array of a spawn result, space-separated.
ids_of() { sed -n 's/.*"ids":\[\([0-9,]*\)\].*/\1/p' <<<"$1" | tr ',' ' '; }

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$DPID/status" 2>/dev/null; }
fd_count() { ls "/proc/$DPID/fd" 2>/dev/null | wc -l; }
alive() { kill -0 "$DPID" 2>/dev/null; }

FAILS=()
T0=$SECONDS

# ---- start ----------------------------------------------------------------------
# The smallest output cap (64 KiB), so that a subscriber that never reads
# reaches it within seconds and its events are dropped.
"$TICKD_BIN" --socket "$SOCK" --tick-rate 60 --log-level info \
  --set "snapshot.path=$WORK/snapshot.json" --set control.max_output=65536 2>"$LOG" &
DPID=$!
for _ in $(seq 100); do
  ctl engine.info >/dev/null && break
  alive || break
  sleep 0.1
done
if ! alive || ! ctl engine.info >/dev/null; then
  echo "soak: tickd did not become ready; its log:" >&2
  cat "$LOG" >&2
  exit 2
fi
sleep 0.5
FD_BASE=$(fd_count)
RSS_START=$(rss_kb)
say "tickd pid $DPID ready: ${RSS_START} kB RSS, $FD_BASE fds; run ${SOAK_SECONDS}s, warm-up ${SOAK_WARMUP}s"

# ---- the workload ----------------------------------------------------------------
QUEUE=()                 # live entity ids we spawned, oldest first
TIMERS=()                # handles of our looping timers
TICKABLES=()             # ids of our tickables
ROUND=0
BAD=0
RAW=
if command -v socat >/dev/null 2>&1; then RAW=socat
elif command -v nc >/dev/null 2>&1 && nc -h 2>&1 | grep -q -- '-U'; then RAW=nc
fi

CLASSES=(counter mover counter mover spawner follower)
TICK_GROUPS=(pre_physics start_physics during_physics end_physics post_physics post_update_work last_demotable)
INTERVALS=(0 0 0 0.05 0.1 0.25 1)

pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
some_id() { [ ${#QUEUE[@]} -gt 0 ] && echo "${QUEUE[RANDOM % ${#QUEUE[@]}]}"; }

spawn_batch() {
  local n=$1 cls out comps target
  cls=$(pick "${CLASSES[@]}")
  comps='[]'
  case $((RANDOM % 3)) in
    1) comps='[{"class":"mover","props":{"vx":1}}]' ;;
    2) comps="[{\"class\":\"counter\",\"tick\":{\"interval\":$(pick "${INTERVALS[@]}"),\"group\":\"$(pick "${TICK_GROUPS[@]}")\"}},{\"class\":\"mover\"}]" ;;
  esac
  local props='{}'
  case $cls in
    spawner) props='{"spawn":{"class":"counter","life_span":0.5},"every":30,"max_total":2}' ;;
    follower)
      target=$(some_id)
      if [ -n "$target" ]; then props="{\"target\":$target}"; else cls=counter; fi ;;
  esac
  out=$(must entity.spawn "{\"class\":\"$cls\",\"count\":$n,\"props\":$props,\"components\":$comps,\"tick\":{\"group\":\"$(pick "${TICK_GROUPS[@]}")\",\"interval\":$(pick "${INTERVALS[@]}")}}") || return
  QUEUE+=($(ids_of "$out"))
}

destroy_oldest() {
  local n=$1 ids
  [ ${#QUEUE[@]} -lt "$n" ] && n=${#QUEUE[@]}
  [ "$n" -eq 0 ] && return
  ids=$(IFS=,; echo "${QUEUE[*]:0:$n}")
  must entity.destroy "{\"ids\":[$ids]}" >/dev/null
  QUEUE=("${QUEUE[@]:$n}")
}

tick_changes() {
  local a b ids
  a=$(some_id) b=$(some_id)
  [ -z "$a" ] && return
  ctl tick.set "{\"id\":$a,\"interval\":$(pick "${INTERVALS[@]}")}" >/dev/null
  ctl tick.set "{\"id\":$b,\"group\":\"$(pick "${TICK_GROUPS[@]}")\",\"enabled\":$([ $((RANDOM % 4)) = 0 ] && echo false || echo true)}" >/dev/null
  ids=$(IFS=,; echo "${QUEUE[*]:$((RANDOM % ${#QUEUE[@]})):20}")
  ctl tick.set "{\"ids\":[$ids],\"interval\":$(pick "${INTERVALS[@]}")}" >/dev/null
  if [ "$a" != "$b" ]; then
    ctl tick.add_prerequisite "{\"id\":$a,\"prerequisite\":$b}" >/dev/null
    [ $((RANDOM % 2)) = 0 ] && ctl tick.remove_prerequisite "{\"id\":$a,\"prerequisite\":$b}" >/dev/null
  fi
}

timer_changes() {
  local out h
  if [ ${#TIMERS[@]} -lt 20 ]; then
    out=$(must timer.set '{"rate":0.5,"loop":true,"action":{"method":"entity.spawn","params":{"class":"mover","life_span":1.5,"props":{"vx":2}}}}') &&
      TIMERS+=("$(field handle "$out")")
  fi
  ctl timer.set "{\"rate\":0.2,\"action\":{\"method\":\"tick.set\",\"params\":{\"id\":$(some_id),\"interval\":0.1}}}" >/dev/null
  ctl timer.set_for_next_tick '{"action":{"method":"world.status"}}' >/dev/null
  if [ ${#TIMERS[@]} -gt 0 ]; then
    h=${TIMERS[RANDOM % ${#TIMERS[@]}]}
    case $((RANDOM % 4)) in
      0) ctl timer.pause "{\"handle\":$h}" >/dev/null ;;
      1) ctl timer.unpause "{\"handle\":$h}" >/dev/null ;;
      2) must timer.clear "{\"handle\":$h}" >/dev/null
         local keep=() t
         for t in "${TIMERS[@]}"; do [ "$t" != "$h" ] && keep+=("$t"); done
         TIMERS=("${keep[@]}") ;;
      *) ctl timer.get "{\"handle\":$h}" >/dev/null ;;
    esac
  fi
}

tickable_changes() {
  local out
  if [ ${#TICKABLES[@]} -lt 10 ]; then
    out=$(must tickable.add "{\"class\":\"$(pick counter mover)\",\"tick_type\":\"$(pick always conditional never)\"}") &&
      TICKABLES+=("$(field id "$out")")
  else
    must tickable.remove "{\"id\":${TICKABLES[0]}}" >/dev/null
    TICKABLES=("${TICKABLES[@]:1}")
  fi
  [ ${#TICKABLES[@]} -gt 0 ] && ctl tickable.set "{\"id\":${TICKABLES[RANDOM % ${#TICKABLES[@]}]},\"enabled\":$(pick true false)}" >/dev/null
}

# Subscribers: connect, and vanish later without unsubscribing.  Some are
# stopped (SIGSTOP) once they have subscribed, so they never read again: the
# server must drop their events, not buffer them without bound.  Those stay
# 60-90 s, long enough to fill the socket buffer and the output cap.
watchers() {
  local i t keep_p=() keep_e=() keep_s=() p st
  for i in "${!WATCHERS[@]}"; do
    p=${WATCHERS[$i]} t=${WATCH_END[$i]} st=${WATCH_STOP[$i]}
    if [ "$(now)" -ge "$t" ]; then
      kill -KILL "$p" 2>/dev/null
      wait "$p" 2>/dev/null
      continue
    fi
    if [ "$st" -gt 0 ] && [ "$(now)" -ge "$st" ]; then
      kill -STOP "$p" 2>/dev/null
      st=0
    fi
    keep_p+=("$p") keep_e+=("$t") keep_s+=("$st")
  done
  WATCHERS=("${keep_p[@]}") WATCH_END=("${keep_e[@]}") WATCH_STOP=("${keep_s[@]}")
  if [ ${#WATCHERS[@]} -lt 4 ]; then
    "$TICKCTL_BIN" --socket "$SOCK" --watch "$(pick frame,stats frame,overrun,log stats,slow_tick,log frame)" \
      >/dev/null 2>&1 &
    p=$!
    local life=$((1 + RANDOM % 10)) stop=0
    if [ $((RANDOM % 3)) = 0 ]; then
      stop=$(( $(now) + 2 ))
      life=$((60 + RANDOM % 31))
    fi
    WATCHERS+=("$p") WATCH_END+=($(( $(now) + life ))) WATCH_STOP+=("$stop")
  fi
}

bad_input() {
  BAD=$((BAD + 8))
  ctl no.such.method >/dev/null
  ctl entity.spawn '{"class":"no_such_class"}' >/dev/null
  ctl entity.spawn '{"class":"counter","count":0}' >/dev/null
  ctl entity.get '{"id":999999999}' >/dev/null
  ctl tick.set '{"id":1,"group":"newly_spawned"}' >/dev/null
  ctl world.step '{"frames":1}' >/dev/null
  ctl level.remove '{"name":"persistent"}' >/dev/null
  ctl timer.set '{"rate":0,"loop":true}' >/dev/null
  if [ -n "$RAW" ]; then
    BAD=$((BAD + 4))
    local junk
    junk=$(printf '%s\n' '{"jsonrpc":"2.0","method":' 'not json at all' '[]' \
      '{"jsonrpc":"2.0","method":"world.status","params":[1],"id":1}')
    if [ "$RAW" = socat ]; then
      printf '%s\n' "$junk" | timeout 5 socat - "UNIX-CONNECT:$SOCK" >/dev/null 2>&1
    else
      printf '%s\n' "$junk" | timeout 5 nc -U -q 1 "$SOCK" >/dev/null 2>&1
    fi
  fi
}

runaway() {
  must level.add '{"name":"soak_runaway"}' >/dev/null || return
  must entity.spawn '{"class":"spawner","level":"soak_runaway","props":{"spawn":"self","every":1,"max_total":1}}' >/dev/null
  sleep 0.2
  must level.remove '{"name":"soak_runaway"}' >/dev/null
}

# Samples: "t rss_kb fds tps_1s tps_10s mspt_p99 entities frame".
SAMPLES=$WORK/samples
sample() {
  local st
  st=$(must engine.stats) || return
  echo "$(now) $(rss_kb) $(fd_count) $(field tps_1s "$st") $(field tps_10s "$st") $(field p99 "$st") $(field entities "$st") $(field frame "$st")" >>"$SAMPLES"
}

# Fill to the steady population, then churn around it.
while [ ${#QUEUE[@]} -lt "$SOAK_ENTITIES" ]; do
  spawn_batch 500
  alive || break
done
say "population ${#QUEUE[@]} entities (+ timer spawns with life spans)"

DEADLINE=$((T0 + SOAK_SECONDS))
NEXT_SAMPLE=$SECONDS
NEXT_RUNAWAY=$((SECONDS + 15))
RSS_WARM=
while [ "$SECONDS" -lt "$DEADLINE" ] && alive; do
  ROUND=$((ROUND + 1))
  spawn_batch "$BATCH"
  destroy_oldest $(( ${#QUEUE[@]} - SOAK_ENTITIES > 0 ? ${#QUEUE[@]} - SOAK_ENTITIES : 0 ))
  tick_changes
  [ $((ROUND % 2)) = 0 ] && timer_changes
  [ $((ROUND % 3)) = 0 ] && tickable_changes
  watchers
  [ $((ROUND % 5)) = 0 ] && bad_input
  if [ "$SECONDS" -ge "$NEXT_RUNAWAY" ]; then
    runaway
    NEXT_RUNAWAY=$((SECONDS + RUNAWAY_EVERY))
  fi
  if [ "$SECONDS" -ge "$NEXT_SAMPLE" ]; then
    sample
    NEXT_SAMPLE=$((SECONDS + SAMPLE_S))
    if [ -z "$RSS_WARM" ] && [ "$(now)" -ge "$SOAK_WARMUP" ]; then
      RSS_WARM=$(rss_kb)
      say "warm-up done: ${RSS_WARM} kB RSS"
    fi
    say "$(tail -n 1 "$SAMPLES" | awk '{printf "rss %s kB, fds %s, tps_1s %.1f, tps_10s %.2f, mspt p99 %.3f ms, entities %s", $2, $3, $4, $5, $6, $7}')"
  fi
  sleep "$SOAK_ROUND_SLEEP"
done

# ---- end: measure, then stop ------------------------------------------------------
ALIVE_AT_END=1
alive || { ALIVE_AT_END=0; FAILS+=("tickd died during the run (see its log)"); }
RSS_END=
FD_END=
if [ "$ALIVE_AT_END" = 1 ]; then
  sample
  RSS_END=$(rss_kb)
  STATS=$(ctl engine.stats)
  for p in "${WATCHERS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  WATCHERS=() WATCH_END=() WATCH_STOP=()
  for _ in $(seq 50); do                  # clients are freed asynchronously
    FD_END=$(fd_count)
    [ "$FD_END" -le "$FD_BASE" ] && break
    sleep 0.1
  done
  ctl engine.shutdown >/dev/null
  wait "$DPID"
  EXIT_CODE=$?
  DPID=
  [ "$EXIT_CODE" = 0 ] || FAILS+=("tickd exited with status $EXIT_CODE after engine.shutdown")
  [ -e "$SOCK" ] && FAILS+=("the socket $SOCK was left behind")
fi

# ---- checks ---------------------------------------------------------------------------
if [ -s "$WORK/fails" ]; then
  N_REQ_FAILS=$(wc -l <"$WORK/fails")
  FAILS+=("$N_REQ_FAILS good requests failed, the first: $(head -n 1 "$WORK/fails")")
fi
post_warm() { awk -v w="$SOAK_WARMUP" '$1 >= w' "$SAMPLES"; }
N_POST=$(post_warm | wc -l)
TPS10_MIN=$(post_warm | awk 'NR == 1 || $5 < m {m = $5} END {print m}')
TPS1_MIN=$(post_warm | awk 'NR == 1 || $4 < m {m = $4} END {print m}')
P99_MAX=$(post_warm | awk 'NR == 1 || $6 > m {m = $6} END {print m}')
RSS_MAX=$(awk 'NR == 1 || $2 > m {m = $2} END {print m}' "$SAMPLES")
# Frames per second over the whole time after the warm-up (first to last sample).
TPS_RUN=$(post_warm | awk 'NR == 1 {t0 = $1; f0 = $8} {t = $1; f = $8}
  END {if (t > t0) printf "%.2f", (f - f0) / (t - t0)}')

if [ "$ALIVE_AT_END" = 1 ]; then
  if [ -z "$RSS_WARM" ] || [ "$N_POST" -lt 2 ]; then
    FAILS+=("too few samples after the warm-up ($N_POST)")
  else
    RSS_GROWTH=$(awk -v a="$RSS_WARM" -v b="$RSS_END" 'BEGIN {printf "%.2f", (b - a) * 100 / a}')
    awk -v g="$RSS_GROWTH" -v lim="$SOAK_RSS_PCT" 'BEGIN {exit !(g > lim)}' &&
      FAILS+=("RSS grew ${RSS_GROWTH}% after the warm-up (${RSS_WARM} -> ${RSS_END} kB; limit ${SOAK_RSS_PCT}%)")
    awk -v t="$TPS10_MIN" -v lim="$SOAK_MIN_TPS" 'BEGIN {exit !(t < lim)}' &&
      FAILS+=("tps_10s fell to $TPS10_MIN (limit $SOAK_MIN_TPS)")
  fi
  [ "$FD_END" -le "$FD_BASE" ] || FAILS+=("open fds $FD_END at the end, baseline $FD_BASE")
fi

ERR_ALL=$(grep -c ' error: \|^<3>' "$LOG")
ERR_UNEXPECTED=$(grep ' error: \|^<3>' "$LOG" | grep -Ev "$EXPECTED_RE" | wc -l)
WARN_ALL=$(grep -c ' warn: \|^<4>' "$LOG")
[ "$ERR_UNEXPECTED" -eq 0 ] || FAILS+=("$ERR_UNEXPECTED unexpected error log lines")

# ---- report ---------------------------------------------------------------------------
echo
echo "soak report ($(now) s, $ROUND rounds, ${SOAK_ENTITIES} entities steady, ${BAD} bad requests${RAW:+ incl. raw junk via $RAW})"
printf '  %-22s start %s kB, warm-up end %s kB, end %s kB, max %s kB, growth %s%%\n' \
  "RSS:" "$RSS_START" "${RSS_WARM:--}" "${RSS_END:--}" "$RSS_MAX" "${RSS_GROWTH:--}"
printf '  %-22s baseline %s, end %s\n' "open fds:" "$FD_BASE" "${FD_END:--}"
printf '  %-22s tps_10s min %s, tps_1s min %s, %s over the run; mspt p99 max %s ms (%s samples after warm-up)\n' \
  "frame rate:" "${TPS10_MIN:--}" "${TPS1_MIN:--}" "${TPS_RUN:--}" "${P99_MAX:--}" "$N_POST"
if [ -n "${STATS:-}" ]; then
  printf '  %-22s frames %s, requests %s, errors %s, overruns %s, events dropped %s\n' "counters:" \
    "$(field frame "$STATS")" "$(field requests "$STATS")" "$(field errors "$STATS")" \
    "$(field overruns "$STATS")" "$(field events_dropped "$STATS")"
fi
printf '  %-22s %s error (%s unexpected), %s warn\n' "log lines:" "$ERR_ALL" "$ERR_UNEXPECTED" "$WARN_ALL"
if [ "$ERR_UNEXPECTED" -gt 0 ]; then
  grep ' error: \|^<3>' "$LOG" | grep -Ev "$EXPECTED_RE" | head -n 10 | sed 's/^/    /'
fi
if [ ${#FAILS[@]} -gt 0 ]; then
  for f in "${FAILS[@]}"; do echo "  FAIL: $f"; done
  echo "soak: FAIL (${#FAILS[@]} problem$([ ${#FAILS[@]} -gt 1 ] && echo s))"
  exit 1
fi
echo "soak: PASS"
exit 0
