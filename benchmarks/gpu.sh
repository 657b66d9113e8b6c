#!/usr/bin/env bash
# Every GPU figure of docs/performance.md in one go: at most 8 minutes on one H100 or H200.
#
#   bash benchmarks/gpu.sh               # on a machine with a CUDA GPU and torch
#   bash benchmarks/gpu.sh > gpu.log     # the tables one after another, for docs/performance.md
#
# It uses $PYTHON, else .venv/bin/python, else python3. Where that python has torch but not the project
# (a lent GPU machine), arena and its plugins are installed into a venv that sees the system's packages,
# without a download; a package missing there (trueskill, say) can be put in .whl/ as a wheel first.
# Each step has its own time limit, so one that hangs costs its share and the rest still run.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
if ! "$PYTHON" -c "import arena_ppo, arena_crank" 2>/dev/null; then
  echo "== installing arena into .gpu-venv (system packages visible, nothing downloaded)"
  "$PYTHON" -m venv --system-site-packages .gpu-venv || exit 1
  PYTHON=.gpu-venv/bin/python
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PYTHON" -m pip install -q --no-index --no-deps .whl/*.whl || exit 1
  fi
  "$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation -e . -e plugins/arena-ppo \
    -e plugins/arena-crank -e plugins/arena-placeholder || exit 1
fi
"$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" || {
  echo "no CUDA device: nothing to measure"; exit 1; }

step() {  # step TITLE SECONDS COMMAND...: one figure, within its own time limit
  local title=$1 limit=$2; shift 2
  echo; echo "== $title (limit ${limit} s)"
  local start=$SECONDS
  timeout "$limit" "$@"
  local status=$?
  [ $status -eq 124 ] && echo "(stopped at its ${limit} s limit)"
  echo "-- $((SECONDS - start)) s"
}

OUT_DIR=$(mktemp -d)
trap 'rm -rf "$OUT_DIR"' EXIT

echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PYTHON" -c "import torch, sys; print('torch', torch.__version__, '| python', sys.version.split()[0])"

step "GPU tests: the env, PPO and its update, tournaments, the ladder" 85 \
  "$PYTHON" -m pytest -q -p no:cacheprovider tests/env/test_env_cuda.py plugins/arena-ppo/tests/test_ppo_cuda.py \
  tests/tournament/test_tournament_cuda.py plugins/arena-crank/tests/test_ladder_cuda.py

# Skipped where torchrl or rsl_rl is not installed.
step "GPU tests: the TorchRL and rsl_rl interfaces step with no copy to the host" 30 \
  "$PYTHON" -m pytest -q -p no:cacheprovider tests/wrappers/test_torchrl_env.py tests/wrappers/test_rsl_rl_env.py \
  -k cuda

step "the interfaces against the native game loop" 25 \
  "$PYTHON" benchmarks/wrappers.py --device cuda --sizes 16384,65536 --steps 30 --rounds 3

step "env step, eager and compiled" 50 \
  "$PYTHON" benchmarks/env_throughput.py --device cuda --sizes 16384,65536,262144,1048576 --paths eager,compiled \
  --repeats 3

step "rollout step and update, eager and compiled; kernel launches a rollout step" 65 \
  "$PYTHON" benchmarks/update_paths.py --device cuda --envs 16384,65536,262144 --repeats 3 --count-launches

train_sps() {  # train_sps ENVS: arena train ppo's own env-steps/s at ENVS envs (median over its updates), with
  # 4 minibatches an epoch as at the CPU's defaults (1,024 envs x 32 steps in minibatches of 8,192)
  local envs=$1 out="$OUT_DIR/sps-$1"
  "$PYTHON" -m arena train ppo --vs crank --device cuda --num-envs "$envs" --max-steps $((envs * 32 * 6)) \
    --set ppo.batch_size=$((envs * 8)) --eval-games 0 --no-progress --out "$out" >/dev/null || return 1
  "$PYTHON" - "$out/metrics.csv" "$envs" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))[1:]  # the first update warms up
print(f"{int(sys.argv[2]):>9,} envs: {statistics.median(float(r['sps']) for r in rows):>12,.0f} env-steps/s "
      f"(median of {len(rows)} updates; rollout alone {statistics.median(float(r['collect_sps']) for r in rows):,.0f})")
EOF
}
step "training env-steps/s, 4 minibatches an epoch" 65 bash -c "$(declare -f train_sps); \
  PYTHON=$PYTHON OUT_DIR=$OUT_DIR; for n in 16384 65536 262144; do train_sps \$n; done"

# The learning run's batch: GPU_LEARN_ARGS overrides it (the trainer's CUDA defaults when empty).
GPU_LEARN_ARGS=${GPU_LEARN_ARGS-"--num-envs 16384 --set ppo.batch_size=32768"}
# shellcheck disable=SC2086  # GPU_LEARN_ARGS is a list of options
step "a 90-second learning run against crank ($GPU_LEARN_ARGS)" 115 \
  "$PYTHON" -m arena train ppo --vs crank --device cuda --max-time 90 --eval-games 200 --save-interval 50000000 \
  $GPU_LEARN_ARGS --no-progress --out "$OUT_DIR/learn"

# 60 PPO participants from the learning run's checkpoints, 11 CrankAgent variants, 29 placeholders: 79,200 games
step "a 100-participant league in one go" 45 \
  "$PYTHON" benchmarks/tournament.py --device cuda --participants 100 --ppo 60 --max-checkpoints 3 \
  --games-per-pairing 16 --max-envs 65536 --checkpoints "$OUT_DIR/learn/*.pt"
