#!/usr/bin/env bash
# Regenerates the shipped calibration profiles and their fit reports from the measurements in ../shared/data:
#   calibration/profiles/h100.yaml    + docs/calibration/h100.md
#   calibration/profiles/mi300x.yaml  + docs/calibration/mi300x.md
#   calibration/profiles/h200.yaml    + docs/calibration/h200.md
# Usage: scripts/calibrate-shipped.sh [--check] [CHOPSIM]
#   CHOPSIM  the chopsim binary (default: build/app/chopsim, then build-calib/app/chopsim)
#   --check  write to a temporary folder and compare the values (not the comments) with the shipped profiles
#            (exit 1 if they differ)
# The data folder is ../shared/data next to the project, or $CHOPSIM_SHARED_DATA; inputs are named relative to the
# project root in the profiles' headers, so keep the default location for byte-identical files.
set -euo pipefail
cd "$(dirname "$0")/.."

check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
chopsim=${1:-}
if [ -z "$chopsim" ]; then
  for candidate in build/app/chopsim build-calib/app/chopsim; do
    [ -x "$candidate" ] && chopsim=$candidate && break
  done
fi
[ -n "$chopsim" ] && [ -x "$chopsim" ] || { echo "calibrate-shipped: no chopsim binary (build first)" >&2; exit 2; }
data=${CHOPSIM_SHARED_DATA:-../shared/data}
[ -d "$data/kernels" ] || { echo "calibrate-shipped: measurements not found at $data" >&2; exit 2; }

profiles=calibration/profiles
reports=docs/calibration
if [ $check -eq 1 ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  profiles=$work
  reports=$work
fi

# H100: TraceLens per-op tables and the Kineto trace they were made from (Qwen1.5-0.5B on one H100; the trace adds
# one point per GEMM/attention call and the kernel timeline for launch_overhead), Vidur's Llama-2-70B op profile
# (fp16, 1..4096 tokens, TP 1..8), Vidur's NCCL all_reduce / send_recv on a DGX H100 (2/4/8 GPUs, and 2 nodes).
tl=$data/kernels/tracelens_h100_qwen
"$chopsim" calibrate \
  "$tl/GEMM.csv" "$tl/SDPA_fwd.csv" "$tl/BinaryElementwise.csv" "$tl/UnaryElementwise.csv" "$tl/Reduce_fwd.csv" \
  "$data/traces/kineto/tracelens_h100_qwen05b.json.gz" \
  "$data/kernels/vidur_llama2_70b_ops/h100.csv" \
  "$data/collectives/vidur_h100_dgx/all_reduce.csv" "$data/collectives/vidur_h100_dgx/send_recv.csv" \
  --hardware H100-SXM5-80GB --configs configs \
  -o "$profiles/h100.yaml" --report "$reports/h100.md"

# MI300X: the same model's TraceLens tables and trace on MI300X, TraceLens' RCCL summary of Llama-70B FSDP on 8x
# MI300X (start skew removed), and rocm-smi power / temperature / use of 8x MI300X at 5 s intervals. The traces
# hold no clock: each kernel is taken at the clock the power model holds for its measured load under the 750 W
# (--clock-mhz held; MI300X's cap binds far below its 2.1 GHz peak, AMD's dense GEMM runs at 1.2 GHz), and the GEMM
# and attention asymptotes stay at the hardware file's (0.94 from AMD's max-achievable FLOPs; 0.30): Qwen-0.5B's
# GEMMs of 19-52 GFLOP cannot say what a 1-TFLOP GEMM reaches, only how fast the efficiency rises (F_half), and its
# attention calls of one size (10 GFLOP, short sequences) not what an 8k-token attention does.
tl=$data/kernels/tracelens_mi300x_qwen
smi=$data/power/mi300x_rocm_smi_inference
"$chopsim" calibrate \
  "$tl/GEMM.csv" "$tl/SDPA_fwd.csv" "$tl/BinaryElementwise.csv" "$tl/UnaryElementwise.csv" "$tl/Reduce_fwd.csv" \
  "$data/traces/kineto/tracelens_mi300x_qwen05b.json.gz" \
  "$data/collectives/tracelens_mi300x_llama70b_fsdp/nccl_summary_implicit_sync.csv" \
  "$smi"/gpu_power_*.csv "$smi"/gpu_temp_*.csv "$smi"/gpu_usage_*.csv \
  --hardware MI300X --configs configs --clock-mhz held --keep-asymptote gemm,attention \
  -o "$profiles/mi300x.yaml" --report "$reports/mi300x.md"

# H200: the Kineto trace (record_shapes) of two eager PyTorch steps of the Llama-3.2-1B probe at micro-batch 4
# (../shared/data/measured/h200_llama32_1b): FLOPs of its GEMM and attention kernels and bytes of its elementwise,
# norm, reduction and copy kernels from the ops' shapes; and nvidia-smi's CSV of the same run, whose SM clock while
# the traced kernels ran is the clock the compute efficiencies are fitted at (the GPU was at its 700 W limit); and the
# probe's four micro-batch phases as run configs with their windows on that log's clock, to which the power model's
# voltage knee and activity weights are fitted (calibration/runs/h200-llama3.2-1b-eager.yaml).
m=$data/measured/h200_llama32_1b
"$chopsim" calibrate "$m/kineto_mb4.json.gz" "$m/nvidia-smi.csv" \
  --hardware H200-SXM-141GB --configs configs --power-runs calibration/runs/h200-llama3.2-1b-eager.yaml --quiet \
  -o "$profiles/h200.yaml" --report "$reports/h200.md"

if [ $check -eq 1 ]; then
  status=0
  for name in h100 mi300x h200; do
    # Compare the values only: comments name the temporary report path and quote hardware-file values that other
    # work may change (thermal, power) without changing any fit.
    strip() { sed -e 's/ *#.*$//' -e '/^$/d' "$1"; }
    if ! diff <(strip "$profiles/$name.yaml") <(strip "calibration/profiles/$name.yaml") >/dev/null; then
      echo "calibrate-shipped: calibration/profiles/$name.yaml is out of date (run scripts/calibrate-shipped.sh)"
      status=1
    fi
  done
  exit $status
fi
