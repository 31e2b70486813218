"""Reads a chopsim kernel store with h5py, the way a user would (docs/traces.md), and checks its content.

Usage: read_store.py STORE.h5   (the store of hta_a100_2rank_nccl + the MI300X power log + fixtures/nvidia_smi.csv)
"""
import math
import sys

import h5py
import numpy as np

store = h5py.File(sys.argv[1], "r")
assert store.attrs["format"] == b"chopsim-kernel-store", store.attrs["format"]
assert store.attrs["schema_version"] == 2
assert set(store) >= {"kernels", "telemetry", "annotations", "streams", "strings", "sources"}, set(store)

names = store["strings"].asstr()[:]
kernels = store["kernels"][:]
assert len(kernels) == 3774, len(kernels)
# Schema 2: every record of this trace has its launch call (cuda_runtime events), which precedes it on the GPU.
launched = kernels[~np.isnan(kernels["launch_start_s"])]
assert len(launched) == len(kernels), len(launched)
assert (launched["launch_start_s"] <= launched["launch_end_s"]).all()
assert (launched["launch_start_s"] <= launched["start_s"]).all()
assert (launched["launch_thread"] >= 0).all()
assert store["kernels"].compression == "gzip" and store["kernels"].shuffle

classes = {value: name for name, value in h5py.check_enum_dtype(store["kernels"].dtype["class"]).items()}
collectives = {value: name for name, value in h5py.check_enum_dtype(store["kernels"].dtype["collective"]).items()}
total = kernels["duration_s"].sum()
assert math.isclose(total, 165185.838e-6, rel_tol=1e-12), total

# The top kernel by total time and its share, from the table alone.
by_name = {}
for row in kernels:
    by_name[row["name"]] = by_name.get(row["name"], 0.0) + row["duration_s"]
top = max(by_name, key=by_name.get)
assert names[top].startswith("ncclKernel_AllReduce_RING_LL_Sum_float"), names[top]
assert math.isclose(by_name[top] / total, 46762.159 / 165185.838, rel_tol=1e-9)

nccl = kernels[kernels["collective"] != 255]
assert len(nccl) == 21
assert {collectives[c] for c in nccl["collective"]} == {"all_reduce", "broadcast"}
assert {names[g] for g in nccl["group"]} == {"[0, 1]"}
assert all(classes[c] == "communication" for c in nccl["class"])
assert np.isnan(kernels["flops"]).all()  # this trace was recorded without record_shapes

telemetry = store["telemetry"][:]
assert len(telemetry) == 2888 + 6, len(telemetry)
mi300x = telemetry[telemetry["source"] == 1]
assert mi300x["power_w"].min() == 139.0 and mi300x["power_w"].max() == 751.0
assert np.isnan(mi300x["temp_edge_c"]).all()

sources = store["sources"]
assert sources.attrs["count"] == 3
kineto = sources["0"].attrs
assert kineto["format"] == b"kineto" and kineto["rank"] == 0 and kineto["world_size"] == 2
assert kineto["gpu_name"] == b"NVIDIA A100-PG509-200"
assert len(kineto["sha256"]) == 64
assert sources["2"].attrs["gpu_name"] == b"NVIDIA H100 80GB HBM3"
streams = store["streams"][:]
assert sorted(streams["stream"].tolist()) == [7, 40]
print("h5py read", len(kernels), "kernels,", len(telemetry), "telemetry samples,", len(names), "strings")
