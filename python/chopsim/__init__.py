"""chopsim from Python (docs/python.md).

    import chopsim
    r = chopsim.run("configs/llama3-8b-fsdp.yaml", training__micro_batch=1)
    r.tokens_per_s, r.mfu, r.memory["peak_bytes_per_gpu"], r.to_dict()

Keys of a run config are given as keyword arguments with "__" for "." (training__micro_batch=1), or as a mapping
(overrides={"training.micro_batch": 1}); values are checked as the config file's own. Bad input raises
chopsim.InputError (a ValueError) with the CLI's message: file, line, key and the fix.
"""

import csv
import json
import os

# Installed from a wheel (`pip install .`), the package carries the shipped configs: found by name through
# CHOPSIM_CONFIG_PATH after the user's own folders (a build tree's module finds the source tree's configs itself).
_PACKAGED_CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs")
if os.path.isdir(os.path.join(_PACKAGED_CONFIGS, "hardware")):
    _path = [p for p in os.environ.get("CHOPSIM_CONFIG_PATH", "").split(os.pathsep) if p]
    if _PACKAGED_CONFIGS not in _path:
        os.environ["CHOPSIM_CONFIG_PATH"] = os.pathsep.join(_path + [_PACKAGED_CONFIGS])

from . import _chopsim  # noqa: E402  (after the config path: the extension reads it at each run)

__version__ = _chopsim.__version__
InputError = _chopsim.InputError
Error = _chopsim.Error

__all__ = ["run", "load_config", "sweep", "read_sweep", "study", "read_study", "report", "RunResult", "InputError", "Error", "__version__"]


def _yaml_text(value):
    """A Python value as the YAML text a config would hold (JSON is YAML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    return json.dumps(value)


def _table(path, name):
    """Dataset `name` of the HDF5 file `path` as a pandas DataFrame (text columns decoded), or without pandas as a
    numpy structured array. Needs h5py (Debian's python3-h5py)."""
    try:
        import h5py
    except ImportError as error:
        raise Error("reading %s needs h5py (apt-get install python3-h5py)" % path) from error
    if not os.path.exists(path):
        raise Error("%s does not exist: run with out=DIR to write the op table and telemetry" % path)
    with h5py.File(path, "r") as f:
        if name not in f:
            raise Error("%s has no /%s table (a run without power dynamics has no telemetry)" % (path, name))
        array = f[name][()]
    try:
        import pandas
    except ImportError:
        return array
    frame = pandas.DataFrame(array)
    for column in frame.columns:
        if array.dtype[column].kind == "S":
            frame[column] = frame[column].str.decode("utf-8")
    return frame


def _override_pairs(overrides, keys):
    """(dotted key, YAML text) pairs of a mapping of overrides and keyword arguments ("__" for ".")."""
    merged = dict(overrides or {})
    merged.update({key.replace("__", "."): value for key, value in keys.items()})
    return [(key, _yaml_text(value)) for key, value in merged.items()]


class RunResult:
    """A run's figures: every key of summary.json as an attribute (nested ones as dicts), and to_dict(); with
    run(..., out=DIR) also ops() and telemetry(), the tables of DIR/ops.h5."""

    def __init__(self, summary, out=None):
        self._summary = summary
        self._out = out
        for key, value in summary.items():
            setattr(self, key, value)

    def to_dict(self):
        return json.loads(json.dumps(self._summary))

    def ops(self):
        """Every simulated op (ops.h5 /ops: rank, iteration, stream, name, kind, class, start_s, duration_s, flops,
        bytes, ...) as a pandas DataFrame, or a numpy structured array without pandas. Needs run(..., out=DIR)."""
        return _table(os.path.join(self._out or "", "ops.h5"), "ops")

    def telemetry(self):
        """Per GPU and interval (ops.h5 /telemetry: gpu, time_s, duration_s, power_w, clock_mhz, temperature_c,
        throttled_fraction) as a pandas DataFrame, or a numpy structured array without pandas. Needs out=DIR."""
        return _table(os.path.join(self._out or "", "ops.h5"), "telemetry")

    def __repr__(self):
        run = self._summary.get("run", {})
        return "RunResult(%s on %s GPUs: %.4g s/iteration, %.4g tokens/s, MFU %.1f %%)" % (
            run.get("name"), run.get("gpus"), self._summary.get("iteration_time_s", 0.0),
            self._summary.get("tokens_per_s", 0.0), 100.0 * self._summary.get("mfu", 0.0))


def run(config, overrides=None, *, out=None, configs=None, simulate_oom=False, timeline_format="json", **keys):
    """Predicts one run of `config` (a path, or a shipped run config by name) with its keys overridden; `out` also writes summary.json,
    the timeline (timeline.json, or with timeline_format="perfetto" timeline.pftrace) and ops.h5 there. Returns a
    RunResult (status "out_of_memory" when it does not fit, unless simulate_oom)."""
    pairs = _override_pairs(overrides, keys)
    text = _chopsim.run(os.fspath(config), pairs, os.fspath(out) if out else "", os.fspath(configs) if configs else "",
                        bool(simulate_oom), str(timeline_format))
    return RunResult(json.loads(text), os.fspath(out) if out else None)


def load_config(config, overrides=None, *, configs=None, **keys):
    """Loads `config` (a path or a shipped run config's name) with its keys overridden and checks it as run() would,
    without simulating. Returns a dict: "run", what it resolved to (model, hardware, cluster, GPUs, parallelism with
    dp: auto worked out, training), and "memory", the memory model's estimate per GPU (every pipeline stage under
    "stages"), with "status" "ok" or "out_of_memory". Bad input raises InputError, as run() does."""
    pairs = _override_pairs(overrides, keys)
    summary = json.loads(_chopsim.load_config(os.fspath(config), pairs, os.fspath(configs) if configs else ""))
    return {"status": summary["status"], "run": summary["run"], "memory": summary["memory"]}


def _read_results(folder, int_columns, float_suffixes):
    """The rows of `folder`/results.csv as dicts: `int_columns` as ints, columns ending in one of `float_suffixes`
    (and mfu, tokens_per_s) as floats; an empty field is None."""
    rows = []
    with open(os.path.join(os.fspath(folder), "results.csv"), newline="") as f:
        for row in csv.DictReader(f):
            for key, value in row.items():
                if key in int_columns:
                    row[key] = int(value) if value != "" else None
                elif key.endswith(float_suffixes) or key in ("mfu", "tokens_per_s"):
                    row[key] = float(value) if value != "" else None
            rows.append(row)
    return rows


def read_sweep(folder):
    """The rows of a sweep's results.csv as dicts, figures as floats (None where a point has none)."""
    return _read_results(folder, ("point", "gpus", "nodes"),
                         ("_s", "_w", "_j", "_bytes_per_gpu", "_mhz", "_fraction", "_per_gpu"))


def sweep(sweep_file, out, *, jobs=1, configs=None):
    """Runs a sweep file (docs/sweeps.md) into `out` (resumable) and returns its rows (read_sweep)."""
    _chopsim.sweep(os.fspath(sweep_file), os.fspath(out), int(jobs), os.fspath(configs) if configs else "")
    return read_sweep(out)


def read_study(folder):
    """The rows of a study's results.csv (docs/studies.md) as dicts, figures as floats (None for an infeasible
    candidate), gpus, nodes and racks as ints."""
    return _read_results(folder, ("gpus", "nodes", "racks"),
                         ("_s", "_w", "_j", "_usd", "_kw", "_fraction", "_per_dollar"))


def study(study_file, out, *, jobs=1, configs=None):
    """Runs a procurement study (docs/studies.md) into `out` (each candidate's sweep resumable) and returns one row
    per candidate (read_study)."""
    _chopsim.study(os.fspath(study_file), os.fspath(out), int(jobs), os.fspath(configs) if configs else "")
    return read_study(out)


def report(folder, html=None):
    """Writes the HTML report of a run's or a sweep's folder (docs/report.md); returns its path."""
    path = os.fspath(html) if html else os.path.join(os.fspath(folder), "report.html")
    _chopsim.report(os.fspath(folder), path)
    return path
