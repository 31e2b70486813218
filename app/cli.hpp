#pragma once
// Shared pieces of the chopsim command line: argument parsing and the command table.
// Each command lives in its own command_*.cpp and is listed in main.cpp.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/experiments/run.hpp"  // TimelineFormat

namespace chopsim {
struct ModelRegistries;
}

namespace chopsim::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitOutOfMemory = 3;

/// What an option takes (or a command's positional arguments are): the parser needs only none vs a value; the shell
/// completions (`chopsim completion bash|zsh`, generated from the tables below) offer what fits.
enum class Value : std::uint8_t {
  none,             ///< a switch
  text,             ///< a number or free text: nothing to offer
  directory,        ///< a folder
  file,             ///< any file
  run_config,       ///< a run config file or the name of a shipped run config
  hardware,         ///< a name of configs/hardware
  cluster,          ///< a name of configs/clusters
  model,            ///< a name of configs/models, or a Hugging Face config.json
  engine,           ///< a registered engine
  import_format,    ///< a job format chopsim import reads
  trace_format,     ///< a trace reader of chopsim ingest
  objective,        ///< a sweep objective
  node_links,       ///< how calibrate's node joins its GPUs
  timeline_format,  ///< run's --timeline-format
};

/// One option of a command: its name ("--out", "-o") and what it takes.
struct Option {
  std::string_view name;
  Value value;
};

/// Parsed command-line arguments: positionals in order, options by name ("--out" -> "DIR"),
/// and switches ("--simulate-oom"). Each command declares its options in a table (below).
class Arguments {
 public:
  /// Parses `args` (after the command name) against the command's `options`: those with a Value take the next
  /// argument, Value::none ones are switches; anything else starting with '-' is an error naming the option and
  /// listing the valid ones.
  Arguments(const std::vector<std::string>& args, std::span<const Option> options);

  [[nodiscard]] const std::vector<std::string>& positional() const { return positional_; }
  [[nodiscard]] std::optional<std::string> option(std::string_view name) const;
  /// Every value of an option that may repeat (--set K=V --set K2=V2), in order.
  [[nodiscard]] std::vector<std::string> values(std::string_view name) const;
  /// The option's value as a positive integer; InputError naming the option otherwise.
  [[nodiscard]] std::optional<int> positive_int(std::string_view name) const;
  [[nodiscard]] bool has_switch(std::string_view name) const;

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::string, std::less<>> options_;
  std::vector<std::pair<std::string, std::string>> in_order_;
  std::vector<std::string> switches_;
};

/// An InputError about the command line.
[[nodiscard]] InputError argument_error(const std::string& problem, const std::string& fix);
/// Throws an argument error for an --engine value that is not a registered engine, listing the valid ones.
void check_engine_name(const ModelRegistries& registries, const std::string& name);
/// The --timeline-format of `args` (json when absent); an unknown value is an argument error.
[[nodiscard]] TimelineFormat timeline_format_option(const Arguments& args);
/// The --configs folder of `args` (none when absent), checked by check_configs_folder: a folder that does not exist,
/// or holds none of hardware/, models/ and clusters/, is an input error.
[[nodiscard]] std::optional<std::filesystem::path> configs_option(const Arguments& args);

struct Command {
  std::string_view name;
  std::string_view usage;  ///< lines for the help text
  std::span<const Option> options;
  Value positional;        ///< what the positional arguments are
  std::string_view words;  ///< fixed words a positional may also be ("merge" for sweep), space-separated
  int (*run)(const std::vector<std::string>& args);
};

/// The command table (main.cpp), for the completion scripts.
[[nodiscard]] std::span<const Command> commands();

int command_run(const std::vector<std::string>& args);
int command_sweep(const std::vector<std::string>& args);
int command_study(const std::vector<std::string>& args);
int command_report(const std::vector<std::string>& args);
int command_import(const std::vector<std::string>& args);
int command_validate(const std::vector<std::string>& args);
int command_describe(const std::vector<std::string>& args);
int command_ingest(const std::vector<std::string>& args);
int command_calibrate(const std::vector<std::string>& args);
int command_replay(const std::vector<std::string>& args);
int command_completion(const std::vector<std::string>& args);

/// The shell completion script for `shell` ("bash" or "zsh") of the command table, with the engines, formats and
/// objectives chopsim registers: what `chopsim completion SHELL` prints and scripts/completion/ holds.
[[nodiscard]] std::string completion_script(std::string_view shell);

// The options of each command: what it parses and what the completions offer.
inline constexpr Option kRunOptions[] = {{"--out", Value::directory},
                                         {"-o", Value::directory},
                                         {"--iterations", Value::text},
                                         {"--configs", Value::directory},
                                         {"--engine", Value::engine},
                                         {"--timeline-ranks", Value::text},
                                         {"--set", Value::text},
                                         {"--simulate-oom", Value::none},
                                         {"--force", Value::none},
                                         {"--report", Value::none},
                                         {"--timeline-format", Value::timeline_format}};

inline constexpr Option kSweepOptions[] = {{"--out", Value::directory},
                                           {"-o", Value::directory},
                                           {"--jobs", Value::text},
                                           {"-j", Value::text},
                                           {"--configs", Value::directory},
                                           {"--shard", Value::text},
                                           {"--objective", Value::objective},
                                           {"--report", Value::none},
                                           {"--mpi", Value::none},
                                           {"--quiet", Value::none}};
inline constexpr Option kSweepMergeOptions[] = {{"--out", Value::directory},
                                                {"-o", Value::directory},
                                                {"--configs", Value::directory},
                                                {"--objective", Value::objective}};
inline constexpr Option kStudyOptions[] = {
    {"--out", Value::directory},     {"-o", Value::directory},  {"--jobs", Value::text},  {"-j", Value::text},
    {"--configs", Value::directory}, {"--report", Value::none}, {"--quiet", Value::none}, {"--mpi", Value::none}};
inline constexpr Option kReportOptions[] = {{"-o", Value::file}, {"--out", Value::file}};
inline constexpr Option kImportOptions[] = {{"--format", Value::import_format},
                                            {"--hardware", Value::hardware},
                                            {"--cluster", Value::cluster},
                                            {"--nodes", Value::text},
                                            {"--model", Value::model},
                                            {"--precision", Value::text},
                                            {"-o", Value::file},
                                            {"--out-dir", Value::directory},
                                            {"--configs", Value::directory},
                                            {"--strict", Value::none}};
inline constexpr Option kValidateOptions[] = {{"--data", Value::directory},
                                              {"--configs", Value::directory},
                                              {"--profiles", Value::directory},
                                              {"--out", Value::file},
                                              {"-o", Value::file},
                                              {"--jobs", Value::text},
                                              {"-j", Value::text},
                                              {"--engine", Value::engine},
                                              {"--cases", Value::text},
                                              {"--summaries", Value::directory},
                                              {"--quiet", Value::none}};
inline constexpr Option kIngestOptions[] = {
    {"--out", Value::file}, {"-o", Value::file},        {"--format", Value::trace_format},
    {"--top", Value::text}, {"--summary", Value::none}, {"--quiet", Value::none}};
inline constexpr Option kCalibrateOptions[] = {{"--hardware", Value::hardware},
                                               {"--configs", Value::directory},
                                               {"--out", Value::file},
                                               {"-o", Value::file},
                                               {"--report", Value::file},
                                               {"--clock-mhz", Value::text},
                                               {"--min-kernel-us", Value::text},
                                               {"--max-gap-us", Value::text},
                                               {"--gpus-per-node", Value::text},
                                               {"--node-links", Value::node_links},
                                               {"--keep-asymptote", Value::text},
                                               {"--power-runs", Value::file},
                                               {"--quiet", Value::none}};
/// calibrate's --node-links values.
inline constexpr std::string_view kNodeLinkNames[] = {"nvswitch", "xgmi_mesh"};
inline constexpr Option kReplayOptions[] = {{"--hardware", Value::hardware},
                                            {"--cluster", Value::cluster},
                                            {"--out", Value::directory},
                                            {"-o", Value::directory},
                                            {"--configs", Value::directory},
                                            {"--measured-hardware", Value::hardware},
                                            {"--calibration", Value::file},
                                            {"--measured-calibration", Value::file},
                                            {"--dependency-window-us", Value::text},
                                            {"--engine", Value::engine},
                                            {"--simulate-collectives", Value::none},
                                            {"--timeline-format", Value::timeline_format}};

inline constexpr std::string_view kRunUsage =
    "  run CONFIG [--out DIR] [--iterations N] [--configs DIR] [--engine NAME] [--timeline-ranks LIST]\n"
    "             [--timeline-format json|perfetto] [--simulate-oom] [--force] [--set KEY=VALUE]... [--report]\n"
    "      Predict one training iteration of the run described by CONFIG (YAML, see docs/configs.md): a file,\n"
    "      or the name of a shipped run config (llama3-8b-fsdp) looked up in CHOPSIM_CONFIG_PATH's folders and\n"
    "      the installed configs (PREFIX/share/chopsim/configs).\n"
    "      --out DIR        also write DIR/summary.json, DIR/timeline.json (Perfetto) and DIR/ops.h5\n"
    "      --iterations N   simulate N iterations back to back (overrides the config)\n"
    "      --configs DIR    look up hardware/, models/ and clusters/ by name under DIR first\n"
    "      --engine NAME    fast (the default) or simgrid (the reference); overrides simulation.engine\n"
    "      --timeline-ranks LIST  GPUs timeline.json shows, e.g. 0,8,16 (default: every GPU simulated, one per\n"
    "                       symmetry class; a GPU not simulated is shown through its class's representative)\n"
    "      --timeline-format perfetto  write DIR/timeline.pftrace (Perfetto's protobuf trace, about 40 % of\n"
    "                       timeline.json's size; ui.perfetto.dev opens it) instead of DIR/timeline.json\n"
    "      --simulate-oom   simulate even when the run does not fit in GPU memory\n"
    "      --force          simulate a run of more than 2e10 ops (GPUs x ops per iteration x iterations), and\n"
    "                       write a timeline.json estimated above 2 GiB\n"
    "      --set KEY=VALUE  override a key of CONFIG, e.g. --set training.micro_batch=4 --set parallelism.tp=2\n"
    "                       (validated as the file's own keys; repeatable)\n"
    "      --report         also write DIR/report.html (chopsim report; needs --out)\n"
    "      example: chopsim run configs/llama3-8b-fsdp.yaml --out out/ --report\n";
inline constexpr std::string_view kImportUsage =
    "  import JOB... --hardware NAME --cluster NAME [--nodes N] [--model NAME|config.json] [--precision NAME]\n"
    "         [--format nemo|megatron|bridge|foundry|torchtitan|hf] (-o run.yaml | --out-dir DIR) [--strict]\n"
    "         [--configs DIR]\n"
    "      Turn framework job configs (NeMo training YAML, Megatron-LM arguments or a functional test's\n"
    "      model_config.yaml, Megatron-Bridge ConfigContainer or performance YAML, llm-foundry training YAML,\n"
    "      torchtitan TOML or job JSON) into chopsim run configs by one mapping (docs/import.md); the GPU, the\n"
    "      fabric and the node count come from the command line (--precision: a Bridge perf_matrix entry's\n"
    "      precision, default bf16). A Hugging Face\n"
    "      config.json (Llama, Mistral, Qwen2/3, Mixtral, Qwen3-MoE) becomes a model file for configs/models/\n"
    "      (no --hardware or --cluster needed); as a job's --model it is written into the run config inline.\n"
    "      Each output is checked as chopsim would load it before it is written; settings not carried over\n"
    "      are printed as notes (--strict: an error).\n"
    "      example: chopsim import llama3_70b.toml --hardware H100-SXM5-80GB --cluster dgx-h100 --nodes 8 -o "
    "run.yaml\n";
inline constexpr std::string_view kReportUsage =
    "  report PATH [-o report.html]\n"
    "      Write one self-contained HTML page (Chart.js inlined, opens offline) with the plots of a run's --out\n"
    "      folder: headline figures, time breakdown, loss waterfall, memory against capacity, power, clock and\n"
    "      temperature per GPU over time, throttled share per GPU; or of a sweep's --out folder: best points,\n"
    "      throughput per point, Pareto front, power peaks and memory per point; of a study's --out folder; or\n"
    "      of the validation.csv chopsim validate writes: predicted against measured with a ±10 % band, error by\n"
    "      group (docs/report.md). Default: PATH/report.html, or validation.html beside validation.csv.\n"
    "      example: chopsim report out/ -o out/report.html\n";
inline constexpr std::string_view kSweepUsage =
    "  sweep SWEEP [--out DIR] [--jobs N] [--configs DIR] [--shard I/N | --mpi] [--objective NAME] [--report]\n"
    "        [--quiet]\n"
    "  sweep merge SWEEP --out DIR [--configs DIR] [--objective NAME] SHARD_DIR...\n"
    "      Run every point of a what-if sweep (a base run config and axes over its keys, docs/sweeps.md) in\n"
    "      parallel; points that do not fit in memory are not simulated. DIR (default sweep-NAME) holds\n"
    "      sweep.sqlite, which a rerun resumes from, and results.csv; prints the best points, the Pareto front\n"
    "      of throughput vs energy per token and the effect of each axis. --shard I/N runs the points\n"
    "      whose index % N is I (a job array's task); merge joins the shards' folders into DIR. --mpi under\n"
    "      mpirun -n N (or srun) does both: each MPI rank runs its share, rank 0 merges them into DIR. --report\n"
    "      also writes DIR/report.html (chopsim report). --objective ranks by tokens_per_s, energy_per_token,\n"
    "      mfu, cost_per_token (needs the sweep's cost:) or time_to_train (needs its goal_tokens:) instead of\n"
    "      the sweep file's objective.\n"
    "      example: chopsim sweep configs/sweeps/llama3-8b-microbatch.yaml --jobs 2 --report\n";
inline constexpr std::string_view kStudyUsage =
    "  study STUDY [--out DIR] [--jobs N] [--configs DIR] [--mpi] [--report] [--quiet]\n"
    "      A procurement study (docs/studies.md): one training job on each candidate system of STUDY. Each\n"
    "      candidate runs the study's sweep to find its best parallelism and micro-batch; its best point is priced\n"
    "      from the cost catalog (time to train, energy, cost, tokens per dollar and per kW, racks, facility\n"
    "      power). DIR (default study-NAME) holds results.csv and one resumable sweep folder per candidate;\n"
    "      --mpi under mpirun -n N (or srun) spreads every candidate's points over the ranks and rank 0 merges\n"
    "      and prices them; --report also writes DIR/report.html (chopsim report).\n"
    "      example: chopsim study configs/studies/scaleup-vs-scaleout.yaml --jobs 2\n";
inline constexpr std::string_view kValidateUsage =
    "  validate [--data DIR] [--configs DIR] [--profiles DIR] [--out FILE] [--jobs N] [--engine NAME]\n"
    "           [--cases TEXT[,TEXT...]] [--summaries DIR] [--quiet]\n"
    "      Predict every measured case in DIR/validation (default ../shared/data), with the hardware files and\n"
    "      with the calibration profile of the case's GPU (--profiles, default calibration/profiles), and write\n"
    "      the predicted-vs-measured table to FILE (default docs/validation.md) and its data beside it (FILE with\n"
    "      .csv: chopsim report draws it). --engine NAME predicts with that engine instead of each case's (fast\n"
    "      by default). --cases predicts only the cases whose id or group contains one of the texts (needs\n"
    "      --out: docs/validation.md keeps the full table). --summaries DIR keeps the summary.json of every\n"
    "      simulated throughput or step-time case in DIR (<case id>.json): where each predicted step's time goes.\n"
    "      example: chopsim validate --out /tmp/validation.md --jobs 2\n"
    "      example: chopsim validate --cases dgx-b200 --summaries /tmp/b200 --out /tmp/b200.md\n";
inline constexpr std::string_view kIngestUsage =
    "  ingest TRACE... [-o STORE.h5] [--summary] [--format NAME] [--top N] [--quiet]\n"
    "      Read measured traces and telemetry (Kineto JSON[.gz], rocprofv3 JSON/CSV, Nsight Systems SQLite,\n"
    "      nvidia-smi / DCGM dmon / rocm-smi logs) into one HDF5 store (docs/traces.md).\n"
    "      -o STORE.h5      write the store (whole or not at all)\n"
    "      --summary        print GPU time per kernel class, the top N kernels (default 10) and per rank\n"
    "      --format NAME    read every TRACE as NAME instead of detecting its format\n"
    "      --quiet          no progress and no per-file lines (ingest, calibrate, validate, sweep and study show\n"
    "                       their progress on stderr: a bar on a terminal, a line every 10 s otherwise)\n"
    "      example: chopsim ingest trace.json.gz nvidia-smi.csv -o store.h5 --summary\n";
inline constexpr std::string_view kCalibrateUsage =
    "  calibrate INPUT... --hardware NAME -o PROFILE.yaml [--report REPORT.md] [--configs DIR]\n"
    "            [--clock-mhz F|held] [--min-kernel-us T] [--max-gap-us G] [--gpus-per-node N]\n"
    "            [--node-links nvswitch|xgmi_mesh] [--keep-asymptote CLASS,...] [--power-runs RUNS.yaml] [--quiet]\n"
    "      Fit kernel efficiencies, launch overhead, collective alpha-beta and telemetry (power, thermal RC) to\n"
    "      kernel stores, TraceLens/Vidur tables or traces, and write a calibration profile (docs/calibration.md).\n"
    "      --hardware NAME  the GPU measured (configs/hardware/NAME.yaml, or a path): peaks and defaults\n"
    "      --report FILE    also write the Markdown fit report\n"
    "      --clock-mhz F    core clock the kernels ran at (default: the hardware's rated clock); held: each kernel\n"
    "                       at the clock the hardware file's power model holds for its measured load under the TDP\n"
    "      --min-kernel-us T  leave kernels shorter than T out of the efficiency fits (default 10)\n"
    "      --max-gap-us G   inter-kernel gaps longer than G are host stalls, not launch overhead (default 100)\n"
    "      --gpus-per-node N  collectives within N consecutive ranks are intra-node (default 8)\n"
    "      --node-links L   how a node's GPUs are joined (default: nvswitch for NVIDIA, xgmi_mesh for AMD)\n"
    "      --keep-asymptote CLASS,...  keep the hardware file's eta_max of these classes (e.g. gemm) and fit only\n"
    "                       F_half: for data of small kernels when the file states large kernels' efficiency\n"
    "      --power-runs FILE  also fit the power model's voltage knee and activity weights to whole runs: each\n"
    "                       run config of FILE simulated against the telemetry inputs over its window\n"
    "      example: chopsim calibrate store.h5 --hardware H100-SXM5-80GB -o h100.yaml --report fit.md\n";
inline constexpr std::string_view kReplayUsage =
    "  replay STORE.h5 [--hardware NAME] [--cluster NAME] [--out DIR] [--measured-hardware NAME]\n"
    "         [--calibration PROFILE] [--measured-calibration PROFILE] [--simulate-collectives]\n"
    "         [--dependency-window-us T] [--configs DIR] [--engine NAME] [--timeline-format json|perfetto]\n"
    "      Run the measured kernel sequences of a kernel store (chopsim ingest) through the engine and report\n"
    "      measured vs replayed time per kernel class and in total (docs/replay.md).\n"
    "      --hardware NAME  replay on this GPU (default: the measured one): kernels scaled by the roofline's\n"
    "                       target/source ratio, collectives re-simulated\n"
    "      --cluster NAME   replay on this cluster (default: the GPU's usual node; nodes as the ranks need)\n"
    "      --out DIR        also write DIR/summary.json and DIR/timeline.json (Perfetto)\n"
    "      --measured-hardware NAME  the measured GPU's hardware file (default: from the store's GPU name)\n"
    "      --calibration P  calibration profile of the target GPU (--measured-calibration: of the measured one)\n"
    "      --simulate-collectives  re-simulate matched collectives on the measured hardware too\n"
    "      --dependency-window-us T  cross-stream dependency when a kernel starts within T of another's end (5)\n"
    "      --engine NAME    fast (the default) or simgrid (the reference)\n"
    "      --timeline-format perfetto  write DIR/timeline.pftrace instead of DIR/timeline.json (as run does)\n"
    "      example: chopsim replay store.h5 --hardware H200-SXM-141GB --out replay/\n";
inline constexpr std::string_view kCompletionUsage =
    "  completion bash|zsh\n"
    "      Print the shell completion script (installed to share/bash-completion/completions/chopsim and\n"
    "      share/zsh/vendor-completions/_chopsim; in a checkout, source scripts/completion/chopsim.bash, or put\n"
    "      scripts/completion on zsh's fpath).\n"
    "      example: source <(chopsim completion bash)\n";
inline constexpr std::string_view kDescribeUsage =
    "  describe\n"
    "      List the registered models (compute, collective, power, thermal, governor), topologies and engines.\n"
    "      example: chopsim describe\n";

}  // namespace chopsim::cli
