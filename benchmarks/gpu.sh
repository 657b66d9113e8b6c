#!/usr/bin/env bash
# The GPU check: every GPU figure of docs/performance.md, and a pass or fail for each claim, in about
# 8 minutes on a cold machine with one H100 or H200 (each step has its own limit, and a step that would run
# far past 9 minutes is skipped).
#
#   bash benchmarks/gpu.sh               # on a machine with a CUDA GPU and torch
#   bash benchmarks/gpu.sh > gpu.log     # the whole log, for docs/performance.md
#   bash benchmarks/gpu.sh --dry-run     # every step on the CPU at toy sizes (about 3 minutes): the plumbing
#
# It uses $PYTHON, else .venv/bin/python, else python3. Where that python has torch but not the project
# (a lent GPU machine), arena and its plugins are installed into .gpu-venv, which sees that python's
# packages (torch) even where that python is itself a venv; nothing is downloaded. A package missing
# there (trueskill, say) can be put in .whl/ as a wheel first.
#
# Each step prints its rows as it gets them. The last lines are the claims, PASS or FAIL, and the steps
# that did not finish; the exit status is 0 only when every claim passed and every step finished (1 when
# not, 2 for an unknown argument or a python without torch). GPU_QUALITY_ARMS overrides the training
# settings whose time to quality is measured.
set -uo pipefail
USAGE="usage: bash benchmarks/gpu.sh [--dry-run] [--help]"
DRY_RUN=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY_RUN=1 ;;
    -h|--help)
      echo "$USAGE"
      echo "Every GPU figure of docs/performance.md and a PASS or FAIL for each claim; --dry-run: every step on the CPU"
      echo "at toy sizes (the plumbing). Uses \$PYTHON, else .venv/bin/python, else python3 (it needs torch)."
      exit 0 ;;
    *) echo "error: unknown argument '$arg'; $USAGE" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
DEADLINE=${GPU_DEADLINE:-540}  # seconds: a step that would run far past it is skipped, and said so
DEVICE=cuda GAMES=1000 MINUTES=0.67 LEAGUE="--participants 100 --ppo 60 --games-per-pairing 16 --max-envs 65536"
ENVS=65536 ENV_SIZES=65536,1048576 LAUNCHES=--count-launches
if [ "$DRY_RUN" = 1 ]; then
  DEVICE=cpu GAMES=50 MINUTES=0.3 LEAGUE="--participants 12 --ppo 4 --games-per-pairing 2 --max-envs 4096"
  ENVS=256 ENV_SIZES=256 LAUNCHES=
fi

PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
# Every step runs torch: a python without it is refused here, before anything is installed or run.
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "error: PYTHON=$PYTHON: no such program; set PYTHON to a python with torch" >&2; exit 2
fi
if ! torch_error=$("$PYTHON" -c "import torch" 2>&1); then
  echo "error: PYTHON=$PYTHON cannot import torch ($(printf '%s\n' "$torch_error" | tail -n 1)); set PYTHON to a" \
    "python with torch" >&2
  exit 2
fi
if ! "$PYTHON" -c "import arena_ppo, arena_crank, arena_placeholder" 2>/dev/null; then
  echo "== installing arena into .gpu-venv (seeing $PYTHON's packages; nothing downloaded)"
  "$PYTHON" -m venv --system-site-packages .gpu-venv || exit 1
  # A venv made from a venv's python sees the base interpreter's packages, not that venv's (where torch
  # is): a .pth line adds that python's own site folders, with their .pth files.
  site_dir=$(.gpu-venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  "$PYTHON" -c "import site, sys
dirs = site.getsitepackages() + [site.getusersitepackages()]
print('import site; ' + '; '.join(f'site.addsitedir({d!r})' for d in dirs))" > "$site_dir/gpu_check_parent.pth"
  PYTHON=.gpu-venv/bin/python
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-index --no-deps .whl/*.whl || exit 1
  fi
  "$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/arena-ppo \
    -e plugins/arena-crank -e plugins/arena-placeholder || exit 1
fi
[ "$DEVICE" = cpu ] || "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" || {
  echo "no CUDA device: nothing to measure"; exit 1; }

OUT_DIR=$(mktemp -d)
trap 'rm -rf "$OUT_DIR"' EXIT
UNFINISHED=()
CLAIMS=()

step() {  # step TITLE SECONDS COMMAND...: one figure or table, within its own time limit
  local title=$1 limit=$2; shift 2
  echo; echo "== $title (limit ${limit} s)"
  if [ $((SECONDS + limit / 2)) -gt "$DEADLINE" ]; then
    echo "(skipped: the check's ${DEADLINE} s are nearly spent)"; UNFINISHED+=("$title (skipped)"); return 1
  fi
  local start=$SECONDS
  if declare -F "$1" >/dev/null; then timeout "$limit" bash -c "$*"; else timeout "$limit" "$@"; fi
  local status=$?
  if [ $status -eq 124 ]; then echo "(stopped at its ${limit} s limit)"; UNFINISHED+=("$title (limit)");
  elif [ $status -ne 0 ]; then UNFINISHED+=("$title (exit $status)"); fi
  echo "-- $((SECONDS - start)) s"
  return $status
}

claim() {  # claim TEXT FIGURE OK: one line of the verdict
  CLAIMS+=("$( [ "$3" = 1 ] && echo PASS || echo FAIL )  $1: $2")
}

echo "== machine"
[ "$DEVICE" = cpu ] && echo "a dry run on the CPU" || nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PYTHON" -c "import torch, sys; print('torch', torch.__version__, '| python', sys.version.split()[0])"
XDIST=()
"$PYTHON" -c "import xdist" 2>/dev/null && XDIST=(-n 4)

# -- the compiler's cache: a run's second update, on an empty cache and from it -------------------------
# Every training arm of the time-to-quality step runs three updates here first, so that it is measured on
# a machine that has compiled its shapes once; the trainer's defaults run again, from the cache.
GPU_QUALITY_ARMS=${GPU_QUALITY_ARMS:-"defaults=--device $DEVICE;4096-envs=--device $DEVICE --num-envs 4096 \
--set ppo.batch_size=32768"}
IFS=';' read -r -a ARMS <<< "$GPU_QUALITY_ARMS"
second_update() {  # second_update OUT [ARGS...]: seconds from the command to the row of its second update
  local out=$1 start end
  shift
  start=$(date +%s.%N)
  "$PYTHON" -m arena train ppo --vs crank --device "$DEVICE" --max-steps $((1 << 40)) --eval-games 0 \
    --no-progress --out "$out" "$@" > "$out.log" 2>&1 &
  local pid=$!
  while [ "$(cat "$out/metrics.csv" 2>/dev/null | wc -l)" -lt 3 ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
  end=$(date +%s.%N)
  kill $pid 2>/dev/null; wait $pid 2>/dev/null
  [ "$(cat "$out/metrics.csv" 2>/dev/null | wc -l)" -ge 3 ] || { tail -3 "$out.log" >&2; return 1; }
  "$PYTHON" -c "print(f'{$end - $start:.1f}')"
}
compile_once() {
  local cache held i=0 t
  cache=$("$PYTHON" -c "from arena.env.compiled import use_compile_cache; print(use_compile_cache())")
  held=$(find "$cache" -type f 2>/dev/null | wc -l)
  [ "$held" -gt 0 ] && echo "(the compile cache $cache already holds $held files: 'first' is not a cold start)"
  for arm in "${ARMS[@]}"; do
    # shellcheck disable=SC2086  # the arm's options
    t=$(second_update "$OUT_DIR/first-$i" ${arm#*=}) || return 1
    echo "second update from the command, first run of ${arm%%=*}: $t s"
    [ $i -eq 0 ] && echo "$t" > "$OUT_DIR/second-update-first"
    i=$((i + 1))
  done
  # shellcheck disable=SC2086
  t=$(second_update "$OUT_DIR/again" ${ARMS[0]#*=}) || return 1
  echo "second update from the command, ${ARMS[0]%%=*} again, from the cache: $t s"
  echo "$t" > "$OUT_DIR/second-update-again"
}
export PYTHON OUT_DIR DEVICE GPU_QUALITY_ARMS
export -f second_update compile_once  # run by timeout, in a shell of their own
step "a run's second update, on the first run of each arm and again from the cache" 150 \
  bash -c 'IFS=";" read -r -a ARMS <<< "$GPU_QUALITY_ARMS"; compile_once'
if [ -f "$OUT_DIR/second-update-again" ]; then
  first=$(cat "$OUT_DIR/second-update-first") again=$(cat "$OUT_DIR/second-update-again")
  claim "a run reaches its second update within 3 s of its start on a machine that compiled once" \
    "$again s (first run: $first s)" "$("$PYTHON" -c "print(int($again <= 3))")"
fi

# -- the GPU tests ------------------------------------------------------------------------------------
SYNC_TESTS=(plugins/arena-ppo/tests/test_ppo_cuda.py::test_rollout_steps_and_an_update_never_wait_for_the_host
            tests/wrappers/test_torchrl_env.py::test_the_step_path_never_syncs_with_the_gpu
            tests/wrappers/test_rsl_rl_env.py::test_a_step_never_waits_for_the_host_on_a_gpu)
step "GPU tests: the rollout step, the update and the interfaces never wait for the host" 90 \
  "$PYTHON" -m pytest -q -p no:cacheprovider "${XDIST[@]}" "${SYNC_TESTS[@]}"
status=$?
claim "no host sync in the rollout step, the update and the interfaces' step (3 tests)" "pytest exit $status" \
  "$([ $status -eq 0 ] && echo 1 || echo 0)"

# Skipped where torchrl or rsl_rl is not installed.
step "GPU tests: the env, PPO, tournaments, the ladder and the interfaces" 150 \
  "$PYTHON" -m pytest -q -p no:cacheprovider "${XDIST[@]}" tests/env/test_env_cuda.py \
  plugins/arena-ppo/tests/test_ppo_cuda.py tests/tournament/test_tournament_cuda.py \
  plugins/arena-crank/tests/test_ladder_cuda.py tests/wrappers/test_torchrl_env.py tests/wrappers/test_rsl_rl_env.py \
  -k "cuda or gpu"
status=$?
claim "every GPU test passes" "pytest exit $status" "$([ $status -eq 0 ] && echo 1 || echo 0)"

# -- time to quality ----------------------------------------------------------------------------------
# The trainer's defaults, and the best setting measured on an H200 before (4,096 envs, minibatch 32,768).
ARM_ARGS=()
for arm in "${ARMS[@]}"; do ARM_ARGS+=(--arm "$arm"); done
step "time to quality: 1,000 sampled games each against crank (all won) and the placeholder (85 %)" 200 \
  "$PYTHON" benchmarks/time_to_quality.py "${ARM_ARGS[@]}" --one-at-a-time --minutes "$MINUTES" \
  --save-updates 8 --games "$GAMES" --device "$DEVICE" --out "$OUT_DIR/quality"
if [ -f "$OUT_DIR/quality/results.json" ]; then
  while IFS= read -r line; do CLAIMS+=("$line"); done < <("$PYTHON" - "$OUT_DIR/quality/results.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))
for r in rows:
    if "failed" in r:  # its training failed: no figure
        print(f"FAIL  arm {r['arm']} seed {r['seed']}: training failed ({r['failed']})")
        continue
    reached = f"{r['quality_s']:.1f} s" if "quality_s" in r else "not reached in its run"
    print(f"figure  arm {r['arm']}: {r['sps']:,.0f} training env-steps/s, time to the bar {reached}")
times = [r["quality_s"] for r in rows if "quality_s" in r]
best = min(times, default=None)
print(f"{'PASS' if best is not None and best <= 15 else 'FAIL'}  time to the bar within 15 s, compile included, "
      f"on a machine that compiled once: best arm {'%.1f s' % best if best is not None else 'none reached it'}")
EOF
  )
fi

# -- a league -----------------------------------------------------------------------------------------
# 60 PPO participants from the time-to-quality runs' checkpoints, 11 CrankAgent variants, 29 placeholders:
# 79,200 games
# shellcheck disable=SC2086  # LEAGUE is a list of options
# (the step writes through tee without running in a pipeline's subshell, which would lose its UNFINISHED entry)
step "a 100-participant league in one go" 60 \
  "$PYTHON" benchmarks/tournament.py --device "$DEVICE" $LEAGUE --max-checkpoints 3 --checkpoints "$OUT_DIR/quality/*/*.pt" \
  > >(tee "$OUT_DIR/league.log")
wait $!  # tee has written the whole log
play=$(sed -n 's/^| play wall time (s) *| \([0-9.]*\) |$/\1/p' "$OUT_DIR/league.log")
[ -n "$play" ] && claim "the 100-participant league plays in 8 s or less" "$play s" \
  "$("$PYTHON" -c "print(int($play <= 8))")"

# -- the tables -----------------------------------------------------------------------------------------
step "the interfaces against the native game loop" 30 \
  "$PYTHON" benchmarks/wrappers.py --device "$DEVICE" --sizes "$ENVS" --steps 30 --rounds 3
step "env step, eager and compiled" 80 \
  "$PYTHON" benchmarks/env_throughput.py --device "$DEVICE" --sizes "$ENV_SIZES" --paths eager,compiled --repeats 3
step "rollout step and update, eager and compiled; kernel launches a rollout step" 60 \
  "$PYTHON" benchmarks/update_paths.py --device "$DEVICE" --envs "$ENVS" --repeats 3 $LAUNCHES

echo
echo "== claims"
failed=0
for line in "${CLAIMS[@]}"; do
  echo "$line"
  case "$line" in FAIL*) failed=$((failed + 1)) ;; esac
done
if [ "${#UNFINISHED[@]}" -eq 0 ]; then
  echo "every step finished, in $SECONDS s"
else
  echo "steps that did not finish: $(IFS=';'; echo "${UNFINISHED[*]}")"
fi
if [ "$failed" -gt 0 ] || [ "${#UNFINISHED[@]}" -gt 0 ]; then
  echo "the check failed: $failed claim(s) FAIL, ${#UNFINISHED[@]} step(s) unfinished"
  exit 1
fi
