#!/usr/bin/env bash
# Every function of a real program recorded (issue 35): leveldb's db_bench, whole library
# and benchmark driver instrumented, under uftrace and under `ringtrace record`, the runs
# alternating in the same minutes. The five db_bench binaries (the same leveldb version
# and options for all, -O2), each built the way named below, come either
#   - from LEVELDB_SRC, a leveldb checkout of yours (fetched, never committed here):
#     build.sh, beside this script, builds the five from it first (into BUILD_DIR, default
#     a new /tmp/ringtrace-leveldb-build.XXXXXX, kept; build.sh --help says how), and
#     the ringtrace tool is then, unless RINGTRACE says otherwise, the one installed with
#     the hooks it linked; or
#   - from five environment variables, binaries you built (LEVELDB_SRC unset): nothing is
#     built, and a variable left unset leaves that build's rows out, with a note:
#   DB_BENCH_PLAIN     no instrumentation (no tracer)
#   DB_BENCH_PG        built with -pg, for `uftrace record`
#   DB_BENCH_CYG       built with g++'s flags of docs/functions.md (-finstrument-functions
#                      ...), nothing linked: `uftrace record` again, the same calls
#                      instrumented as DB_BENCH_RT_GCC's (-pg leaves out every inlined function)
#   DB_BENCH_RT_GCC    g++ with the function-instrumentation flags of docs/functions.md
#                      ("Building"), linked with ringtrace-functions
#   DB_BENCH_RT_CLANG  clang++ with the flags of docs/functions.md, linked the same way
# (-g, which changes no code, names files and lines in ringtrace's output.)
#
# Each round runs, in this order, `db_bench --benchmarks=fillseq,readrandom --num=50000`
# (a fresh --db folder each time):
#   plain; `uftrace record -d DIR` (pg build, then cyg build); `ringtrace record -o FILE --`
#   (rt-gcc), the same with the policy that is not record's default (`--policy drop` when
#   `record --help` says block is the default, else `--policy block`), and once per
#   value of any record option about inlined functions that `record --help` offers (rt-gcc
#   only: today `--inlined`, g++'s calls of inlined functions kept), alone and with
#   that policy; `ringtrace record` (rt-clang), and with that policy.
# Before each run, untimed, the previous run's files are removed and `sync` waits for the
# kernel to finish writing back what is left of them.
# Wall time of each run (date +%s%N around the whole command: start, recording, the
# tracer's writing and exit) is printed as the minimum over rounds, with every round's;
# the ratios are to uftrace's minimum (pg build; cyg build). CPU time is the user + system
# time of the whole command and everything it waited for (the program, its threads,
# ringtrace's drainer, uftrace's writer), from /proc/$$/stat's children's times: on a
# shared machine it says what the tracer costs better than wall time, which also counts
# the minutes spent waiting for a core. Events recorded and dropped come from `ringtrace info`
# of each file (every round's values); uftrace's column is its .dat files' size / 16 bytes
# (one uftrace record per entry or exit) and its dropped column the "LOST N records" that
# uftrace record prints.
#
#   LEVELDB_SRC=/path/to/leveldb bash bench/functions/leveldb/run.sh
#   DB_BENCH_PLAIN=... DB_BENCH_PG=... DB_BENCH_CYG=... DB_BENCH_RT_GCC=... DB_BENCH_RT_CLANG=... \
#     bash bench/functions/leveldb/run.sh
#
# Environment:
#   LEVELDB_SRC  a leveldb checkout: build the five first (build.sh; its BUILD_DIR,
#                RINGTRACE_BUILD, RINGTRACE_PREFIX, JOBS are passed on); not with DB_BENCH_*
#   RINGTRACE    the ringtrace tool (default: with LEVELDB_SRC, the one build.sh installed,
#                else build/release/tools/ringtrace, relative to the repository); needed
#                only for the DB_BENCH_RT_* rows
#   ROUNDS=2 NUM=50000 BENCHMARKS=fillseq,readrandom
#   WORK_DIR     databases, recordings and logs (default: a new /tmp/ringtrace-leveldb-run.XXXXXX,
#                removed at the end unless KEEP_WORK=1; the logs are kept when a run fails).
#                Recordings are removed after each run (uftrace's of the cyg build: ~2.4 GB).
#   RT_GCC_VARIANTS  extra `ringtrace record` option sets for the g++ build, ';'-separated
#                (e.g. "--min-duration 1us;--max-depth 8"), added to the detected ones
# Needs uftrace for the pg and cyg rows (apt-get install uftrace), and nm/objdump
# (binutils) for the checks of the binaries; with LEVELDB_SRC, what build.sh needs too.
set -euo pipefail

die() { echo "leveldb/run.sh: $*" >&2; exit 1; }
say() { echo "leveldb/run.sh: $*" >&2; }

if (($#)); then
  case $1 in
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "no arguments (the binaries come from LEVELDB_SRC, built, or from DB_BENCH_PLAIN, DB_BENCH_PG, DB_BENCH_CYG, DB_BENCH_RT_GCC, DB_BENCH_RT_CLANG; see --help)" ;;
  esac
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
rounds=${ROUNDS:-2}
num=${NUM:-50000}
benchmarks=${BENCHMARKS:-fillseq,readrandom}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS=$rounds: a positive integer, please"
[[ "$num" =~ ^[1-9][0-9]*$ ]] || die "NUM=$num: a positive integer, please"
[[ "$benchmarks" =~ ^[a-z0-9]+(,[a-z0-9]+)*$ ]] || die "BENCHMARKS=$benchmarks: db_bench benchmark names, ','-separated"

# With LEVELDB_SRC, build.sh builds the five and prints their assignments (and RINGTRACE=,
# its installed tool) on standard output, each value quoted by printf %q.
built_by=
if [[ -n "${LEVELDB_SRC:-}" ]]; then
  given=()
  for var in DB_BENCH_PLAIN DB_BENCH_PG DB_BENCH_CYG DB_BENCH_RT_GCC DB_BENCH_RT_CLANG; do
    [[ -n "${!var:-}" ]] && given+=("$var")
  done
  ((${#given[@]} == 0)) ||
    die "LEVELDB_SRC and ${given[*]} both set: either build from LEVELDB_SRC or give the binaries, not both"
  say "building the five db_bench from LEVELDB_SRC=$LEVELDB_SRC (build.sh) ..."
  assignments=$(bash "$(dirname "${BASH_SOURCE[0]}")/build.sh") || die "build.sh failed (its message above): nothing run"
  while IFS= read -r line; do
    if [[ "$line" =~ ^(DB_BENCH_PLAIN|DB_BENCH_PG|DB_BENCH_CYG|DB_BENCH_RT_GCC|DB_BENCH_RT_CLANG|RINGTRACE)= ]]; then
      var=${BASH_REMATCH[1]}
      if [[ $var == RINGTRACE && -n "${RINGTRACE:-}" ]]; then continue; fi
      eval "$line"
    fi
  done <<<"$assignments"
  built_by="build.sh from $LEVELDB_SRC ($(git -C "$LEVELDB_SRC" rev-parse --short HEAD 2>/dev/null || echo '?'))"
fi

# The binaries: build name -> absolute path; a variable that is unset or empty leaves
# the build out.
declare -A bin_of
builds=()
skipped=()
for pair in plain:DB_BENCH_PLAIN pg:DB_BENCH_PG cyg:DB_BENCH_CYG rt-gcc:DB_BENCH_RT_GCC rt-clang:DB_BENCH_RT_CLANG; do
  name=${pair%%:*}
  var=${pair#*:}
  path=${!var:-}
  if [[ -z "$path" ]]; then
    skipped+=("$var not set: the $name rows left out")
    continue
  fi
  [[ -e "$path" ]] || die "$var=$path: no such file"
  [[ -f "$path" && -x "$path" ]] || die "$var=$path: not an executable file"
  path=$(cd "$(dirname "$path")" && pwd)/$(basename "$path")
  bin_of[$name]=$path
  builds+=("$name")
done
((${#builds[@]})) || die "no db_bench given: set LEVELDB_SRC (a leveldb checkout, built first) or at least one of DB_BENCH_PLAIN, DB_BENCH_PG, DB_BENCH_CYG, DB_BENCH_RT_GCC, DB_BENCH_RT_CLANG (see --help)"
for note in "${skipped[@]}"; do say "$note"; done
has_build() { [[ -n "${bin_of[$1]+x}" ]]; }

if has_build pg || has_build cyg; then
  command -v uftrace >/dev/null || die "uftrace not found (needed by DB_BENCH_PG and DB_BENCH_CYG): apt-get install uftrace"
fi
rt=
if has_build rt-gcc || has_build rt-clang; then
  rt=${RINGTRACE:-build/release/tools/ringtrace}
  [[ "$rt" = /* ]] || rt="$repo/$rt"
  [[ -f "$rt" && -x "$rt" ]] ||
    die "RINGTRACE=$rt: no ringtrace tool there (set RINGTRACE to ringtrace's tools/ringtrace, or build build/release first: README.md)"
fi

# Checks of the binaries, so that a build made the wrong way is said before minutes of runs.
check_tools=1
for tool in nm objdump; do
  command -v "$tool" >/dev/null || { say "$tool not found (binutils): the binaries are not checked"; check_tools=0; }
done
if ((check_tools)); then
  check_dir=$(mktemp -d /tmp/ringtrace-leveldb-check.XXXXXX)
  trap 'rm -rf "$check_dir"' EXIT
  for name in "${builds[@]}"; do
    bin=${bin_of[$name]}
    nm "$bin" >"$check_dir/symbols.txt" 2>&1 || die "$name: nm $bin failed (not an ELF program?): $(head -c 300 "$check_dir/symbols.txt")"
    grep -q '_ZN7leveldb' "$check_dir/symbols.txt" ||
      die "$name: $bin has no leveldb symbol: not a db_bench (or stripped)"
    calls_mcount=0; defines_hook=0; calls_hook=0
    grep -q ' U mcount' "$check_dir/symbols.txt" && calls_mcount=1
    grep -q ' T __cyg_profile_func_enter' "$check_dir/symbols.txt" && defines_hook=1
    if [[ $name == cyg || $name == rt-* ]]; then
      # The hooks are called from leveldb's code, not only from db_bench.cc.
      objdump -d --no-show-raw-insn "$bin" >"$check_dir/disassembly.txt" || die "$name: objdump -d $bin failed"
      awk '/^[0-9a-f]+ <.*>:$/ { f = $2 } /call.*__cyg_profile_func_enter/ && f ~ /leveldb.*Skip|leveldb.*DBImpl/ { n++ } END { exit n ? 0 : 1 }' \
        "$check_dir/disassembly.txt" && calls_hook=1
      rm -f "$check_dir/disassembly.txt"
    fi
    case $name in
      plain) ((calls_mcount == 0)) || die "plain: $bin calls mcount (built with -pg?)" ;;
      pg) ((calls_mcount)) || die "pg: $bin calls no mcount (not built with -pg?)" ;;
      cyg)
        ((calls_hook)) || die "cyg: no leveldb function in $bin calls __cyg_profile_func_enter (leveldb not built with -finstrument-functions?)"
        ((defines_hook == 0)) || die "cyg: $bin defines __cyg_profile_func_enter (linked with ringtrace-functions? DB_BENCH_CYG is the one with nothing linked)"
        ;;
      rt-*)
        ((defines_hook)) || die "$name: $bin does not define __cyg_profile_func_enter (ringtrace-functions not linked?)"
        ((calls_hook)) || die "$name: no leveldb function in $bin calls the hooks (leveldb not built with -finstrument-functions?)"
        ;;
    esac
  done
  rm -rf "$check_dir"
  trap - EXIT
fi

if [[ -n "${WORK_DIR:-}" ]]; then
  work=$WORK_DIR
  mkdir -p "$work" || die "WORK_DIR=$work: cannot create it"
else
  work=$(mktemp -d /tmp/ringtrace-leveldb-run.XXXXXX)
fi
work=$(cd "$work" && pwd)
logs=$work/logs
mkdir -p "$logs"
cleanup() {
  local rc=$?
  rm -rf "$work/db" "$work/out"
  if ((rc != 0)); then
    say "failed: logs kept in $logs"
  elif [[ "${KEEP_WORK:-0}" != 1 && -z "${WORK_DIR:-}" ]]; then
    rm -rf "$work"
  fi
}
trap cleanup EXIT
say "work dir $work (logs in $logs)"

# ringtrace record's options, from record --help.
declare -A opt_arg opt_text
opt_names=()
gcc_variants=()
clang_variants=()
inline_notes=()
if [[ -n "$rt" ]]; then
  record_help=$("$rt" record --help 2>&1) || die "$rt record --help failed: $record_help"
  echo "$record_help" >"$logs/record-help.txt"
  # record --help, option by option: "  --name [ARG]   text" and its continuation lines.
  current=
  while IFS= read -r line; do
    if [[ "$line" =~ ^[[:space:]]+(-[a-zA-Z],[[:space:]]+)?(--[a-z0-9-]+)([[:space:]]([^[:space:]]+))?([[:space:]][[:space:]]+(.*))?$ ]]; then
      current=${BASH_REMATCH[2]}
      opt_names+=("$current")
      opt_arg[$current]=${BASH_REMATCH[4]}
      opt_text[$current]=${BASH_REMATCH[6]}
    elif [[ -n "$current" && "$line" =~ ^[[:space:]]{4,}[^-[:space:]] ]]; then
      opt_text[$current]+=" ${line#"${line%%[![:space:]]*}"}"
    else
      current=
    fi
  done <<<"$record_help"
  ((${#opt_names[@]})) || die "$rt record --help lists no option: is $rt ringtrace's tool?"
fi
has_opt() { [[ -n "${opt_text[$1]+x}" || " ${opt_names[*]} " == *" $1 "* ]]; }

# The g++ build's ringtrace variants: default, --policy block, every value of an option
# about inlined functions (a flag: with it; an argument: each choice its text lists as
# a|b or "a (default) or b", the default left out), each also with --policy block, then
# RT_GCC_VARIANTS.
if [[ -n "$rt" ]]; then
  gcc_variants=("")
  clang_variants=("")
  # The policy record does not use by default: drop when its help says block is the
  # default (record since 2026-11-28), else block.
  alt_policy=block
  [[ "${opt_text[--policy]:-}" == *"block (default"* ]] && alt_policy=drop
  if has_opt --policy; then
    gcc_variants+=("--policy $alt_policy")
    clang_variants+=("--policy $alt_policy")
  else
    say "ringtrace record has no --policy: no rows of the other policy"
  fi
  for name in "${opt_names[@]}"; do
    text=${opt_text[$name]}
    [[ "$text" == *nlin* ]] || continue
    arg=${opt_arg[$name]}
    if [[ -z "$arg" ]]; then
      gcc_variants+=("$name")
      has_opt --policy && gcc_variants+=("$name --policy $alt_policy")
      inline_notes+=("$name (flag)")
      continue
    fi
    choices=()
    default=
    if [[ "$text" =~ ([a-z0-9-]+)[[:space:]]\(default\) ]]; then
      default=${BASH_REMATCH[1]}
    elif [[ "$text" =~ default:?[[:space:]]+([a-z0-9-]+) ]]; then
      default=${BASH_REMATCH[1]}
    fi
    rest="$arg $text"
    while [[ "$rest" =~ ([a-z0-9-]+)((\|[a-z0-9-]+)+) ]]; do
      IFS='|' read -r -a found <<<"${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
      choices+=("${found[@]}")
      rest=${rest#*"${BASH_REMATCH[0]}"}
    done
    if ((${#choices[@]} == 0)) && [[ "$text" =~ ([a-z0-9-]+)[[:space:]]\(default\)[[:space:]]or[[:space:]]([a-z0-9-]+) ]]; then
      choices=("${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")
    fi
    if ((${#choices[@]} == 0)); then
      inline_notes+=("$name $arg (values not read from --help: give them in RT_GCC_VARIANTS)")
      continue
    fi
    declare -A seen=()
    for choice in "${choices[@]}"; do
      [[ "$choice" == "$default" || -n "${seen[$choice]+x}" ]] && continue
      seen[$choice]=1
      gcc_variants+=("$name $choice")
      has_opt --policy && gcc_variants+=("$name $choice --policy $alt_policy")
    done
    unset seen
    inline_notes+=("$name $arg: ${choices[*]}${default:+ (default $default)}")
  done
  if [[ -n "${RT_GCC_VARIANTS:-}" ]]; then
    IFS=';' read -r -a more <<<"$RT_GCC_VARIANTS"
    gcc_variants+=("${more[@]}")
  fi
fi

# Runs: key|tool label|build|runner|ringtrace options.
runs=()
has_build plain && runs+=("plain|none (plain build)|plain|plain|")
has_build pg && runs+=("uftrace|uftrace record (-pg build)|pg|uftrace|")
has_build cyg && runs+=("uftrace-cyg|uftrace record (g++ -finstrument-functions, nothing linked)|cyg|uftrace|")
if has_build rt-gcc; then
  i=0
  for options in "${gcc_variants[@]}"; do
    runs+=("rt-gcc-$i|ringtrace record (g++ -finstrument-functions)|rt-gcc|ringtrace|$options")
    ((++i))
  done
fi
if has_build rt-clang; then
  i=0
  for options in "${clang_variants[@]}"; do
    runs+=("rt-clang-$i|ringtrace record (clang++ after inlining)|rt-clang|ringtrace|$options")
    ((++i))
  done
fi

db_args=(--benchmarks="$benchmarks" --num="$num")
declare -A wall min_wall cpu_all min_cpu events dropped size ops status
hz=$(getconf CLK_TCK)
notes=()
out=$work/out
first_log=
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for ((round = 1; round <= rounds; ++round)); do
  for run in "${runs[@]}"; do
    IFS='|' read -r key label bin runner options <<<"$run"
    rm -rf "$work/db" "$out"
    # Untimed: the previous run's files written back before this one starts (uftrace's of
    # the cyg build are 2.4 GB; the kernel's writeback would share the cores with the next
    # run, a ringtrace one).
    sync
    mkdir -p "$out"
    read -r -a option_array <<<"$options"
    program=${bin_of[$bin]}
    case $runner in
      plain) command=("$program") ;;
      uftrace) command=(uftrace record -d "$out/uftrace.data" "$program") ;;
      ringtrace) command=("$rt" record -o "$out/run.rtrace" "${option_array[@]}" -- "$program") ;;
    esac
    log=$logs/$key-round$round.log
    [[ -n "$first_log" ]] || first_log=$log
    say "round $round: $key ${options:+($options) }..."
    read -r -a stat_before </proc/$$/stat
    start=$(date +%s%N)
    rc=0
    "${command[@]}" "${db_args[@]}" --db="$work/db" >"$log" 2>&1 || rc=$?
    end=$(date +%s%N)
    read -r -a stat_after </proc/$$/stat
    # The shell's waited-for children's user + system time (fields 16, 17), clock ticks.
    cpu=$(awk -v a=$((stat_after[15] + stat_after[16] - stat_before[15] - stat_before[16])) -v hz="$hz" \
      'BEGIN { printf "%.2f", a / hz }')
    cpu_all[$key]+="$cpu "
    if [[ -z "${min_cpu[$key]:-}" ]] || awk -v a="$cpu" -v b="${min_cpu[$key]}" 'BEGIN { exit !(a < b) }'; then
      min_cpu[$key]=$cpu
    fi
    if ((rc != 0)); then
      # uftrace 0.13 now and then fails at the very end: a leveldb background thread still
      # running while the program exits asks for a new buffer after uftrace's pipe is
      # closed ("writing shmem name to pipe: Bad file descriptor"). db_bench has finished
      # and the data before it is written: the run counts, and is said below the table.
      last=${benchmarks##*,}
      if [[ $runner == uftrace ]] && grep -q 'writing shmem name to pipe' "$log" &&
        awk -v b="$last" 'BEGIN { RS = "[\r\n]" } $1 == b && $2 == ":" { found = 1 } END { exit !found }' "$log"; then
        notes+=("round $round, $label: uftrace exited $rc after db_bench finished: $(grep -m1 'ERROR' "$log" | sed 's/^ *//')")
      else
        die "round $round, $key failed (exit $rc): ${command[*]} ${db_args[*]}: see $log"
      fi
    fi
    seconds=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
    wall[$key]+="$seconds "
    if [[ -z "${min_wall[$key]:-}" ]] || awk -v a="$seconds" -v b="${min_wall[$key]}" 'BEGIN { exit !(a < b) }'; then
      min_wall[$key]=$seconds
    fi
    # db_bench's own lines: "fillseq      :       2.345 micros/op; ..."
    for b in ${benchmarks//,/ }; do
      us=$(awk -v b="$b" 'BEGIN { RS = "[\r\n]" } $1 == b && $2 == ":" { print $3 }' "$log")
      ops[$key,$b]+="${us:-?} "
    done
    case $runner in
      ringtrace)
        [[ -f "$out/run.rtrace" ]] || die "round $round, $key wrote no $out/run.rtrace: see $log"
        "$rt" info "$out/run.rtrace" >"$logs/$key-round$round.info" 2>&1 ||
          die "ringtrace info $out/run.rtrace failed: see $logs/$key-round$round.info"
        n_recorded=
        n_dropped=
        read -r n_recorded n_dropped < <(awk '/^events:/ { print $2, $4 }' "$logs/$key-round$round.info") || true
        [[ -n "${n_recorded:-}" ]] || die "no 'events:' line in $logs/$key-round$round.info"
        events[$key]+="$n_recorded "
        dropped[$key]+="${n_dropped:-?} "
        state=$(awk '/^status:/ { $1 = ""; sub(/^ +/, ""); print }' "$logs/$key-round$round.info")
        [[ "$state" == complete ]] || status[$key]+="round $round: $state; "
        size[$key]+="$(du -sm "$out/run.rtrace" | cut -f1) "
        ;;
      uftrace)
        shopt -s nullglob
        dats=("$out"/uftrace.data/*.dat)
        shopt -u nullglob
        ((${#dats[@]})) || die "round $round, uftrace wrote no .dat file in $out/uftrace.data: see $log"
        bytes=$(cat "${dats[@]}" | wc -c)
        events[$key]+="$((bytes / 16)) "
        # uftrace record says "LOST N records" at the end when its buffers overflowed.
        lost=$(awk '/LOST [0-9]+ records/ { for (i = 1; i < NF; ++i) if ($i == "LOST") n += $(i + 1) } END { print n + 0 }' "$log")
        dropped[$key]+="$lost "
        size[$key]+="$(du -sm "$out/uftrace.data" | cut -f1) "
        ;;
    esac
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
rm -rf "$work/db" "$out"

fmt_list() { local v=$1; v=${v% }; echo "${v// / \/ }"; }
# ratio A B: A / B, or "-" when there is no B (its build not given).
ratio() { if [[ -n "$2" ]]; then awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; else echo -; fi; }
uf=${min_wall[uftrace]:-}
uf_cyg=${min_wall[uftrace-cyg]:-}
ufc=${min_cpu[uftrace]:-}
ufc_cyg=${min_cpu[uftrace-cyg]:-}
echo
echo "db_bench --benchmarks=$benchmarks --num=$num; $rounds round(s), the runs alternating; load average $load_start at the start, $load_end at the end; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
printf "| tool (build) | record options | wall s, min [each round] | x uftrace -pg | x uftrace -finstrument-functions | CPU s, min [each round] | x uftrace -pg | x uftrace -finstrument-functions | %s | events recorded (entries + exits) | dropped | file MB |\n" \
  "$(for b in ${benchmarks//,/ }; do printf "%s us/op " "$b"; done | sed 's/ $//; s/us\/op /us\/op | /g')"
printf "|---|---|---|---|---|---|---|---|%s---|---|---|\n" "$(for b in ${benchmarks//,/ }; do printf -- "---|"; done)"
for run in "${runs[@]}"; do
  IFS='|' read -r key label bin runner options <<<"$run"
  cells=
  for b in ${benchmarks//,/ }; do cells+="$(fmt_list "${ops[$key,$b]}") | "; done
  case $runner in
    plain) ev="-"; dr="-"; sz="-" ;;
    uftrace) ev="$(fmt_list "${events[$key]}") (.dat / 16)"; dr="$(fmt_list "${dropped[$key]}")"; sz=$(fmt_list "${size[$key]}") ;;
    *) ev=$(fmt_list "${events[$key]}"); dr=$(fmt_list "${dropped[$key]}"); sz=$(fmt_list "${size[$key]}") ;;
  esac
  printf "| %s | %s | %s [%s] | %s | %s | %s [%s] | %s | %s | %s%s | %s | %s |\n" "$label" "${options:-(default)}" \
    "${min_wall[$key]}" "$(fmt_list "${wall[$key]}")" "$(ratio "${min_wall[$key]}" "$uf")" "$(ratio "${min_wall[$key]}" "$uf_cyg")" \
    "${min_cpu[$key]}" "$(fmt_list "${cpu_all[$key]}")" "$(ratio "${min_cpu[$key]}" "$ufc")" "$(ratio "${min_cpu[$key]}" "$ufc_cyg")" \
    "$cells" "$ev" "$dr" "$sz"
done
echo
for run in "${runs[@]}"; do
  IFS='|' read -r key label bin runner options <<<"$run"
  [[ -n "${status[$key]:-}" ]] && echo "not complete: $label ${options}: ${status[$key]}"
done
for note in "${skipped[@]}" "${notes[@]}"; do echo "$note"; done
if [[ -n "$rt" ]]; then
  echo "ringtrace record options (record --help): ${opt_names[*]}"
  if ((${#inline_notes[@]})); then
    echo "options about inlined functions, run with the g++ build: ${inline_notes[*]}"
  else
    echo "record --help offers no option about inlined functions"
  fi
  echo "ringtrace: $rt, $("$rt" --version 2>&1 | sed -n 1p) (built $(date -u -r "$rt" '+%Y-%m-%d %H:%M UTC' 2>/dev/null || echo '?'); repository at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'))"
fi
[[ -n "$built_by" ]] && echo "binaries built by $built_by"
# What the binaries say of themselves: db_bench's header, and the compilers in .comment.
[[ -n "$first_log" ]] && echo "db_bench: $(grep -m1 '^LevelDB:' "$first_log" | sed 's/^LevelDB: *//'); $(grep -m1 '^CPU:' "$first_log" | sed 's/  */ /g')"
for name in "${builds[@]}"; do
  comment=
  command -v readelf >/dev/null && comment=$(readelf -p .comment "${bin_of[$name]}" 2>/dev/null |
    sed -n 's/^ *\[ *[0-9a-f]*\] *//p' | paste -sd ';' | sed 's/;/; /g')
  echo "$name: ${bin_of[$name]}${comment:+ (.comment: $comment)}"
done
has_build pg || has_build cyg && echo "uftrace: $(uftrace --version | sed -n 1p)"
exit 0
