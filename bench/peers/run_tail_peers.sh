#!/usr/bin/env bash
# bench_tail's rows beside LTTng-UST and spall on the same loop (issue 36): every zone
# timed with the TSC around it, 5 M zones per thread, 1 and 2 threads; the tools
# alternate, ROUNDS times (2), and one table comes out (each cell: round 1 / round 2).
#
#   bench/peers/run_tail_peers.sh                       # as root (lttng-sessiond)
#   SPALL_BIN=/path/to/tail_spall bench/peers/run_tail_peers.sh
#
# Rows:
#   ringtrace   build/release/bench/bench_tail (BENCH_TAIL=...), drop mode, the binary
#               file and the decoding exporter, switches off (built by the project's cmake)
#   lttng       bench/peers/tail_lttng.cpp, built here with g++ -O2 against Debian's
#               liblttng-ust-dev; run in a normal session (discard mode, the default: a
#               full sub-buffer loses events, the thread never waits), output to a temp
#               dir; lttng-sessiond is started here (root) and stopped at the end
#   lttng off   the same binary with no session: the tracepoints disabled (the floor)
#   spall       SPALL_BIN: a harness built outside this tree on the fetched spall.h
#               (bench/peers/tail_common.hpp's run() with spall_buffer_begin/end, a
#               10 MiB buffer per thread, flushed by fwrite + fflush on the recording
#               thread). The tree holds no recipe that builds fetched code, so SPALL_H
#               alone is not enough: without SPALL_BIN the row is skipped, saying why.
#
# Needs: g++, python3, liblttng-ust-dev and lttng-tools (apt-get install), root.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$root/build/h-peers}
bench_tail=${BENCH_TAIL:-$root/build/release/bench/bench_tail}
rounds=${ROUNDS:-2}
mkdir -p "$out"
tmp=$(mktemp -d /tmp/ringtrace_tail_peers.XXXXXX)
rows=$tmp/rows.txt
: >"$rows"
notes=()
sessiond_pid=

cleanup() {
  if [[ -n $sessiond_pid ]]; then
    lttng destroy -a >/dev/null 2>&1 || true
    kill "$sessiond_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$sessiond_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')"

# --- ringtrace ---------------------------------------------------------------------
have_ringtrace=0
if [[ -x $bench_tail ]]; then
  have_ringtrace=1
else
  notes+=("ringtrace: skipped: $bench_tail is not built (cmake --build build/release --target bench_tail)")
fi

# --- LTTng-UST ---------------------------------------------------------------------
have_lttng=0
if ! echo '#include <lttng/tracepoint.h>' | g++ -x c++ -E - >/dev/null 2>&1; then
  notes+=("lttng: skipped: <lttng/tracepoint.h> not found (apt-get install liblttng-ust-dev lttng-tools)")
elif ! g++ -O2 -std=c++20 -I "$here" "$here/tail_lttng.cpp" -o "$out/tail_lttng" -llttng-ust -ldl 2>"$tmp/lttng_build.txt"; then
  notes+=("lttng: skipped: tail_lttng.cpp did not build: $(head -3 "$tmp/lttng_build.txt" | tr '\n' ' ')")
else
  have_lttng=1
fi
have_session=0
if ((have_lttng)); then
  if [[ $(id -u) != 0 ]]; then
    notes+=("lttng: no session: not root (the script starts the root lttng-sessiond)")
  elif ! command -v lttng-sessiond >/dev/null; then
    notes+=("lttng: no session: lttng-sessiond not installed (apt-get install lttng-tools)")
  elif pgrep -x lttng-sessiond >/dev/null; then
    notes+=("lttng: no session: an lttng-sessiond this script did not start is running (pid $(pgrep -x lttng-sessiond | tr '\n' ' '))")
  elif ! lttng-sessiond --daemonize --no-kernel --pidfile="$tmp/sessiond.pid" >"$tmp/sessiond.txt" 2>&1; then
    notes+=("lttng: no session: lttng-sessiond failed: $(tail -3 "$tmp/sessiond.txt" | tr '\n' ' ')")
  else
    for _ in $(seq 50); do [[ -s $tmp/sessiond.pid ]] && break; sleep 0.1; done
    sessiond_pid=$(cat "$tmp/sessiond.pid" 2>/dev/null)
    if [[ -n $sessiond_pid ]] && lttng list >/dev/null 2>&1; then
      have_session=1
    else
      notes+=("lttng: no session: lttng-sessiond did not answer: $(tail -3 "$tmp/sessiond.txt" | tr '\n' ' ')")
    fi
  fi
fi

# One run of tail_lttng inside its own session; appends its row with the events the
# session discarded.
run_lttng_session() {
  local threads=$1 label=$2 s=ringtrace_tail_peers_$$
  lttng create "$s" --output="$tmp/lttng_trace" >/dev/null &&
    lttng enable-channel -u -s "$s" zones >/dev/null &&
    lttng enable-event -u -s "$s" -c zones 'ringtrace_peer:*' >/dev/null &&
    lttng start "$s" >/dev/null || { notes+=("lttng: session setup failed"); lttng destroy "$s" >/dev/null 2>&1; return; }
  local row
  row=$("$out/tail_lttng" "$threads" "$label" | grep '^ROW')
  lttng stop "$s" >/dev/null
  lttng list "$s" -c zones >"$tmp/lttng_list.txt" 2>&1
  local discarded
  # lttng 2.13 prints 18446744073709551615 (-1) where it could not read the count
  discarded=$(awk '/Discarded events:/ {print $3}' "$tmp/lttng_list.txt" | head -1)
  [[ $discarded =~ ^[0-9]+$ && ${#discarded} -lt 19 ]] || { discarded=unknown; cp "$tmp/lttng_list.txt" "$out/lttng_list_$label.txt"; }
  [[ -f $tmp/lttng_channel.txt ]] || grep -E 'Event-loss mode|Sub-buffer|Buffering scheme|Output mode' "$tmp/lttng_list.txt" >"$tmp/lttng_channel.txt"
  lttng destroy "$s" >/dev/null
  rm -rf "$tmp/lttng_trace"
  echo "$row $discarded" >>"$rows"
}

# --- spall -------------------------------------------------------------------------
have_spall=0
spall_bin=${SPALL_BIN:-}
if [[ -n $spall_bin && -x $spall_bin ]]; then
  have_spall=1
elif [[ -n $spall_bin ]]; then
  notes+=("spall: skipped: SPALL_BIN=$spall_bin is not an executable")
elif [[ -n ${SPALL_H:-} ]]; then
  notes+=("spall: skipped: SPALL_H=$SPALL_H is set, but this tree commits no recipe that builds fetched code; build the harness outside the tree and pass SPALL_BIN")
else
  notes+=("spall: skipped: no SPALL_BIN (a harness built outside this tree on the fetched spall.h)")
fi

# --- the rounds --------------------------------------------------------------------
for round in $(seq "$rounds"); do
  echo "round $round: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  if ((have_ringtrace)); then
    sync
    "$bench_tail" --benchmark_filter='^BM_ZoneTail/0/[01]/0/[12]/' --benchmark_format=json \
      --benchmark_out="$tmp/bench_tail.json" --benchmark_out_format=json >/dev/null 2>"$tmp/bench_tail.err" ||
      notes+=("ringtrace: bench_tail failed: $(tail -2 "$tmp/bench_tail.err" | tr '\n' ' ')")
    python3 - "$tmp/bench_tail.json" >>"$rows" <<'EOF'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    parts = b["label"].split()   # "drop file x2"
    output = "binary-file" if parts[1] == "file" else "decoding-exporter"
    label = "ringtrace-" + output + "-" + parts[-1]
    print("ROW", label, b["p50_ns"], b["p99_ns"], b["p99.9_ns"], b["p99.99_ns"], b["max_us"],
          int(b["over_1us"]), int(b["over_10us"]), b["first_us"], b["real_time"], "-", int(b["dropped"]))
EOF
  fi
  if ((have_lttng)); then
    for threads in 1 2; do
      if ((have_session)); then sync; run_lttng_session "$threads" "lttng-discard-x$threads"; fi
      echo "$("$out/tail_lttng" "$threads" "lttng-no-session-x$threads" | grep '^ROW') -" >>"$rows"
    done
  fi
  if ((have_spall)); then
    for threads in 1 2; do
      sync
      echo "$("$spall_bin" "$threads" "spall-x$threads" | grep '^ROW') -" >>"$rows"
    done
  fi
done

echo "after: load average $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -f $tmp/lttng_channel.txt ]] && { echo "lttng channel:"; sort -u "$tmp/lttng_channel.txt" | sed 's/^ */  /'; }
for n in "${notes[@]}"; do echo "note: $n"; done

# --- the table ---------------------------------------------------------------------
python3 - "$rows" <<'EOF'
import sys
order, runs = [], {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 13 or f[0] != "ROW":
        continue
    if f[1] not in runs:
        order.append(f[1]); runs[f[1]] = []
    runs[f[1]].append(f[2:])
def ns(v):
    v = float(v)
    return f"{v:.0f} ns" if v < 1000 else f"{v / 1000:.2f} us"
def us(v):
    v = float(v)
    return f"{v:.0f} us" if v < 1000 else f"{v / 1000:.1f} ms"
def count(v):
    return v if not v.replace(".", "").isdigit() else f"{int(float(v)):,}"
cols = [("mean", 9, lambda v: v if v == "-" else ns(v)), ("p50", 0, ns), ("p99", 1, ns), ("p99.9", 2, ns), ("p99.99", 3, ns), ("max", 4, us),
        ("over 1 us", 5, count), ("over 10 us", 6, count), ("dropped", 10, count), ("first zone", 7, lambda v: ns(float(v) * 1000) if float(v) < 1 else us(v)),
        ("wall", 8, lambda v: f"{float(v):.0f} ms")]
print("| row | " + " | ".join(c[0] for c in cols) + " |")
print("|---|" + "---|" * len(cols))
for name in order:
    cells = []
    for _, i, fmt in cols:
        vals = [fmt(r[i]) for r in runs[name]]
        cells.append(" / ".join(vals))
    print(f"| {name} | " + " | ".join(cells) + " |")
EOF
