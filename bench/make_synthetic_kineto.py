#!/usr/bin/env python3
"""Writes a large synthetic Kineto trace by replicating the events of a real one.

Usage: make_synthetic_kineto.py SOURCE.json[.gz] OUT.json TARGET_MB

Each replica k shifts every timestamp by k times the source's span and every External id, correlation id and flow
id by k times their range, so that ops, launches and kernels stay linked and distinct. Kineto's layout is kept:
all CPU-side events (cpu_op, user_annotation, python_function) of every replica first, then the GPU, runtime and
flow events, then the metadata events. The output streams to disk: memory stays at the size of the source trace.
"""
import gzip
import json
import sys

CPU_CATEGORIES = {"cpu_op", "user_annotation", "python_function", "cpu_instant_event"}


def main():
    source, out_path, target_mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
    opener = gzip.open if source.endswith(".gz") else open
    with opener(source, "rt") as f:
        trace = json.load(f)
    events = trace.pop("traceEvents")
    cpu = [e for e in events if e.get("cat") in CPU_CATEGORIES]
    meta = [e for e in events if e.get("ph") == "M"]
    rest = [e for e in events if e.get("cat") not in CPU_CATEGORIES and e.get("ph") != "M"]
    stamps = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(stamps) - min(stamps) + 1000.0
    ids = [e["args"].get(k) for e in events for k in ("External id", "correlation") if isinstance(e.get("args"), dict)]
    ids = [i for i in ids if isinstance(i, int)] + [e["id"] for e in events if isinstance(e.get("id"), int)]
    id_range = max(ids) + 1
    one = sum(len(json.dumps(e)) + 2 for e in cpu + rest)
    replicas = max(1, int(target_mb * 1e6 / one + 0.5))

    def shifted(e, k):
        if k == 0:
            return e
        e = dict(e)
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = e["ts"] + k * span
        if isinstance(e.get("id"), int):
            e["id"] = e["id"] + k * id_range
        args = e.get("args")
        if isinstance(args, dict):
            args = dict(args)
            for key in ("External id", "correlation"):
                if isinstance(args.get(key), int):
                    args[key] = args[key] + k * id_range
            e["args"] = args
        return e

    with open(out_path, "w") as out:
        out.write("{\n")
        for key, value in trace.items():
            out.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        out.write('  "traceEvents": [\n')
        first = True
        for group in (cpu, rest):
            for k in range(replicas):
                for e in group:
                    out.write(("" if first else ",\n") + "    " + json.dumps(shifted(e, k)))
                    first = False
        for e in meta:
            out.write(",\n    " + json.dumps(e))
        out.write("\n  ]\n}\n")
    print(f"{out_path}: {replicas} replicas of {source}")


if __name__ == "__main__":
    main()
