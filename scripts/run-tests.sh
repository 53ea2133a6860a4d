#!/usr/bin/env bash
# Runs each test binary given on the command line, shows its output, and fails at
# the end if any of them failed. Check's own summary line ("100%: Checks: N,
# Failures: 0, Errors: 0") is printed by each suite binary.
set -u
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
label=normal
[ "${SAN:-}" = 1 ] && label="asan+ubsan"
[ "${SAN:-}" = thread ] && label="tsan"
failed=()
for t in "$@"; do
  [ -x "$t" ] || continue
  echo "== $t ($label)"
  expected="examples/$(basename "$t").expected"
  if [ -f "$expected" ] && [[ "$t" == */examples/* ]]; then
    # An example's output is part of its contract: compare it.
    if "$t" >"$t.out" && diff -u "$expected" "$t.out"; then
      echo "$t: output matches $expected"
    else
      failed+=("$t")
    fi
    continue
  fi
  t0=$EPOCHREALTIME
  if ! "$t"; then failed+=("$t"); fi
  awk -v t="$t" -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%s: %.1f s\n", t, b - a }'
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED ($label): ${failed[*]}" >&2
  exit 1
fi
echo "all tests passed ($label): $# binaries"
