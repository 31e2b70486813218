#!/usr/bin/env python3
"""Writes the bad-input cases of tests/bad_inputs/ (issue 16): one small file per case under cases/, and
manifest.tsv, one line per case: id, the file, the chopsim command (placeholders below), the expected exit code,
and a word the message must contain. run.sh runs them. Regenerate with: python3 tests/bad_inputs/make_cases.py
(needs h5py for the damaged kernel stores; sqlite3 is in Python's standard library).

Placeholders in commands: {in} the case's file, {out} a fresh output folder, {src} the source tree, {store} a
valid kernel store run.sh makes first, {ro} a read-only folder, {link} a symlink to an existing file."""
import gzip
import os
import shutil
import sqlite3
import sys

here = os.path.dirname(os.path.abspath(__file__))
cases_dir = os.path.join(here, "cases")
shutil.rmtree(cases_dir, ignore_errors=True)
os.makedirs(cases_dir)
rows = []


def case(name, content, command, code, word, binary=False):
    path = os.path.join(cases_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if content is not None:
        if binary:
            with open(path, "wb") as f:
                f.write(content)
        else:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(content)
    rows.append((name.replace("/", "_").rsplit(".", 1)[0], "cases/" + name if content is not None else "-", command,
                 str(code), word))


RUN = "run {in} --configs {src}/configs --out {out}"
BASE = """name: bad
model: llama3-8b
hardware: MI300X
cluster:
  name: mi300x
  nodes: 1
  fabric: {kind: none}
parallelism:
  dp: 8
  fsdp: full_shard
training:
  global_batch: 16
  micro_batch: 2
  seq_len: 8192
  precision: bf16
  recompute: selective
iterations: 1
"""


def config(name, text, word, code=2):
    case("config/" + name + ".yaml", text, RUN, code, word)


def run_config_finding(name, corpus_file, word):
    """A fuzz_run_config finding, read from its corpus file (kept there too) and run as a config."""
    with open(os.path.join(here, "..", "fuzz", "corpus", "run_config", corpus_file), "rb") as f:
        case("config/" + name + ".yaml", f.read(), RUN, 2, word, binary=True)


def replaced(old, new):
    assert old in BASE, old
    return BASE.replace(old, new)


# ---- run configs: syntax -------------------------------------------------------------------------------------
config("tab_indent", BASE.replace("  nodes: 1", "\tnodes: 1"), "tab")
config("unclosed_flow", BASE.replace("fabric: {kind: none}", "fabric: {kind: none"), "YAML syntax")
config("duplicate_key", BASE + "iterations: 2\n", "duplicate")
# fuzz_study's finding (2026-11-26): yaml-cpp 0.7 loops forever on a line opening with '%' inside a document.
config("percent_line", BASE.replace("iterations: 1", "%terations: 1"), "'%'")
config("empty", "", "empty")
config("only_comments", "# nothing here\n", "empty")
config("scalar_root", "just a string\n", "key: value")
config("list_root", "- a\n- b\n", "mapping")
config("nul_byte", BASE.replace("name: bad", "name: b\x00ad"), "NUL")
case("config/utf16.yaml", BASE.encode("utf-16"), RUN, 2, "UTF-8", binary=True)
# yaml-cpp 0.7 loops forever on a document whose root is a flow node or a scalar followed by ',' (fuzz_run_config).
config("root_comma", ",\n", "must start with 'key: value'")
config("root_flow_then_comma", "[a],\n", "must start with 'key: value'")
config("root_quoted_then_comma", '"x",\n', "must start with 'key: value'")
config("root_anchor_then_comma", "&a ,\n", "must start with 'key: value'")
config("second_document_comma", BASE + "---\n,\n", "must start with 'key: value'")
config("fuzz_run_config_timeout", BASE.replace("name: bad", "# a comment\n,6f optim\nname: bad"), "must start with 'key: value'")
# The fuzzer's own input (kept in its corpus too): it hung `chopsim run` in yaml-cpp before the check.
run_config_finding("fuzz_finding_timeout", "finding-timeout-root-comma.yaml", "must start with 'key: value'")
run_config_finding("fuzz_finding_indented_comma", "finding-timeout-indented-comma.yaml", "starts with ','")
config("line_starts_with_comma", BASE.replace("  dp: 8", "    dp: 8\n   , 2"), "starts with ','")
# fuzz_run_config in CI (2026-11-27): a '{' inside a plain scalar ("t{") opens no flow collection, so the ',' line
# after it is still outside one (yaml-cpp 0.7 looped on it).
run_config_finding("fuzz_finding_brace_in_scalar_comma",
                   "finding-timeout-brace-in-scalar-comma.yaml", "starts with ','")
# A 1-hour fuzz_run_config run (2026-11-27): the same loop when node properties open the line before the ','.
run_config_finding("fuzz_finding_anchor_comma", "finding-timeout-anchor-comma.yaml", "'&a,'")
# A 5-minute fuzz_run_config run (2026-11-27): the same loop after a quoted scalar that spans two lines ("'...\n'  &a,").
run_config_finding("fuzz_finding_quoted_anchor_comma",
                   "finding-timeout-quoted-anchor-comma.yaml", "a ',' after a quoted value")
# A 10-minute fuzz_run_config run after that fix: a '"' inside a plain scalar continued over lines hid the quote
# that closes before "  &a,"; a line opening with a quote, blanks, properties and ',' is now refused whatever came before.
run_config_finding("fuzz_finding_quote_after_plain_scalar",
                   "finding-timeout-quote-after-plain-scalar.yaml", "a ',' after a quoted value")
# A ninth input (fuzz_run_config, 2026-11-27) that the line scan could not place: yaml-cpp's LoadAll collected empty
# documents forever. Since 2026-11-28 the parse asks for two documents at most (second_document_start, yaml.cpp), so
# every input of this family ends with "more than one YAML document", whether or not the line scan names it first.
run_config_finding("fuzz_finding_quoted_scalar_over_lines",
                   "finding-timeout-quoted-scalar-over-lines.yaml", "more than one YAML document")
# The same family in a fresh-clone CI run (2026-11-28, before the bounded parse): another address-space layout led
# fuzz_run_config to another input of it.
run_config_finding("fuzz_finding_quoted_scalar_over_lines_2",
                   "finding-timeout-quoted-scalar-over-lines-2.yaml", "more than one YAML document")
config("comma_line_after_mapping", BASE + ",\n", "outside a [list] or {mapping}")
config("quoted_then_anchor_comma", BASE.replace("name: bad", "name: 'bad'  &x, 2"), "a ',' after a quoted value")
# An apostrophe inside a plain scalar opens no quoted scalar: the quoted ',' value two lines on reaches the decoder.
config("apostrophe_in_plain_scalar", BASE.replace("name: bad", "name: Bob's run").replace("  precision: bf16",
       "  precision: ',bf16'"), "training.precision")
config("tag_then_comma", BASE.replace("  dp: 8", "    dp: 8\n   !x , 2"), "'!x ,'")
config("brace_in_scalar_then_comma", BASE.replace("  dp: 8", "  dp{: 8\n   , 2"), "starts with ','")
config("flow_mapping_after_anchor", BASE.replace("iterations: 1", "extra: &x {a: 1\n  , b: 2}\niterations: 1"),
       "unknown key 'extra'")
config("block_scalar_comma_is_text", BASE + "description: |\n  a, b\n  , c\n", "", 0)
case("config/invalid_utf8.yaml", BASE.replace("name: bad", "name: bad").encode() .replace(b"name: bad", b"name: b\xff\xfead"),
     RUN, 2, "UTF-8", binary=True)
config("deep_nesting", "name: " + "[" * 100000 + "]" * 100000 + "\n", "YAML")
config("anchor_alias", BASE.replace("  precision: bf16", "  precision: &p bf16\n  recompute_alias: *p"), "recompute_alias")
config("unterminated_quote", BASE.replace("name: bad", 'name: "bad'), "model")
# ---- run configs: unknown and missing keys -------------------------------------------------------------------
config("unknown_top_key", BASE + "iteratoins: 1\n", "iteratoins")
config("unknown_training_key", replaced("  micro_batch: 2", "  micro_batch: 2\n  micro_bach: 2"), "micro_bach")
config("unknown_parallelism_key", replaced("  dp: 8", "  dp: 8\n  tpp: 1"), "tpp")
config("unknown_cluster_key", replaced("  nodes: 1", "  nodes: 1\n  node: 1"), "node")
config("unknown_fabric_key", replaced("{kind: none}", "{kind: none, speed: 3}"), "speed")
config("cluster_megatron_host_too_slow", replaced("  nodes: 1", "  nodes: 1\n  megatron_host_launch_us: 20000"),
       "megatron_host_launch_us")
config("unknown_power_key", BASE + "power: {power_cap_w: 500}\n", "power_cap_w")
config("unknown_thermal_key", BASE + "thermal: {inlet: 30}\n", "inlet")
config("unknown_simulation_key", BASE + "simulation: {engin: fast}\n", "engin")
config("unknown_models_key", BASE + "models: {compute: roofline, colective: nccl}\n", "colective")
config("missing_model", replaced("model: llama3-8b\n", ""), "model")
config("missing_hardware", replaced("hardware: MI300X\n", ""), "hardware")
config("missing_cluster", replaced("cluster:\n  name: mi300x\n  nodes: 1\n  fabric: {kind: none}\n", ""), "cluster")
config("missing_training", BASE[:BASE.index("training:")] + "iterations: 1\n", "training")
config("missing_global_batch", replaced("  global_batch: 16\n", ""), "global_batch")
# ---- run configs: wrong types ----------------------------------------------------------------------------------
config("dp_text", replaced("  dp: 8", "  dp: eight"), "parallelism.dp")
config("dp_float", replaced("  dp: 8", "  dp: 8.5"), "parallelism.dp")
config("dp_list", replaced("  dp: 8", "  dp: [8]"), "parallelism.dp")
config("micro_batch_map", replaced("  micro_batch: 2", "  micro_batch: {a: 1}"), "micro_batch")
config("nodes_text", replaced("  nodes: 1", "  nodes: one"), "nodes")
config("seq_len_bool", replaced("  seq_len: 8192", "  seq_len: true"), "seq_len")
config("fold_text", BASE + "simulation: {fold: sometimes}\n", "simulation.fold")
# A hybrid model whose layer pattern does not describe every layer, and one with an unknown layer symbol.
config("hybrid_pattern_short", replaced("model: llama3-8b", "model: {name: llama3-8b, hybrid_pattern: 'M*M*', "
       "mamba: {heads: 32}}"), "the pattern has 4 symbols but layers is 32")
config("recompute_modules_unknown", replaced("  recompute: selective", "  recompute: selective\n"
       "  recompute_modules: [attention]"), "'attention' is not a module chopsim recomputes")
# LoRA: an unknown target, and LoRA with FSDP (the base config shards fully), which chopsim does not model.
config("lora_target_unknown", replaced("  recompute: selective", "  recompute: selective\n"
       "  lora: {rank: 16, targets: [qkv, lm_head]}"), "'lm_head' is not a linear chopsim adapts")
config("fp8_recipe_unknown", replaced("  recompute: selective", "  recompute: selective\n  fp8_recipe: tensorwise"),
       "expected one of delayed, current, mxfp8")
config("fsdp_implementation_unknown", replaced("  recompute: selective",
       "  recompute: selective\n  fsdp_implementation: deepspeed"), "expected one of megatron, fsdp1, fsdp2")
config("optimizer_unknown", replaced("  recompute: selective", "  recompute: selective\n  optimizer: lion"),
       "expected one of fused_adamw, decoupled_adamw")
config("train_metrics_unknown", replaced("  recompute: selective",
       "  recompute: selective\n  train_metrics: [accuracy]"), "'accuracy' is not a metric chopsim knows")
config("lora_with_fsdp", replaced("  recompute: selective", "  recompute: selective\n  lora: {rank: 16}"),
       "zero_stage 0-2")
config("hybrid_pattern_symbol", replaced("model: llama3-8b", "model: {name: llama3-8b, layers: 4, "
       "hybrid_pattern: 'M*Q*', mamba: {heads: 32}}"), "symbol 'Q' at position 3")
config("precision_number", replaced("  precision: bf16", "  precision: 16"), "precision")
config("recompute_unknown", replaced("  recompute: selective", "  recompute: sometimes"), "sometimes")
config("model_list", replaced("model: llama3-8b", "model: [llama3-8b]"), "model")
config("iterations_text", replaced("iterations: 1", "iterations: once"), "iterations")
config("fsdp_unknown", replaced("  fsdp: full_shard", "  fsdp: half_shard"), "half_shard")
# ---- run configs: out of range ---------------------------------------------------------------------------------
config("dp_zero", replaced("  dp: 8", "  dp: 0"), "parallelism.dp")
config("dp_negative", replaced("  dp: 8", "  dp: -8"), "parallelism.dp")
config("micro_batch_zero", replaced("  micro_batch: 2", "  micro_batch: 0"), "micro_batch")
config("seq_len_negative", replaced("  seq_len: 8192", "  seq_len: -1"), "seq_len")
config("iterations_zero", replaced("iterations: 1", "iterations: 0"), "iterations")
config("iterations_huge", replaced("iterations: 1", "iterations: 1000000000"), "--force")
config("timeline_huge", replaced("iterations: 1", "iterations: 5000"), "--timeline-ranks")
config("nodes_huge", replaced("  nodes: 1", "  nodes: 100000000"), "nodes")
config("dp_overflow", replaced("  dp: 8", "  dp: 99999999999999999999"), "parallelism.dp")
config("power_cap_huge", BASE + "power: {cap_w: 1e308}\n", "cap_w")
config("power_cap_negative", BASE + "power: {cap_w: -5}\n", "cap_w")
config("power_cap_nan", BASE + "power: {cap_w: .nan}\n", "cap_w")
config("power_cap_inf", BASE + "power: {cap_w: .inf}\n", "cap_w")
config("chip_variation_negative", BASE + "power: {chip_variation: -0.01}\n", "chip_variation")
config("inlet_absurd", BASE + "thermal: {ambient_c: 5000}\n", "ambient_c")
config("zero_stage_five", replaced("  fsdp: full_shard", "  zero_stage: 5"), "zero_stage")
# ---- run configs: inconsistent parallelism ----------------------------------------------------------------------
config("gpus_mismatch", replaced("  dp: 8", "  dp: 4"), "does not match")
config("tp_heads", replaced("  dp: 8\n  fsdp: full_shard", "  dp: 1\n  tp: 8\n  pp: 1\n  cp: 1\n  tp_check: 0"), "tp_check")
config("tp_not_dividing_heads", replaced("  dp: 8\n  fsdp: full_shard", "  dp: 1\n  tp: 3\n  pp: 1"), "tp")
config("pp_not_dividing_layers", replaced("  dp: 8\n  fsdp: full_shard", "  dp: 1\n  pp: 8\n  pp_schedule: interleaved\n  virtual_stages: 3"), "layers")
config("ep_1f1b_without_interleaving",
       replaced("model: llama3-8b", "model: mixtral-8x7b").replace("  dp: 8\n  fsdp: full_shard", "  dp: 8\n  ep: 8")
       .replace("  recompute: selective", "  recompute: selective\n  overlap: {ep_1f1b: true}"), "interleaved")
config("moe_imbalance_above_bound",
       replaced("model: llama3-8b", "model: mixtral-8x7b").replace("  dp: 8\n  fsdp: full_shard", "  dp: 8\n  ep: 8")
       .replace("  recompute: selective", "  recompute: selective\n  moe_load_imbalance: 4.5"), "moe_load_imbalance")
config("batch_not_divisible", replaced("  global_batch: 16", "  global_batch: 15"), "global_batch")
config("fp8_ratio_above_one",
       replaced("hardware: MI300X", "hardware: {name: MI300X, kernels: {fp8_gemm_efficiency_ratio: 1.13}}"),
       "fp8_gemm_efficiency_ratio")
config("fabric_none_many_nodes", replaced("  nodes: 1", "  nodes: 2").replace("  dp: 8", "  dp: 16"), "fabric")
# ---- run configs: names and paths ----------------------------------------------------------------------------------
config("unknown_model", replaced("model: llama3-8b", "model: llama9-1t"), "llama9-1t")
config("unknown_hardware", replaced("hardware: MI300X", "hardware: MI999X"), "MI999X")
config("unknown_cluster", replaced("  name: mi300x", "  name: nowhere"), "nowhere")
config("unknown_engine", BASE + "simulation: {engine: warp}\n", "warp")
config("unknown_compute_model", BASE + "models: {compute: guess, collective: nccl}\n", "guess")
config("unknown_collective_model", BASE + "models: {compute: roofline, collective: carrier_pigeon}\n", "carrier_pigeon")
config("calibration_missing", BASE + "calibration: ../../nowhere/profile.yaml\n", "profile.yaml")
config("calibration_dotdot_dir", BASE + "calibration: ..\n", "calibration")
case("config/missing_file.yaml", None, "run {src}/tests/bad_inputs/cases/config/no_such_file.yaml", 2, "no_such_file.yaml")
case("config/directory.yaml", None, "run {src}/tests/bad_inputs/cases", 2, "cases")
case("config/dev_zero.yaml", None, "run /dev/zero", 2, "/dev/zero")
# ---- Kineto JSON ------------------------------------------------------------------------------------------------
INGEST = "ingest {in} -o {out}/store.h5"
K_EVENT = '{"ph":"X","cat":"kernel","name":"ampere_sgemm","pid":0,"tid":7,"ts":%s,"dur":%s,"args":{"device":0,"stream":7}}'


# Procurement studies (issue 17): the study is read whole, with its sweep and catalog, before any candidate runs.
STUDY = "study {in} --out {out}"
STUDY_HEAD = "sweep: ../../../../configs/studies/llama3-70b-search.yaml\ngoal: {tokens: 1.0e11}\n"
STUDY_ONE = "candidates:\n  - {name: a, set: {hardware: H100-SXM5-80GB}}\n"
case("study/price_text.yaml", STUDY_HEAD + "candidates:\n  - {name: a, set: {hardware: H100-SXM5-80GB}, cost: {gpu_hour_usd: cheap}}\n",
     STUDY, 2, "gpu_hour_usd")
case("study/price_negative.yaml", STUDY_HEAD + "candidates:\n  - {name: a, set: {hardware: H100-SXM5-80GB}, cost: {gpu_hour_usd: -2}}\n",
     STUDY, 2, "gpu_hour_usd")
case("study/unknown_key.yaml", STUDY_HEAD + "budget: 5\n" + STUDY_ONE, STUDY, 2, "budget")
case("study/percent_line.yaml", STUDY_HEAD + "%andidates:\n" + STUDY_ONE, STUDY, 2, "'%'")
# fuzz_study in CI (2026-11-26): the same loop when the '%' line stands inside an unclosed '{'.
case("study/percent_line_in_flow.yaml", STUDY_HEAD + "note: {a\n%andidates:\n}\n" + STUDY_ONE, STUDY, 2, "'%'")
case("study/no_goal.yaml", "sweep: ../../../../configs/studies/llama3-70b-search.yaml\n" + STUDY_ONE, STUDY, 2, "goal")
case("study/missing_sweep.yaml", "sweep: no_such_sweep.yaml\ngoal: {tokens: 1.0e11}\n" + STUDY_ONE, STUDY, 2,
     "no_such_sweep.yaml")
case("study/unpriced_gpu.yaml", STUDY_HEAD + "candidates:\n  - {name: a, set: {hardware: MI355X}}\n", STUDY, 2,
     "does not price MI355X")
case("study/rack_power_zero.yaml",
     STUDY_HEAD + "candidates:\n  - {name: a, set: {hardware: H100-SXM5-80GB}, cost: {rack_power_kw: 0}}\n", STUDY, 2,
     "rack_power_kw")
case("study/no_candidates.yaml", STUDY_HEAD + "candidates: []\n", STUDY, 2, "candidates")
case("study/swept_key_set.yaml", STUDY_HEAD + "candidates:\n  - {name: a, set: {hardware: H100-SXM5-80GB, training.micro_batch: 4}}\n",
     STUDY, 2, "axis of the study's sweep")

# Power-fit runs files (calibrate --power-runs; issue 20): read and checked before any input is read, the windows
# against the telemetry inputs before any run is simulated.
POWER_RUNS = ("calibrate {src}/tests/traces/fixtures/nvidia_smi.csv --hardware H200-SXM-141GB --configs {src}/configs "
              "-o {out}/p.yaml --power-runs {in}")
MB1 = "../../../../configs/validation/h200-llama3.2-1b-eager-mb1.yaml"
FIXTURE_WINDOW = 'from: "2024-05-22 17:15:22", to: "2024-05-22 17:15:25"'
case("power_runs/unknown_key.yaml", "runs:\n  - {name: a, config: %s, %s, window: 3}\n" % (MB1, FIXTURE_WINDOW),
     POWER_RUNS, 2, "window")
case("power_runs/bad_time.yaml", "runs:\n  - {name: a, config: %s, from: noon, to: 1716398125}\n" % MB1, POWER_RUNS, 2,
     "is not a time")
case("power_runs/reversed_window.yaml", "runs:\n  - {name: a, config: %s, from: 1716398125, to: 1716398122}\n" % MB1,
     POWER_RUNS, 2, "ends before it starts")
case("power_runs/missing_config.yaml", "runs:\n  - {name: a, config: no_such_run.yaml, %s}\n" % FIXTURE_WINDOW,
     POWER_RUNS, 2, "no run config at")
case("power_runs/no_runs.yaml", "runs: []\n", POWER_RUNS, 2, "non-empty list")
case("power_runs/outside_telemetry.yaml",
     "runs:\n  - {name: a, config: %s, from: \"2020-01-01 00:00:00\", to: \"2020-01-01 00:00:01\"}\n" % MB1,
     POWER_RUNS, 2, "no telemetry reading")
case("power_runs/other_gpu.yaml",
     "runs:\n  - {name: a, config: ../../../../configs/llama3-8b-fsdp.yaml, %s}\n" % FIXTURE_WINDOW, POWER_RUNS, 2,
     "uses hardware MI300X")


def kineto(name, text, word, code=2):
    case("kineto/" + name + ".json", text, INGEST, code, word)


def events(*evs):
    return '{"schemaVersion": 1, "traceEvents": [' + ",".join(evs) + "]}"


kineto("empty", "", "empty")
kineto("not_json", "this is not json", "format")
kineto("truncated", events(K_EVENT % ("100", "5"))[:-10], "kineto")
kineto("array_root", "[" + K_EVENT % ("100", "5") + "]", "format")
kineto("trace_events_object", '{"schemaVersion": 1, "traceEvents": {"a": 1}}', "traceEvents")
kineto("no_events", events(), "no GPU kernels")
kineto("negative_dur", events(K_EVENT % ("100", "-5")), "negative")
kineto("string_dur", events(K_EVENT % ("100", '"abc"')), "dur")
kineto("nan_dur", events(K_EVENT % ("100", "NaN")), "kineto")
kineto("huge_dur", events(K_EVENT % ("100", "9000000000000000")), "11 days")
kineto("missing_ts", events('{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"dur":5}'), "ts")
kineto("ts_19_digits", events(K_EVENT % ("9223372036854775807", "5")), "ts")
kineto("ts_40_digits", events(K_EVENT % ("1234567890123456789012345678901234567890", "5")), "ts")
kineto("ts_string", events(K_EVENT % ('"soon"', "5")), "ts")
kineto("device_huge", events(K_EVENT.replace('"device":0', '"device":5000000000') % ("100", "5")), "device")
kineto("deep_nesting", '{"schemaVersion": 1, "traceEvents": [' + "[" * 100000 + "]" * 100000 + "]}", "kineto")
kineto("nul_byte", events(K_EVENT % ("100", "5")).replace("ampere", "amp\x00ere"), "kineto")
case("kineto/utf16.json", events(K_EVENT % ("100", "5")).encode("utf-16"), INGEST, 2, "format", binary=True)
case("kineto/invalid_utf8.json", events(K_EVENT % ("100", "5")).encode().replace(b"ampere", b"amp\xff\xfeere"),
     INGEST, 2, "kineto", binary=True)
case("kineto/truncated.json.gz", gzip.compress(events(K_EVENT % ("100", "5")).encode(), mtime=0)[:-12], INGEST, 2, "gzip",
     binary=True)
case("kineto/garbage.json.gz", b"\x1f\x8b\x08\x00" + b"\x00garbage" * 8, INGEST, 2, "gzip", binary=True)
kineto("dur_overflow_sum", events(K_EVENT % ("9000000000000000", "900000000000000")), "kineto")
# ---- rocprofv3 CSV --------------------------------------------------------------------------------------------------
R_HEADER = '"Kind","Agent_Id","Queue_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"\n'


def rocprof(name, text, word, code=2):
    case("rocprof/" + name + ".csv", text, INGEST, code, word)


def rrow(start, end, agent="Agent 2", name="k.kd"):
    return '"KERNEL_DISPATCH","%s",16,"%s",1,%s,%s\n' % (agent, name, start, end)


rocprof("header_only", R_HEADER, "no GPU kernels")
rocprof("end_before_start", R_HEADER + rrow("2000", "1000"), "negative")
rocprof("int64_extremes", R_HEADER + rrow("-9223372036854775808", "9223372036854775807"), "out of range")
rocprof("text_timestamp", R_HEADER + rrow("abc", "1000"), "Start_Timestamp")
rocprof("empty_timestamp", R_HEADER + rrow("", "1000"), "Start_Timestamp")
rocprof("truncated_row", R_HEADER + '"KERNEL_DISPATCH","Agent 2",16,"k.kd",1,638579825\n', "End_Timestamp")
rocprof("agent_huge", R_HEADER + rrow("1000", "2000", agent="Agent 99999999999"), "device")
rocprof("missing_end_column", R_HEADER.replace(',"End_Timestamp"', "") + '"KERNEL_DISPATCH","Agent 2",16,"k.kd",1,1000\n',
        "End_Timestamp")
rocprof("nul_in_name", R_HEADER + rrow("1000", "2000", name="k\x00d"), "rocprof")
rocprof("huge_duration", R_HEADER + rrow("1000", "4000000000000000000"), "11 days")
# ---- rocprofv3 JSON ---------------------------------------------------------------------------------------------
RJ = '{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "agents": [], "strings": {"kernel_names": []}, "buffer_records": {"kernel_dispatch": %s}}]}'
case("rocprof_json/not_a_list.json", RJ % '{"a": 1}', INGEST, 2, "kernel_dispatch")
case("rocprof_json/truncated.json", (RJ % "[]")[:-20], INGEST, 2, "rocprof")
case("rocprof_json/empty_tool.json", '{"rocprofiler-sdk-tool": []}', INGEST, 2, "rocprof")
# ---- telemetry CSV ---------------------------------------------------------------------------------------------------
SMI = "timestamp, index, name, power.draw [W], clocks.current.sm [MHz], temperature.gpu, utilization.gpu [%]\n"


def smi(name, row, word, code=2, header=SMI):
    case("telemetry/" + name + ".csv", header + row, INGEST, code, word)


def srow(time="2024/05/22 17:15:22.123", index="0", power="118.49 W", clock="1980 MHz", temp="34", util="0 %"):
    return "%s, %s, NVIDIA H100 80GB HBM3, %s, %s, %s, %s\n" % (time, index, power, clock, temp, util)


smi("year_far", srow(time="99999/05/22 17:15:22.123"), "not a time")
smi("thirty_digits", srow(time="123456789012345678901234567890"), "not a time")
smi("milliseconds", srow(time="1716398122123"), "not a time")
smi("month_13", srow(time="2024/13/22 17:15:22.123"), "not a time")
smi("text_time", srow(time="yesterday"), "not a time")
smi("index_huge", srow(index="99999999999999"), "GPU index")
smi("index_text", srow(index="first"), "GPU index")
smi("power_negative", srow(power="-118.49 W"), "power")
smi("power_inf", srow(power="inf W"), "power")
smi("power_text", srow(power="lots W"), "power")
smi("clock_huge", srow(clock="1e12 MHz"), "clock")
smi("temperature_absurd", srow(temp="3400000"), "temperature")
smi("utilization_250", srow(util="250 %"), "utilization")
smi("header_only", "", "no GPU kernels")
smi("missing_power_column", "timestamp, index\n2024/05/22 17:15:22.123, 0\n", "index")
case("telemetry/dcgm_garbage.txt", "#Entity   POWER\nGPU 0    lots\n", INGEST, 2, "dcgm")
case("telemetry/amd_smi_negative.csv", "timestamp,device,power_watts\n1754586812,card0,-154.0\n", INGEST, 2, "power")
case("telemetry/amd_smi_bad_device.csv", "timestamp,device,power_watts\n1754586812,cardX,154.0\n", INGEST, 2, "GPU index")
# ---- Nsight Systems SQLite ---------------------------------------------------------------------------------------
def sqlite_case(name, statements, word):
    path = os.path.join(cases_dir, "nsys", name + ".sqlite")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    db = sqlite3.connect(path)
    for s in statements:
        db.execute(s)
    db.commit()
    db.close()
    rows.append(("nsys_" + name, "cases/nsys/" + name + ".sqlite", INGEST, "2", word))


KERNEL_TABLE = ("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,"
                " correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER, gridX INTEGER,"
                " gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER)")
STRINGS = "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)"
sqlite_case("no_tables", ["CREATE TABLE other (a INTEGER)"], "CUPTI_ACTIVITY_KIND")
sqlite_case("end_before_start", [KERNEL_TABLE, STRINGS, "INSERT INTO StringIds VALUES (1, 'k')",
                                 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000, 1000, 0, 7, 1, 1, 1, 1, 1,1,1,1,1,1)"],
            "negative")
sqlite_case("int64_extremes", [KERNEL_TABLE, STRINGS, "INSERT INTO StringIds VALUES (1, 'k')",
                               "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (-9223372036854775808, 9223372036854775807,"
                               " 0, 7, 1, 1, 1, 1, 1,1,1,1,1,1)"], "nsys")
sqlite_case("device_huge", [KERNEL_TABLE, STRINGS, "INSERT INTO StringIds VALUES (1, 'k')",
                            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 5000000, 7, 1, 1, 1, 1, 1,1,1,1,1,1)"],
            "device")
case("nsys/not_sqlite.sqlite", "SQLite format 3\x00 but not really", INGEST, 2, "sqlite")
# ---- kernel stores (damaged, as another tool might write them) -----------------------------------------------------------
# Made by run.sh from a valid store with h5py (store_damage.py), so the cases follow the store's schema.
for damage, word in [("name_index", "string index"),
                     ("negative_duration", "negative"), ("rank_huge", "rank"), ("nan_start", "not a time"),
                     ("wrong_format", "not a chopsim kernel store"), ("schema_version", "schema version")]:
    rows.append(("store_replay_" + damage, "@store:" + damage, "replay {in} --hardware H100-SXM5-80GB --configs {src}/configs --out {out}", "2", word))
    rows.append(("store_calibrate_" + damage, "@store:" + damage, "calibrate {in} --hardware H100-SXM5-80GB --configs {src}/configs -o {out}/p.yaml", "2", word))
# ---- Hugging Face config.json imported as a model file ------------------------------------------------------------------
HF = "import {in} -o {out}/model.yaml"
case("hf/not_json.json", '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,', HF, 2, "JSON")
case("hf/array.json", '[{"architectures": ["LlamaForCausalLM"]}]', HF + " --format hf", 2, "not a JSON object")
case("hf/deepseek_no_latent.json", '{"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, '
     '"num_hidden_layers": 61, "num_attention_heads": 128, "vocab_size": 129280}', HF, 2, "kv_lora_rank")
case("hf/gemma2.json", '{"architectures": ["Gemma2ForCausalLM"], "hidden_size": 2304}', HF, 2, "soft-capping")
case("hf/unknown_architecture.json", '{"architectures": ["BertForMaskedLM"], "hidden_size": 768}', HF, 2,
     "BertForMaskedLM")
case("hf/layers_text.json", '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": "32"}',
     HF, 2, "num_hidden_layers")
case("hf/layers_zero.json", '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 0}',
     HF, 2, "num_hidden_layers")
case("hf/no_vocab.json", '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 2, '
     '"num_attention_heads": 32, "intermediate_size": 8192}', HF, 2, "vocab_size")
case("hf/heads_not_dividing.json", '{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 2, '
     '"num_attention_heads": 32, "num_key_value_heads": 5, "intermediate_size": 8192, "vocab_size": 1000}', HF, 2,
     "kv_heads")
# ---- Megatron-LM arguments --------------------------------------------------------------------------------------------
MEG = "import {in} --hardware H100-SXM5-80GB --cluster dgx-h100 --nodes 1 --configs {src}/configs -o {out}/run.yaml"
case("megatron/layers_text.args", "--num-layers lots --hidden-size 4096 --num-attention-heads 32 "
     "--global-batch-size 8 --seq-length 2048\n", MEG, 2, "--num-layers")
case("megatron/no_batch.args", "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048\n",
     MEG, 2, "--global-batch-size")
case("megatron/unknown_shape.args", "--num-layers 7 --hidden-size 1000 --num-attention-heads 10 "
     "--global-batch-size 8 --seq-length 2048\n", MEG, 2, "--model")
case("megatron/model_args_not_flag.yaml", "MODEL_ARGS:\n  --num-layers: 32\n  hidden-size: 4096\n  --hidden-size: 1\n", MEG, 2,
     "is not a Megatron-LM argument")
# ---- llm-foundry YAML -------------------------------------------------------------------------------------------------
FOUNDRY_BASE = ("max_seq_len: 2048\nmodel:\n  d_model: 4096\n  n_heads: 32\n  n_layers: 32\n  vocab_size: 50368\n"
                "global_train_batch_size: 48\ndevice_train_microbatch_size: 6\nprecision: amp_bf16\n")
case("foundry/microbatch_auto.yaml", FOUNDRY_BASE.replace("device_train_microbatch_size: 6",
     "device_train_microbatch_size: auto"), MEG.replace("--nodes 1 ", ""), 2, "auto")
case("foundry/unknown_sharding.yaml", FOUNDRY_BASE + "fsdp_config:\n  sharding_strategy: HALF_SHARD\n", MEG, 2,
     "HALF_SHARD")
case("foundry/unknown_shape.yaml", FOUNDRY_BASE.replace("n_layers: 32", "n_layers: 31"), MEG, 2, "--model")
# ---- torchtitan TOML and job JSON -------------------------------------------------------------------------------------
TITAN_BASE = ('[model]\nname = "llama3"\nflavor = "8B"\n\n[training]\nlocal_batch_size = 1\nseq_len = 8192\n\n'
              '[parallelism]\ndata_parallel_shard_degree = -1\ntensor_parallel_degree = 1\n')
case("torchtitan/syntax.toml", TITAN_BASE.replace("seq_len = 8192", "seq_len = = 8192"), MEG, 2, "TOML syntax error")
case("torchtitan/unknown_flavor.toml", TITAN_BASE.replace('"8B"', '"3B"'), MEG, 2, "--model")
case("torchtitan/degree_zero.toml", TITAN_BASE.replace("tensor_parallel_degree = 1", "tensor_parallel_degree = 0"),
     MEG, 2, "tensor_parallel_degree")
case("torchtitan/degree_text.toml", TITAN_BASE.replace("tensor_parallel_degree = 1", 'tensor_parallel_degree = "8"'),
     MEG + " --format torchtitan", 0, "")
case("torchtitan/ac_mode.toml", TITAN_BASE + '\n[activation_checkpoint]\nmode = "partial"\n', MEG, 2, "partial")
case("torchtitan/reshard.toml", TITAN_BASE.replace("[parallelism]\n", '[parallelism]\nfsdp_reshard_after_forward = "sometimes"\n'),
     MEG, 2, "sometimes")
case("torchtitan/not_json.json", '{"model": {"name": "llama3"', MEG + " --format torchtitan", 2, "not valid JSON")
case("torchtitan/array.json", '[1, 2]', MEG + " --format torchtitan", 2, "not an object")
# ---- Megatron-Bridge YAML ---------------------------------------------------------------------------------------------
BRIDGE_PERF = ("ConfigContainer:\n  train:\n    train_iters: 25\nperf_matrix:\n  h100:\n    num_gpus_8:\n"
               "      common:\n        seq_length: 8192\n        mbs: 1\n        gbs: 128\n        tp: 1\n      bf16:\n")
BRIDGE = MEG.replace("-o {out}", "--model llama3-8b -o {out}")
case("bridge/no_gpu.yaml", BRIDGE_PERF.replace("h100:", "b200:"), BRIDGE, 2, "no entry for the GPU")
case("bridge/no_count.yaml", BRIDGE_PERF.replace("num_gpus_8", "num_gpus_16"), BRIDGE, 2, "no num_gpus_8")
case("bridge/no_precision.yaml", BRIDGE_PERF, BRIDGE + " --precision fp8_cs", 2, "no precision 'fp8_cs'")
case("bridge/tp_text.yaml", BRIDGE_PERF.replace("tp: 1", "tp: eight"), BRIDGE, 2, "tp")
case("bridge/no_batch.yaml", "model_config:\n  tensor_model_parallel_size: 1\ntrain_config:\n  train_iters: 5\n",
     BRIDGE, 2, "global_batch_size")
case("bridge/no_model.yaml", BRIDGE_PERF, MEG, 2, "--model")
# ---- made by run.sh when it runs (too large, or not files) --------------------------------------------------------------
rows.append(("kineto_sparse_2gb", "@sparse_2gb:trace.json", INGEST, "2", "format"))
rows.append(("kineto_sparse_2gb_forced", "@sparse_2gb:trace.json", "ingest {in} --format kineto -o {out}/store.h5", "2",
             "trace.json"))
rows.append(("config_fifo", "@fifo:run.yaml", "run {in}", "2", "not a regular file"))
rows.append(("kineto_fifo", "@fifo:trace.json", INGEST, "2", "regular file"))
# ---- the command line -------------------------------------------------------------------------------------------------
CFG = "{src}/configs/llama3-8b-fsdp.yaml"
for name, command, code, word in [
    ("no_command", "{none}", 2, "usage"),
    ("unknown_command", "simulate " + CFG, 2, "simulate"),
    ("run_unknown_flag", "run " + CFG + " --fast", 2, "--fast"),
    ("run_missing_value", "run " + CFG + " --out", 2, "--out"),
    ("run_two_configs", "run " + CFG + " " + CFG, 2, "exactly one"),
    ("run_no_config", "run", 2, "exactly one"),
    ("run_iterations_zero", "run " + CFG + " --iterations 0", 2, "--iterations"),
    ("run_iterations_text", "run " + CFG + " --iterations many", 2, "--iterations"),
    ("run_iterations_negative", "run " + CFG + " --iterations -3", 2, "--iterations"),
    ("run_engine_unknown", "run " + CFG + " --engine warp", 2, "warp"),
    ("run_timeline_ranks_bad", "run " + CFG + " --timeline-ranks 0,99", 2, "--timeline-ranks"),
    ("run_timeline_ranks_text", "run " + CFG + " --timeline-ranks a", 2, "--timeline-ranks"),
    ("run_timeline_format_unknown", "run " + CFG + " --timeline-format protobuf --out {out}", 2, "--timeline-format"),
    ("run_out_is_file", "run " + CFG + " --out {link}", 2, "--out"),
    ("run_out_read_only", "run " + CFG + " --out {ro}/sub", 2, "--out"),
    ("run_configs_missing", "run " + CFG + " --configs {src}/no_such_configs --out {out}", 2, "no_such_configs"),
    ("run_configs_too_deep", "run " + CFG + " --configs {src}/configs/hardware --out {out}", 2, "configs/hardware"),
    ("sweep_configs_missing", "sweep {src}/configs/sweeps/llama3-8b-microbatch.yaml --configs {src}/no_such_configs"
     " --out {out}/s", 2, "no_such_configs"),
    ("ingest_no_inputs", "ingest -o {out}/s.h5", 2, "ingest"),
    ("ingest_unknown_format", "ingest {src}/tests/traces/fixtures/nvidia_smi.csv --format pdf -o {out}/s.h5", 2, "pdf"),
    ("ingest_wrong_format", "ingest {src}/tests/traces/fixtures/nvidia_smi.csv --format kineto -o {out}/s.h5", 2,
     "nvidia_smi.csv"),
    ("ingest_output_is_input", "ingest {src}/tests/traces/fixtures/nvidia_smi.csv -o {src}/tests/traces/fixtures/nvidia_smi.csv",
     2, "is the input"),
    ("ingest_output_dir_missing", "ingest {src}/tests/traces/fixtures/nvidia_smi.csv -o {out}/no/dir/s.h5", 2, "does not exist"),
    ("ingest_output_read_only", "ingest {src}/tests/traces/fixtures/nvidia_smi.csv -o {ro}/s.h5", 2, "s.h5"),
    ("ingest_directory_input", "ingest {src}/tests/traces/fixtures -o {out}/s.h5", 2, "fixtures"),
    ("ingest_missing_input", "ingest {src}/no_such_trace.json -o {out}/s.h5", 2, "no_such_trace.json"),
    ("ingest_top_text", "ingest {src}/tests/traces/fixtures/nvidia_smi.csv --summary --top many", 2, "--top"),
    ("calibrate_no_hardware", "calibrate {src}/tests/traces/fixtures/nvidia_smi.csv -o {out}/p.yaml", 2, "--hardware"),
    ("calibrate_unknown_hardware", "calibrate {src}/tests/traces/fixtures/nvidia_smi.csv --hardware Z80 -o {out}/p.yaml", 2, "Z80"),
    ("calibrate_output_is_input", "calibrate {src}/tests/traces/fixtures/nvidia_smi.csv --hardware H100-SXM5-80GB -o {src}/tests/traces/fixtures/nvidia_smi.csv", 2, "is the input"),
    ("calibrate_clock_text", "calibrate {src}/tests/traces/fixtures/nvidia_smi.csv --hardware H100-SXM5-80GB --clock-mhz fast -o {out}/p.yaml", 2, "--clock-mhz"),
    ("replay_no_trace", "replay --hardware H100-SXM5-80GB --out {out}", 2, "replay"),
    ("validate_unknown_flag", "validate --everything", 2, "--everything"),
    ("validate_jobs_zero", "validate --jobs 0 --out {out}/v.md", 2, "--jobs"),
    ("validate_missing_data", "validate --data {src}/no_such_data --out {out}/v.md", 2, "no_such_data"),
    ("validate_cases_without_out", "validate --cases dgx-b200", 2, "--out"),
    ("validate_summaries_is_a_file", "validate --summaries {src}/README.md --out {out}/v.md", 2, "--summaries"),
]:
    rows.append(("cli_" + name, "-", command, str(code), word))

with open(os.path.join(here, "manifest.tsv"), "w") as f:
    f.write("# id\tfile\tcommand\texit\tword (generated by make_cases.py; run by run.sh)\n")
    for row in rows:
        assert "\t" not in "".join(row), row
        f.write("\t".join(row) + "\n")
print("%d cases" % len(rows), file=sys.stderr)
