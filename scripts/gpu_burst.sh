#!/usr/bin/env bash
# One burst of the GPU half, from a bare GPU machine (experiments/README.md, "The GPU half").
#
#   OUT=/some/folder bash scripts/gpu_burst.sh
#
# Run from a copy of this working tree, or from the smaller tree `make gpu-tree` stages (what this
# script needs, under 64 MiB; scripts/gpu_tree.py), with .gpu-wheels/, filled by `make gpu-wheels`,
# beside it when the machine lacks a module the sweep imports. Uses the machine's own python3 and its PyTorch (never installs
# torch); installs into a scratch folder, with --no-deps and no network: tfx-book from its
# carried wheel if there is one (checked to be this tree's training code), else built from this
# tree, and, of scripts/gpu_wheels.txt, only what python3 cannot import (the GPU machines seen
# so far import all of it: carry .gpu-wheels only when a log says one is missing; the carried
# tree and folders must stay under 64 MiB). Then the bench (once: while results/gpu-bench.txt is not in the
# tree) and the next slice of the plan (tfx.runs.cost.GPU_PLAN, full profile), no run
# starting that would not end within MINUTES of the burst's start. Records already in
# results/ are skipped. Into $OUT: gpu-burst.log, bench.txt (when the bench ran) and
# results.tar.gz, the results/*.full.jsonl files this burst added to (tar -xzf it at the
# repository root, commit, and run the next burst).
#
# Environment (defaults in brackets):
#   OUT          the output folder (required)
#   PYTHON       the interpreter [python3]
#   WHEELS       the carried wheels [.gpu-wheels]
#   WHEEL_LIST   what may be missing [scripts/gpu_wheels.txt]
#   MINUTES      the burst, installation and bench included [9]
#   JOBS         runs trained at once [8]
#   ENSEMBLE     up to this many compatible runs trained as one program (tfx.sweep --ensemble) [1];
#                above 1, two tiny ensembles are trained first (python -m tfx.bench --ensemble-check),
#                and if that fails the burst says so and trains its runs alone
#   CUDA_TESTS   1: run tests/runs/test_cuda_paths.py first (pytest; the log keeps the result) [0]
#   EXPERIMENTS  names of experiments/*.toml, in order [tfx.runs.cost.GPU_PLAN]
#   RECORDS      the folder of records already made: its full-profile files and LINEAGE.jsonl [results]
#   BENCH        auto | always | never [auto]
#   BENCH_ARGS   arguments of python -m tfx.bench [the GPU targets: 6+6, d 512, 4k and 16k tokens]
#   FIXTURE      1: every run a tiny CPU stand-in (tests/runs/test_gpu_burst.py) [0]
set -u -o pipefail

START=$(date +%s)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "gpu_burst: error: $*" >&2; exit 2; }
[ -n "${OUT:-}" ] || die "OUT is not set: name the output folder, e.g. OUT=/tmp/out bash scripts/gpu_burst.sh"
mkdir -p "$OUT" || die "OUT=$OUT cannot be created"
OUT=$(cd "$OUT" && pwd)
PYTHON=${PYTHON:-python3}
WHEELS=${WHEELS:-$REPO/.gpu-wheels}
WHEEL_LIST=${WHEEL_LIST:-$REPO/scripts/gpu_wheels.txt}
MINUTES=${MINUTES:-9}
JOBS=${JOBS:-8}
ENSEMBLE=${ENSEMBLE:-1}
RECORDS=${RECORDS:-$REPO/results}
BENCH=${BENCH:-auto}
BENCH_ARGS=${BENCH_ARGS:-"--size custom --d-model 512 --heads 8 --layers 6 --batch 128 --length 32 --vocab 10000 --placements pre,post --rounds 10"}
BENCH_ARGS_16K=${BENCH_ARGS_16K:-"--size custom --d-model 512 --heads 8 --layers 6 --batch 256 --length 64 --vocab 10000 --placements pre --rounds 10 --train-steps 0"}
FIXTURE=${FIXTURE:-0}
CUDA_TESTS=${CUDA_TESTS:-0}
case "$BENCH" in auto|always|never) ;; *) die "BENCH=$BENCH must be auto, always or never" ;; esac
case "$FIXTURE" in 0|1) ;; *) die "FIXTURE=$FIXTURE must be 0 or 1" ;; esac
case "$CUDA_TESTS" in 0|1) ;; *) die "CUDA_TESTS=$CUDA_TESTS must be 0 or 1" ;; esac
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "JOBS=$JOBS must be an integer ≥ 1"
[[ "$ENSEMBLE" =~ ^[1-9][0-9]*$ ]] || die "ENSEMBLE=$ENSEMBLE must be an integer ≥ 1"
[[ "$MINUTES" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "MINUTES=$MINUTES must be a number of minutes"
command -v "$PYTHON" >/dev/null || die "PYTHON=$PYTHON is not a command"
[ -f "$WHEEL_LIST" ] || die "WHEEL_LIST=$WHEEL_LIST does not exist"

exec > >(tee "$OUT/gpu-burst.log") 2>&1
TEE=$!
trap 'exec 1>&- 2>&-; wait $TEE' EXIT  # the log is whole when the script returns
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-burst.XXXXXX")
SITE=$WORK/site
elapsed() { echo $(( $(date +%s) - START )); }
echo "== gpu_burst $(date -u +%FT%TZ): tree $REPO, out $OUT, budget $MINUTES min, $JOBS job(s)"
"$PYTHON" -c 'import sys, torch; print("python", sys.version.split()[0], "· torch", torch.__version__,
"· cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))' || die "$PYTHON cannot import torch"
command -v nvidia-smi >/dev/null && nvidia-smi -L

# ------------------------------------------------------------------ install (no network, no torch)
picks=()
tfx_wheel=$(ls "$WHEELS"/tfx_book-*.whl 2>/dev/null | head -n 1)
if [ -n "$tfx_wheel" ]; then
  picks+=("$tfx_wheel"); tfx_from=$(basename "$tfx_wheel")
else  # no carried wheel of tfx-book: build it from this tree (a copy: the tree stays as it is)
  mkdir -p "$WORK/src"
  cp -r "$REPO/tfx" "$REPO/pyproject.toml" "$REPO/setup.py" "$REPO/MANIFEST.in" "$REPO/README.md" "$WORK/src"/ \
    || die "cannot copy the tree's tfx to build it"
  picks+=("$WORK/src"); tfx_from="this tree"
fi
while read -r req mod; do
  [ -z "$req" ] && continue
  if "$PYTHON" -c "import $mod" 2>/dev/null; then
    echo "   $mod: the machine's own"
    continue
  fi
  dist=${req%%==*}; ver=${req#*==}
  norm=$(echo "$dist" | tr 'A-Z-.' 'a-z__')
  whl=$(ls "$WHEELS"/*.whl 2>/dev/null | while read -r f; do
          b=$(basename "$f" | tr 'A-Z' 'a-z'); [[ "$b" == "$norm-$ver-"* ]] && echo "$f"; done | head -n 1)
  [ -n "$whl" ] || die "$PYTHON cannot import $mod and WHEELS=$WHEELS has no wheel of $req: run 'make gpu-wheels'"
  echo "   $mod: from $(basename "$whl")"
  picks+=("$whl")
done < <(sed -e 's/#.*//' "$WHEEL_LIST" | awk 'NF')
"$PYTHON" -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --no-cache-dir \
  --disable-pip-version-check --target "$SITE" "${picks[@]}" || die "pip could not install ${picks[*]}"
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

# the installed tfx must train with this tree's code, or its records would be keyed to another version
version='from tfx.runs.codeversion import code_version; import tfx; print(code_version(), tfx.__file__)'
read -r tree_v tree_f < <(cd "$REPO" && "$PYTHON" -c "$version")
read -r site_v site_f < <(cd "$WORK" && "$PYTHON" -c "$version")
[[ "$site_f" == "$SITE"/* ]] || die "tfx imported from $site_f, not from the installed wheel"
[ "$tree_v" = "$site_v" ] || die "the carried $(basename "$tfx_wheel") trains with code $site_v, this tree with $tree_v: run 'make gpu-wheels' again and carry it"
echo "   tfx-book installed from $tfx_from: code $site_v ($(elapsed) s)"

# ------------------------------------------------------------------ records so far
RES=$WORK/results
mkdir -p "$RES"
# every experiment's full-profile files (open, sharded and sealed: tfx.runs.results.files_for) and
# the lineage ledger, which proves older records current (a sweep skips those too)
[ -d "$RECORDS" ] || die "RECORDS=$RECORDS is not a folder"
(cd "$WORK" && "$PYTHON" - "$RECORDS" "$RES" "$REPO/experiments" <<'PY'
import shutil, sys
from pathlib import Path
from tfx.runs import lineage, results
records, res, experiments = map(Path, sys.argv[1:])
for e in sorted(experiments.glob("*.toml")):
    for f in results.files_for(records, e.stem, "full"):
        shutil.copy2(f, res)
if lineage.ledger_path(records).is_file():
    shutil.copy2(lineage.ledger_path(records), res)
PY
) || die "cannot copy the records of RECORDS=$RECORDS"
mkdir -p "$WORK/before" && cp "$RES"/* "$WORK/before"/ 2>/dev/null

# ------------------------------------------------------------------ the bench (once)
if [ "$BENCH" = always ] || { [ "$BENCH" = auto ] && [ ! -f "$REPO/results/gpu-bench.txt" ]; }; then
  echo "== bench ($(elapsed) s): python -m tfx.bench $BENCH_ARGS"
  (cd "$WORK" && timeout 240 "$PYTHON" -m tfx.bench $BENCH_ARGS && echo "== 16k-token batches" &&
   timeout 120 "$PYTHON" -m tfx.bench $BENCH_ARGS_16K) > "$OUT/bench.txt" 2>&1
  echo "   bench exit $? ($(elapsed) s); $OUT/bench.txt (commit it as results/gpu-bench.txt)"
  cat "$OUT/bench.txt"
fi

# ------------------------------------------------------------------ checks before the sweep
if [ "$CUDA_TESTS" = 1 ]; then  # without the root conftest and pytest.ini's nbval options: a bare machine lacks them
  echo "== CUDA tests ($(elapsed) s): tests/runs/test_cuda_paths.py"
  (cd "$REPO" && timeout 240 "$PYTHON" -m pytest -q -p no:cacheprovider --noconftest -o addopts="" \
     tests/runs/test_cuda_paths.py 2>&1 | tail -n 30)
  echo "   CUDA tests exit ${PIPESTATUS[0]} ($(elapsed) s)"
fi
if [ "$ENSEMBLE" -gt 1 ]; then
  echo "== ensemble check ($(elapsed) s): python -m tfx.bench --ensemble-check"
  if (cd "$WORK" && timeout 180 "$PYTHON" -m tfx.bench --ensemble-check) > "$WORK/ensemble-check.txt" 2>&1; then
    sed 's/^/   /' "$WORK/ensemble-check.txt"
  else
    tail -n 25 "$WORK/ensemble-check.txt"
    echo "   the ensemble check failed on this machine: ENSEMBLE=$ENSEMBLE -> 1, every run trains alone"
    ENSEMBLE=1
  fi
fi

# ------------------------------------------------------------------ the next slice of the plan
if [ -z "${EXPERIMENTS:-}" ]; then
  EXPERIMENTS=$(cd "$WORK" && "$PYTHON" -c 'from tfx.runs.cost import GPU_PLAN; print(*GPU_PLAN)')
fi
paths=()
for e in $EXPERIMENTS; do
  [ -f "$REPO/experiments/$e.toml" ] || die "EXPERIMENTS names $e: there is no experiments/$e.toml"
  paths+=("$REPO/experiments/$e.toml")
done
left=$("$PYTHON" -c "print(round($MINUTES - $(elapsed) / 60 - 0.25, 2))")  # 15 s kept to pack the records
status=0
if "$PYTHON" -c "import sys; sys.exit(not $left >= 0.5)"; then
  echo "== sweep ($(elapsed) s): $EXPERIMENTS within $left min"
  fixture=(); [ "$FIXTURE" = 1 ] && fixture=(--fixture)
  (cd "$WORK" && "$PYTHON" -m tfx.sweep "${paths[@]}" --profile full --budget-minutes "$left" --jobs "$JOBS" \
     --ensemble "$ENSEMBLE" --results "$RES" "${fixture[@]}")
  status=$?
else
  echo "== no time left for the sweep ($left min)"
fi

# ------------------------------------------------------------------ what this burst added
changed=()
for f in "$RES"/*.jsonl "$RES"/*.jsonl.xz; do  # open batches appended to, and sealed ones (tfx.runs.results)
  [ -e "$f" ] || continue
  b=$(basename "$f")
  cmp -s "$f" "$WORK/before/$b" 2>/dev/null || changed+=("results/$b")
done
for f in "$WORK"/before/*.jsonl; do  # an open batch the sweep sealed: its records are in the sealed file
  [ -e "$f" ] || continue
  b=$(basename "$f")
  [ -e "$RES/$b" ] || echo "== sealed: results/$b is now in a results/*.jsonl.xz of this burst: git rm results/$b"
done
if [ ${#changed[@]} -gt 0 ]; then
  tar -czf "$OUT/results.tar.gz" -C "$WORK" "${changed[@]}"
  echo "== new records in $OUT/results.tar.gz: ${changed[*]} (tar -xzf results.tar.gz at the repository root)"
else
  echo "== no new records"
fi
echo "== done in $(elapsed) s, sweep exit $status"
exit $status
