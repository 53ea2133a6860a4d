#!/usr/bin/env bash
# Runs every benchmark binary under $1/bench/, collects the figures they print
# on stdout (one "key=value" per line, value a number), prints a table with
# each goal beside each figure, and writes build/bench.json (one flat object).
# Human-readable progress goes to stderr.  A key a benchmark could not measure
# is simply absent: no placeholders.
set -euo pipefail
dir=${1:-build/bench}
out=build/bench.json
mkdir -p build
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

for b in "$dir"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b")" >&2
  if ! BENCH_BUILD="$dir" "$b" >>"$tmp"; then
    echo "bench: $(basename "$b") failed; its figures are left out" >&2
  fi
done

# key | goal shown | comparison (le/ge/in/-) | threshold (in: low:high)
goals='tick_ns_per_function_1m|<= 5|le|5
tick_ns_per_function_100k|-|-|0
tick_ns_per_function_10k|-|-|0
ue_baseline_ratio|>= 10|ge|10
interval_ns_per_idle_function_1m|<= 0.5|le|0.5
batch_speedup|>= 1.5|ge|1.5
unbatched_floor_ratio|<= 1.3|le|1.3
batch_false_floor_ratio|<= 2|le|2
unbatched_slow_tick_floor_ratio|-|-|0
interval_due_1m_ms|-|-|0
interval_due_ratio|<= 2|le|2
remove_2m_max_start_frame_ms|-|-|0
bytes_per_tick_function|<= 64|le|64
timer_ns_per_op|-|-|0
timer_ratio_vs_libevent|>= 2|ge|2
pacing_p99_jitter_us|<= 250|le|250
pacing_jitter_ratio|<= 1.2|le|1.2
pacing_jitter_ratio_unreal|<= 1.2|le|1.2
pacing_jitter_ratio_bare_pair|-|-|0
tps_steady_60|60 +- 0.06|in|59.94:60.06
tps_unreal_60|-|-|0
idle_cpu_percent|<= 1|le|1
rpc_requests_per_s|>= 100000|ge|100000
spawn_1m_seconds|<= 1|le|1
rss_mib_1m_entities|<= 160|le|160
mspt_p50_1m_entities|<= 5|le|5
spawn_1m_max_frame_gap_ms|<= 33|le|33
max_frame_gap_ms_hostile|<= 50|le|50
save_1m_max_frame_gap_ms|<= 33|le|33
save_1m_max_frame_gap_ms_worst|-|-|0
save_1m_max_frame_dt_ms|-|-|0
save_1m_copy_ms|-|-|0
save_1m_fork_ms|-|-|0
load_1m_max_frame_gap_ms|-|-|0
load_1m_seconds|-|-|0
max_frame_gap_ms_idle|-|-|0
profile_overhead_pct|<= 5|le|5
mover_ns_per_entity_1m|<= 3|le|3
mover_floor_ratio|<= 1.2|le|1.2
mover_shuffled_ns_per_entity_1m|-|-|0
bytes_per_mover_entity|<= 100|le|100
mspt_p99_1m_movers_1t|<= 8|le|8
mspt_p99_1m_movers|<= 5|le|5
parallel_speedup|>= 1.7|ge|1.7
parallel_floor_speedup|-|-|0
parallel_10k_ratio|<= 1.05|le|1.05
mspt_p99_1m_movers_floor_ratio|-|-|0
mspt_p99_1m_movers_1t_cpu|-|-|0
mspt_p99_1m_movers_cpu_floor_ratio|<= 1.2|le|1.2
journal_rpc_requests_per_s_always|-|-|0
journal_rpc_requests_per_s_everysec|-|-|0
journal_rpc_requests_per_s_no|-|-|0
journal_rpc_ratio_always|-|-|0
journal_rpc_ratio_everysec|-|-|0
journal_rpc_ratio_no|-|-|0'

{
  printf '{'
  first=1
  while IFS='=' read -r k v; do
    [ -n "$k" ] || continue
    case "$k" in *[!a-z0-9_]*) continue ;; esac
    [ $first = 1 ] || printf ','
    printf '\n  "%s": %s' "$k" "$v"
    first=0
  done <"$tmp"
  printf '\n}\n'
} >"$out"

printf '\n%-36s %14s %12s %s\n' "figure" "measured" "goal" ""
while IFS='|' read -r k g cmp thr; do
  v=$(grep -m1 "^$k=" "$tmp" | cut -d= -f2 || true)
  if [ -z "$v" ]; then
    printf '%-36s %14s %12s %s\n' "$k" "not measured" "$g" ""
    continue
  fi
  mark=""
  case $cmp in
    le) awk -v a="$v" -v b="$thr" 'BEGIN{exit !(a<=b)}' && mark="ok" || mark="MISSED" ;;
    ge) awk -v a="$v" -v b="$thr" 'BEGIN{exit !(a>=b)}' && mark="ok" || mark="MISSED" ;;
    in) awk -v a="$v" -v r="$thr" 'BEGIN{split(r,x,":"); exit !(a>=x[1] && a<=x[2])}' && mark="ok" || mark="MISSED" ;;
  esac
  printf '%-36s %14s %12s %s\n' "$k" "$v" "$g" "$mark"
done <<<"$goals"
# figures without a goal row
grep -v -E "^($(echo "$goals" | cut -d'|' -f1 | paste -sd'|'))=" "$tmp" | while IFS='=' read -r k v; do
  [ -n "$k" ] && printf '%-36s %14s %12s\n' "$k" "$v" "-"
done || true
echo
echo "wrote $out"
