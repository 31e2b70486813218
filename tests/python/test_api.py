"""The Python API (issue 18): chopsim.run, sweep, read_sweep, report and errors, against the CLI's own figures and
physics (tokens per second = tokens per iteration / iteration time). Run by ctest (python_api) with PYTHONPATH set
to the build's python/ folder."""
import json
import os
import subprocess
import sys

import pytest

import chopsim

SOURCE = os.environ["CHOPSIM_SOURCE_DIR"]
CHOPSIM = os.environ["CHOPSIM_BINARY"]
QUICK_START = os.path.join(SOURCE, "configs", "llama3-8b-fsdp.yaml")


def test_run_gives_the_cli_figures(tmp_path):
    result = chopsim.run(QUICK_START, out=tmp_path / "py")
    subprocess.run([CHOPSIM, "run", QUICK_START, "--out", str(tmp_path / "cli")], check=True, capture_output=True)
    cli = json.load(open(tmp_path / "cli" / "summary.json"))
    assert result.to_dict() == json.load(open(tmp_path / "py" / "summary.json"))
    for key in ("iteration_time_s", "tokens_per_s", "mfu", "energy_per_token_j"):
        assert getattr(result, key) == cli[key], key
    tokens = result.run["training"]["tokens_per_iteration"]
    assert result.tokens_per_s == pytest.approx(tokens / result.iteration_time_s, rel=1e-12)
    assert "MFU" in repr(result)


def test_perfetto_timeline_is_written_instead_of_the_json_one(tmp_path):
    chopsim.run(QUICK_START, out=tmp_path / "pf", timeline_format="perfetto")
    assert not (tmp_path / "pf" / "timeline.json").exists()
    data = (tmp_path / "pf" / "timeline.pftrace").read_bytes()
    assert data[0] == 0x0A  # a protobuf Trace: field 1 (packet), length-delimited
    with pytest.raises(chopsim.InputError, match="timeline_format"):
        chopsim.run(QUICK_START, out=tmp_path / "bad", timeline_format="protobuf")
    assert not (tmp_path / "bad").exists()


def test_overrides_as_keywords_or_a_mapping_are_checked_like_the_file():
    a = chopsim.run(QUICK_START, training__micro_batch=1)
    b = chopsim.run(QUICK_START, overrides={"training.micro_batch": 1})
    assert a.to_dict() == b.to_dict()
    assert a.run["training"]["micro_batch"] == 1
    assert a.iteration_time_s != chopsim.run(QUICK_START).iteration_time_s
    with pytest.raises(chopsim.InputError, match="did you mean 'micro_batch'"):
        chopsim.run(QUICK_START, training__micro_bach=1)
    with pytest.raises(ValueError, match="does not match the cluster's 8 GPUs"):
        chopsim.run(QUICK_START, parallelism__dp=3)


def test_a_folded_run_simulates_fewer_micro_batches_for_the_same_figures():
    # 16 micro-batches of gradient accumulation under FSDP; folded, 7 are simulated (docs/design.md, "Folding").
    full = chopsim.run(QUICK_START, training__global_batch=256)
    folded = chopsim.run(QUICK_START, training__global_batch=256, simulation__fold=True)
    assert full.simulation["simulated_micro_batches"] == full.simulation["micro_batches"] == 16
    assert folded.simulation["simulated_micro_batches"] == 7 and folded.simulation["folded_s"] > 0
    assert folded.iteration_time_s == pytest.approx(full.iteration_time_s, rel=0.005)
    assert folded.energy_per_token_j == pytest.approx(full.energy_per_token_j, rel=0.005)


def test_a_configs_folder_that_does_not_hold_configs_is_an_error(tmp_path):
    # A mistyped configs= once added nothing, and every name came from the shipped configs without a word.
    with pytest.raises(chopsim.InputError, match="no_such_configs: no such folder"):
        chopsim.run(QUICK_START, configs=str(tmp_path / "no_such_configs"))
    with pytest.raises(chopsim.InputError, match="holds none of hardware/, models/ and clusters/"):
        chopsim.run(QUICK_START, configs=os.path.join(SOURCE, "configs", "hardware"))
    assert chopsim.run(QUICK_START, configs=os.path.join(SOURCE, "configs")).iteration_time_s > 0


def test_out_of_memory_is_a_status_not_an_error():
    r = chopsim.run(QUICK_START, training__micro_batch=8, training__global_batch=64, training__recompute="none")
    assert r.status == "out_of_memory"
    assert r.memory["peak_bytes_per_gpu"] > r.memory["capacity_bytes"]


def test_sweep_rows_and_report(tmp_path):
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text("base: %s\naxes:\n  training.micro_batch: [1, 2]\n" % QUICK_START)
    rows = chopsim.sweep(sweep_file, tmp_path / "out", jobs=2)
    assert [row["status"] for row in rows] == ["ok", "ok"]
    assert [row["training.micro_batch"] for row in rows] == ["1", "2"]
    assert all(row["tokens_per_s"] > 0 for row in rows)
    assert all(row["gpus"] == 8 and row["nodes"] == 1 for row in rows)  # the quick start's one node of 8
    assert chopsim.read_sweep(tmp_path / "out") == rows
    html = chopsim.report(tmp_path / "out")
    assert open(html).read().startswith("<!DOCTYPE html>")


def test_load_config_checks_without_simulating():
    # What the config resolves to, and the memory model's figure that run() reports for the same config.
    config = chopsim.load_config(QUICK_START, parallelism__dp="auto", training__micro_batch=1)
    assert config["run"]["gpus"] == 8 and config["run"]["parallelism"]["dp"] == 8
    assert config["run"]["training"]["micro_batch"] == 1
    r = chopsim.run(QUICK_START, training__micro_batch=1)
    assert config["memory"]["peak_bytes_per_gpu"] == r.memory["peak_bytes_per_gpu"]
    assert chopsim.load_config(QUICK_START, training__micro_batch=16, training__global_batch=128)["status"] == \
        "out_of_memory"
    with pytest.raises(chopsim.InputError, match="micro_batchh"):
        chopsim.load_config(QUICK_START, training__micro_batchh=1)


def test_telemetry_and_ops_tables(tmp_path):
    # The tables of ops.h5 (a DataFrame with pandas, a numpy structured array without): energy = integral of power over
    # time, per GPU, is the summary's energy; the op table holds every op the summary counts.
    r = chopsim.run(QUICK_START, out=tmp_path / "run")
    telemetry = r.telemetry()
    energy = sum(float(p) * float(d) for p, d in zip(telemetry["power_w"], telemetry["duration_s"]))
    assert energy == pytest.approx(r.energy_j, rel=1e-6)
    assert sorted(set(int(g) for g in telemetry["gpu"])) == list(range(8))
    ops = r.ops()
    assert len(ops["rank"]) == r.simulation["op_events"] // 2  # a begin and an end event per op
    assert all(float(d) >= 0 for d in ops["duration_s"])
    with pytest.raises(chopsim.Error):
        chopsim.run(QUICK_START).telemetry()  # no out=: no tables


def test_the_notebook_example_runs(tmp_path, monkeypatch, capsys):
    # docs/examples/quickstart.ipynb: every code cell executed in order in one namespace, as a kernel would.
    monkeypatch.setenv("CHOPSIM_EXAMPLE_DIR", str(tmp_path))
    with open(os.path.join(os.environ["CHOPSIM_SOURCE_DIR"], "docs", "examples", "quickstart.ipynb")) as f:
        notebook = json.load(f)
    namespace = {}
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 5
    for cell in cells:
        exec(compile("".join(cell["source"]), "quickstart.ipynb", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "energy from telemetry" in printed
    assert os.path.exists(namespace["html"])
    assert [row["status"] for row in namespace["rows"]] == ["ok", "ok", "ok"]


def test_study_rows(tmp_path):
    (tmp_path / "search.yaml").write_text("base: %s\naxes:\n  training.micro_batch: [1, 2]\n" % QUICK_START)
    (tmp_path / "study.yaml").write_text(
        "sweep: search.yaml\ngoal: {tokens: 1.0e9}\n"
        "candidates:\n  - {name: mi300x, set: {hardware: MI300X}, cost: {gpu_hour_usd: 2.0}}\n")
    rows = chopsim.study(tmp_path / "study.yaml", tmp_path / "out", jobs=2)
    assert [row["candidate"] for row in rows] == ["mi300x"]
    row = rows[0]
    assert row["status"] == "ok" and row["gpus"] == 8
    assert row["time_to_train_s"] == pytest.approx(1e9 / row["tokens_per_s"])
    assert row["cost_usd"] == pytest.approx(2.0 * 8 * row["time_to_train_s"] / 3600)
    with pytest.raises(chopsim.InputError):
        chopsim.study(tmp_path / "search.yaml", tmp_path / "bad")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
