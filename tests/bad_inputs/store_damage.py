#!/usr/bin/env python3
"""Writes a damaged copy of a chopsim kernel store, as another tool writing HDF5 might (tests/bad_inputs/run.sh).

Usage: store_damage.py VALID.h5 DAMAGE OUT.h5, DAMAGE one of: name_index, negative_duration, rank_huge, nan_start,
wrong_format, schema_version. (An out-of-range kernel class is covered by KernelStore.OutOfRangeRowsAreRefusedWhenRead:
h5py cannot write a value outside the class enum.)"""
import shutil
import sys

import h5py
import numpy as np

valid, damage, out = sys.argv[1:4]
shutil.copyfile(valid, out)
with h5py.File(out, "r+") as store:
    kernels = store["kernels"]
    if damage == "wrong_format":
        store.attrs["format"] = np.bytes_("something-else")
    elif damage == "schema_version":
        store.attrs["schema_version"] = np.int32(99)
    else:
        rows = kernels[:]
        if damage == "name_index":
            rows["name"][-1] = 999999
        elif damage == "negative_duration":
            rows["duration_s"][-1] = -1.0
        elif damage == "rank_huge":
            rows["rank"][-1] = 2147483647
        elif damage == "nan_start":
            rows["start_s"][-1] = float("nan")
        else:
            sys.exit("unknown damage " + damage)
        kernels[...] = rows
