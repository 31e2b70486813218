// NVIDIA's Megatron-Core throughput tables as validation cases: each record of
// ../shared/data/validation/published_megatron_records.yaml mapped to a run by one rule (moved out of
// validation_cases.cpp).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/yaml.hpp"
#include "chopsim/experiments/validation.hpp"
#include "chopsim/models/memory.hpp"
#include "validation_internal.hpp"

namespace chopsim::validation_detail {
namespace {

/// The decoder layers of each virtual stage in Megatron-Bridge's DeepSeek-V3 recipes
/// (recipes/deepseek/deepseek_v3.py, _get_deepseek_v3_pipeline_layout, the same for every pp x vp of a product): the
/// embedding on the first virtual stage, the MTP module and the loss with the last one's few layers. Empty where the
/// recipe has no layout (it then refuses the run).
std::vector<int> deepseek_v3_bridge_layout(int virtual_stages) {
  switch (virtual_stages) {
    case 1:
      return {61};
    case 4:
      return {16, 16, 16, 13};
    case 8:
      return {8, 8, 8, 8, 8, 8, 8, 5};
    case 16: {
      std::vector<int> layout(15, 4);
      layout.push_back(1);
      return layout;
    }
    default:
      return {};
  }
}

/// A run of Narayanan et al. (SC'21) Table 1, the Megatron-LM README's A100 weak-scaling rows, as the paper's artifact
/// launches it: examples/sc21/run_table_1.sh and CONFIG.sh (NVIDIA/Megatron-LM@38879f8b3f0e, tag core_v0.4.0).
struct Sc21Run {
  int hidden = 0, layers = 0;        ///< HS, NLS: the sizes the README row prints identify it
  int heads = 0;                     ///< NAH
  int tp = 1, pp = 1;                ///< TP, PP
  int micro_batch = 1;               ///< MBS
  int global_batch = 0;              ///< GBS
  int nodes = 0;                     ///< NNODES (8 A100 each)
  int layers_per_virtual_stage = 0;  ///< --num-layers-per-virtual-pipeline-stage; 0: plain 1F1B
  bool local_ddp = false;            ///< DDP=local (Megatron's own, reduces after the backward) or torch
  /// Model chunks per pipeline stage (1: plain 1F1B).
  [[nodiscard]] int virtual_stages() const {
    return layers_per_virtual_stage > 0 ? layers / pp / layers_per_virtual_stage : 1;
  }
};

constexpr Sc21Run kSc21Table1[] = {
    {2304, 24, 24, 1, 1, 16, 512, 4, 0, false},      {3072, 30, 32, 2, 1, 16, 512, 8, 0, false},
    {4096, 36, 32, 4, 1, 16, 512, 16, 0, false},     {6144, 40, 48, 8, 1, 8, 1024, 32, 0, false},
    {8192, 48, 64, 8, 2, 4, 1536, 64, 0, true},      {10240, 60, 80, 8, 4, 2, 1792, 128, 5, true},
    {12288, 80, 96, 8, 8, 2, 2304, 192, 5, true},    {16384, 96, 128, 8, 16, 1, 2160, 240, 3, true},
    {20480, 105, 128, 8, 35, 1, 2520, 315, 1, true}, {25600, 128, 160, 8, 64, 1, 3072, 384, 0, true},
};

const Sc21Run* sc21_run(int hidden, int layers) {
  for (const Sc21Run& run : kSc21Table1)
    if (run.hidden == hidden && run.layers == layers) return &run;
  return nullptr;
}

}  // namespace

double narayanan_flops_per_token(const TransformerSpec& model, int seq_len) {
  const double l = model.layers, h = model.hidden, s = seq_len, v = model.vocab;
  return 96.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
}

/// NVIDIA's published Megatron-Core training throughput (../shared/data/validation/published_megatron_records.yaml):
/// Megatron-Bridge's performance tables (DGX-H100, DGX-B200) and the Megatron-LM README's scaling tables. Every record
/// is mapped to a run by one rule, no per-record tuning:
///  * the model: configs/models/<name>.yaml for Llama 3, Qwen3 MoE, GPT-OSS 120B and DeepSeek-V3 (its MTP module and
///    Megatron-Bridge's layout of its 61 layers, deepseek_v3_bridge_layout); the README's GPT rows from the sizes their
///    name prints (GPT-3 style: GELU MLP of 4h, LayerNorm, learned positions, untied), with Megatron-LM's defaults
///    of the commit that published them for all they do not state (linear biases, 0.1 dropouts, the unfused cross
///    entropy, the data loader's attention mask, the NaN checks) and, as they print no micro-batch, the fastest
///    power-of-two micro-batch that fits (ValidationCase::micro_batch_choices);
///  * the machine: H100 rows on DGX H100, B200 rows on DGX B200, A100 rows on DGX A100 (8 GPUs per node);
///  * the parallelism as printed (tp, pp, cp, dp, ep, etp; vp > 1 = the interleaved schedule; fsdp > 0 = FSDP over the
///    data-parallel group, else the distributed optimizer), sequence parallelism with tp > 1 (Megatron-Bridge's
///    recipes), gradient reduction and parameter gathering overlapped, Transformer Engine's fused (cuDNN) attention,
///    the fused cross entropy, no recomputation (the tables do not state any) unless the run does not fit without:
///    then full recomputation of the first k layers of each chunk, the least k that fits;
///  * the precision as printed: FP8 in any scaling (delayed, current, MX) as fp8, BF16 as bf16. A table that prints
///    none (Megatron-Bridge 25.09) takes the precision of the next release's row for the same model, machine, GPU
///    count and tp/pp/ep (25.11 first printed the column; its dense rows are within 3.4 % of 25.09's, its MoE rows
///    differ by up to 2x because 25.09 ran token-dropping recipes: its "(tokendrop)" rows run with capacity factor 1
///    and experts padded to it, through the all-to-all dispatcher, as that release's apply_moe_token_drop sets).
/// The by-category table also splits MoE rows by whether their expert all-to-all crosses nodes (docs/calibration.md,
/// "Mixture of experts: the dispatcher and the host"). MoE tokens go through the dispatcher the record's release runs
/// (flex, or NCCL's all-to-all where its performance config leaves it), with the batch-level EP overlap where the
/// config sets moe_a2a_overlap (below).
/// Records chopsim cannot predict stay in the table with the reason: a model it cannot describe, a precision or
/// parallelism the record does not give, a layer split Megatron accepts and chopsim not.
void add_megatron_record_cases(const std::filesystem::path& data_dir, const std::filesystem::path& configs_dir,
                               std::vector<ValidationCase>& cases) {
  const auto records_path = data_dir / "validation" / "published_megatron_records.yaml";
  if (!std::filesystem::exists(records_path)) return;
  const YAML::Node records = load_yaml_data(records_path);
  const auto text = [](const YAML::Node& n) { return n && !n.IsNull() ? n.as<std::string>() : std::string(); };
  // Fields a record leaves open are null or prose ("96 -> 4608"): those read as `fallback`.
  const auto integer = [](const YAML::Node& n, int fallback) {
    if (!n || n.IsNull()) return fallback;
    try {
      return n.as<int>();
    } catch (const YAML::Exception&) {
      return fallback;
    }
  };
  // What a row's precision reads as ("not given" when the table has no precision column).
  const auto precision_of = [&](const YAML::Node& record) {
    const std::string lower = to_lower(text(record["precision"]));
    return lower.find("fp8") != std::string::npos    ? std::string("fp8")
           : lower.find("bf16") != std::string::npos ? std::string("bf16")
                                                     : std::string("not given");
  };
  // The FP8 scaling of a printed precision ("MXFP8", "FP8-MX", "FP8-CS", "FP8-CS (FP8-MX)": the first is the run's):
  // MX is block scaling, CS current scaling; a plain "FP8" is an H100 row, and Megatron-Bridge's H100 FP8 performance
  // configs are current scaling in every release (scripts/performance/configs/*: *_H100_FP8_CS_V1, v0.2.0-v0.5.1;
  // perf_recipes: _perf_precision("fp8_cs")).
  const auto fp8_recipe_of = [&](const std::string& printed) {
    const std::string first = to_lower(printed.substr(0, printed.find(" (")));
    if (first.find("mx") != std::string::npos) return Fp8Recipe::mxfp8;
    return Fp8Recipe::current;
  };
  // A row's release ("mbridge-25.09-dgx-..." -> "25.09") and the numbers that order it ({25, 9}), and the run it
  // describes: the model without its variant in parentheses, the machine, the GPU count and tp/pp/ep.
  const auto release_of = [&](const YAML::Node& record) {
    const std::string id = text(record["id"]);
    const auto first = id.find('-');
    const auto last = id.find('-', first + 1);
    return first == std::string::npos || last == std::string::npos ? std::string()
                                                                   : id.substr(first + 1, last - first - 1);
  };
  const auto release_order = [](const std::string& release) {
    std::vector<int> version;
    std::stringstream parts(release);
    for (std::string part; std::getline(parts, part, '.');) version.push_back(std::atoi(part.c_str()));
    return version;
  };
  const auto run_key = [&](const YAML::Node& record) {
    std::string model = text(record["model"]);
    model = model.substr(0, model.find(" ("));
    return model + "|" + text(record["gpu"]) + "|" + text(record["num_gpus"]) + "|" + text(record["tp"]) + "|" +
           text(record["pp"]) + "|" + text(record["ep"]);
  };
  // Per run key, the rows that print their precision, earliest release first: (release order, release, precision).
  std::map<std::string, std::vector<std::tuple<std::vector<int>, std::string, std::string>>> printed_precision;
  for (const auto& record : records)
    if (precision_of(record) != "not given") {
      const std::string release = release_of(record);
      printed_precision[run_key(record)].emplace_back(release_order(release), release, text(record["precision"]));
    }
  for (auto& [key, rows] : printed_precision) std::sort(rows.begin(), rows.end());

  std::map<std::string, TransformerSpec> models;
  const auto model_file = [&](const std::string& name) -> const TransformerSpec& {
    if (!models.count(name)) models.emplace(name, load_model_config(configs_dir / "models" / (name + ".yaml")));
    return models.at(name);
  };
  // "GPT 16B (heads=48, hidden=6144, layers=32, vocab=131072)": the sizes a README row prints; 0 when absent.
  const auto printed = [](const std::string& name, const std::string& key) {
    const auto at = name.find(key + "=");
    return at == std::string::npos ? 0 : std::atoi(name.c_str() + at + key.size() + 1);
  };

  // Expert tensor parallelism as printed; where the table leaves it open and ep does not fit in dp x cp, the recipe
  // folds ep over the tensor-parallel ranks with etp 1 (Megatron-Bridge's qwen3_235b_a22b recipe:
  // expert_tensor_parallel_size 1), the only layout Megatron-Core accepts there. 0 = tp (ParallelismSpec::etp).
  const auto expert_tensor_parallel = [&](const YAML::Node& record) {
    const int printed = integer(record["etp"], 0);
    const bool folded = std::max(1, integer(record["ep"], 1)) > integer(record["dp"], 1) * integer(record["cp"], 1);
    return printed == 0 && folded ? 1 : printed;
  };
  // Whether a record's expert all-to-all stays on one node's NVLink or crosses the fabric: an ep group spans ep x etp
  // consecutive GPUs of the expert layout, and every machine here has 8 GPUs per node.
  const auto expert_parallel_span = [&](const YAML::Node& record, bool moe) -> std::string {
    if (!moe) return "dense";
    const int ep = std::max(1, integer(record["ep"], 1));
    if (ep == 1) return "ep 1";
    const int etp = expert_tensor_parallel(record);
    return ep * (etp > 0 ? etp : integer(record["tp"], 1)) <= 8 ? "ep inside a node" : "ep across nodes";
  };
  for (const auto& record : records) {
    const auto where = SourceLocation{records_path.string(), record.Mark().line + 1, record.Mark().column + 1};
    try {
      ValidationCase c;
      c.id = text(record["id"]);
      c.group = "megatron_records";
      c.source = text(record["source"]);
      const std::string model = text(record["model"]);
      const std::string gpu = text(record["gpu"]);
      const std::string task = text(record["task"]);
      const int gpus = integer(record["num_gpus"], 0);
      const bool readme = c.id.starts_with("megatronlm");
      const bool moe = model.find("Qwen3") != std::string::npos || model.find("DeepSeek") != std::string::npos ||
                       model.find("OSS") != std::string::npos || model.find("Nemotron") != std::string::npos;
      const std::string machine = gpu.find("B200") != std::string::npos   ? "B200"
                                  : gpu.find("A100") != std::string::npos ? "A100"
                                                                          : "H100";
      std::string precision_name = precision_of(record);
      std::string precision_printed = text(record["precision"]);
      std::string precision_from;  // the release whose table gave the precision, when this one prints none
      if (precision_name == "not given") {
        const auto rows = printed_precision.find(run_key(record));
        const std::vector<int> order = release_order(release_of(record));
        if (rows != printed_precision.end())
          for (const auto& [later_order, later, p] : rows->second)
            if (later_order > order) {
              precision_printed = p;
              precision_name = to_lower(p).find("fp8") != std::string::npos ? "fp8" : "bf16";
              precision_from = later;
              break;
            }
      }
      c.categories = {{"source", readme ? "Megatron-LM README" : "Megatron-Bridge"},
                      {"GPU", machine},
                      {"model", moe ? "MoE" : "dense"},
                      {"precision", precision_name},
                      {"GPUs", gpu_count_band(gpus)},
                      {"expert parallelism", expert_parallel_span(record, moe)}};
      const auto real = [](const YAML::Node& n) {
        if (!n || n.IsNull()) return 0.0;
        try {
          return n.as<double>();
        } catch (const YAML::Exception&) {
          return 0.0;
        }
      };
      const double tokens = real(record["tokens_per_s_per_gpu"]);
      const double tflops = real(record["tflops_per_gpu"]);
      c.metric = tokens > 0.0 ? ValidationMetric::tokens_per_s_per_gpu : ValidationMetric::model_tflops_per_gpu;
      c.measured = tokens > 0.0 ? tokens : tflops * 1e12;
      c.notes = model + ", " + std::to_string(gpus) + " " + machine + ", " + precision_name +
                (precision_from.empty() ? "" : " (not printed; as the " + precision_from + " table gives this run)") +
                (task.empty() ? "" : ", " + task);
      const auto skip = [&](const std::string& why) {
        c.not_modelled = why;
        cases.push_back(c);
      };
      if (!(c.measured > 0.0)) {
        skip("the record gives no per-GPU throughput at one GPU count");
        continue;
      }
      std::string name;
      if (model.starts_with("LLAMA3_8B")) name = "llama3-8b";
      if (model.starts_with("LLAMA3_70B")) name = "llama3-70b";
      if (model.starts_with("LLAMA3.1_405B")) name = "llama3-405b";
      if (model.starts_with("Qwen3_30B_a3B")) name = "qwen3-30b-a3b";
      if (model.starts_with("Qwen3_235B_a22B")) name = "qwen3-235b-a22b";
      if (model.starts_with("GPT OSS 120B")) name = "gpt-oss-120b";
      if (model.starts_with("DeepSeekV3")) name = "deepseek-v3";  // with its MTP module, as the recipes train it
      if (model.starts_with("Nemotron_3_Nano")) name = "nemotron-3-nano";
      RunSpec& run = c.run;
      run.name = c.id;
      // The README's A100 rows print no head count or tp / pp split: the paper's artifact gives them (Sc21Run).
      const Sc21Run* sc21 = readme && machine == "A100" && printed(model, "heads") == 0
                                ? sc21_run(printed(model, "hidden"), printed(model, "layers"))
                                : nullptr;
      if (!name.empty()) {
        run.model = model_file(name);
      } else if (model.starts_with("GPT") && printed(model, "hidden") > 0 &&
                 (printed(model, "heads") > 0 || sc21 != nullptr)) {
        run.model.name = model;
        run.model.layers = printed(model, "layers");
        run.model.hidden = printed(model, "hidden");
        run.model.heads = sc21 != nullptr ? sc21->heads : printed(model, "heads");
        run.model.kv_heads = run.model.heads;
        run.model.ffn_hidden = 4 * run.model.hidden;
        run.model.vocab = printed(model, "vocab");
        run.model.mlp = MlpKind::gelu;
        run.model.norm = NormKind::layernorm;
        run.model.position_embedding = PositionEmbedding::learned;
      } else if (model.find("Nemotron_3_Super") != std::string::npos) {
        // What sources reachable here give (2026-11-30): the layer mix (88 layers: 40 Mamba-2, 40 MoE, 8 attention),
        // the hidden size (4,096) and the vocabulary (131k) only in third-party summaries of its Hugging Face
        // config; its MoE sizes only in a mock of Megatron-Bridge's unit tests "for Super model" (512 experts,
        // top-22, expert FFN 2,688, shared expert 5,376, latent 1,024: tests/unit_tests/models/nemotronh/
        // test_nemotron_h_bridge.py). Megatron-Bridge's recipes load the rest from the Hugging Face config.
        skip(
            "Nemotron 3 Super's architecture is not in a source this project has: its layer order, attention and "
            "Mamba-2 widths are in its Hugging Face config only; and its LatentMoE (routed experts on a 1,024-wide "
            "latent projection of the 4,096-wide hidden state) is not modelled");
        continue;
      } else {
        skip("the record does not give the model's head count (" + model + ")");
        continue;
      }
      if (sc21 != nullptr) {
        // The artifact's CONFIG.sh trains in fp16 (--fp16 --loss-scale 8192) at sequence length 2048.
        precision_name = "fp16";
        for (auto& [dimension, value] : c.categories)
          if (dimension == "precision") value = precision_name;
        const bool same_run = sc21->nodes * 8 == gpus && sc21->global_batch == integer(record["global_batch"], 0) &&
                              integer(record["seq_len"], 2048) == 2048;
        if (!same_run) {
          skip("the record's GPU count or batch is not the SC'21 artifact's run of this model");
          continue;
        }
        c.notes = model + ", " + std::to_string(gpus) + " " + machine +
                  ", fp16; as the SC'21 artifact runs it (examples/sc21/run_table_1.sh: tp " +
                  std::to_string(sc21->tp) + ", pp " + std::to_string(sc21->pp) +
                  (sc21->virtual_stages() > 1 ? " x vp " + std::to_string(sc21->virtual_stages()) : std::string()) +
                  ", micro-batch " + std::to_string(sc21->micro_batch) + ", full recomputation, " +
                  (sc21->local_ddp ? "local" : "torch") + " DDP)";
      }
      if (precision_name == "not given") {
        skip("the record does not give the precision, and no later release's table has the same run");
        continue;
      }
      if (sc21 == nullptr &&
          (integer(record["tp"], 0) < 1 || integer(record["pp"], 0) < 1 || integer(record["dp"], 0) < 1)) {
        skip("the record does not give tp, pp and dp");
        continue;
      }
      const std::string hardware = machine == "B200" ? "B200" : machine == "A100" ? "A100-SXM4-80GB" : "H100-SXM5-80GB";
      const std::string cluster = machine == "B200" ? "dgx-b200" : machine == "A100" ? "dgx-a100" : "dgx-h100";
      run.hardware = load_hardware_config(configs_dir / "hardware" / (hardware + ".yaml"));
      run.cluster = load_cluster_config(configs_dir / "clusters" / (cluster + ".yaml"));
      run.cluster.nodes = std::max(1, gpus / run.cluster.gpus_per_node);
      if (run.cluster.nodes == 1) run.cluster.fabric.kind = "none";
      ParallelismSpec& par = run.parallelism;
      par.tp = sc21 != nullptr ? sc21->tp : integer(record["tp"], 1);
      par.pp = sc21 != nullptr ? sc21->pp : integer(record["pp"], 1);
      par.cp = integer(record["cp"], 1);
      par.dp = sc21 != nullptr ? gpus / (sc21->tp * sc21->pp) : integer(record["dp"], 1);
      par.ep = std::max(1, integer(record["ep"], 1));
      // The Megatron-LM README's H100 runs overlap "pipeline-parallel communication (enabled by default)", which
      // Megatron-Core r0.8.0 does only in the interleaved schedule (megatron/training/arguments.py: without
      // --num-layers-per-virtual-pipeline-stage it sets overlap_p2p_comm False, "non-interleaved schedule does not
      // support overlapping p2p communication"). The table gives no virtual stage count. Two of its rows can only
      // interleave one layer per virtual stage (GPT-119B: 92 layers over pp 4, 23 per stage; GPT-462B: 112 over
      // pp 16, 7 per stage; both prime, and Megatron needs the layers per virtual stage to divide those per stage),
      // and Megatron-LM's own interleaved functional tests run one layer per virtual stage (megatron_lm group): every
      // README row with pp > 1 is taken so.
      int vp = integer(record["vp"], 1);
      if (sc21 != nullptr) vp = sc21->virtual_stages();
      if (readme && sc21 == nullptr && par.pp > 1 && vp == 1 && run.model.layers % par.pp == 0) {
        vp = run.model.layers / par.pp;
        c.notes += "; interleaved, one layer per virtual stage (the README's overlapped pipeline communication)";
      }
      if (vp > 1) {
        par.pp_schedule = PipelineSchedule::interleaved;
        par.virtual_stages = vp;
      }
      par.sequence_parallel = par.tp > 1 && sc21 == nullptr;  // 2021's Megatron-LM had none (Korthikanti et al. 2022)
      // Layers that do not divide over the virtual stages: Megatron-Bridge's recipes count the embedding and the loss
      // as layers (llama31_405b, qwen3_235b_a22b: account_for_embedding/loss_in_pipeline_split); DeepSeek-V3's 61
      // layers take the recipe's own layout.
      const int virtual_count = par.pp * std::max(vp, 1);
      if (name == "deepseek-v3") {
        par.stage_layers = deepseek_v3_bridge_layout(virtual_count);
        if (par.stage_layers.empty()) {
          skip("Megatron-Bridge has no DeepSeek-V3 pipeline layout for pp x vp = " + std::to_string(virtual_count));
          continue;
        }
      } else if (run.model.layers % virtual_count != 0 && (run.model.layers + 2) % virtual_count == 0) {
        par.account_for_embedding_in_split = true;
        par.account_for_loss_in_split = true;
      }
      par.zero_stage = integer(record["fsdp"], 0) > 0 ? 3 : 1;
      par.etp = expert_tensor_parallel(record);
      TrainingSpec& train = run.training;
      train.global_batch = integer(record["global_batch"], 1);
      train.micro_batch = integer(record["micro_batch"], 1);
      train.seq_len = integer(record["seq_len"], 2048);
      train.precision = precision_name == "fp8" ? Precision::fp8 : Precision::bf16;
      if (train.precision == Precision::fp8) train.fp8_recipe = fp8_recipe_of(precision_printed);
      train.overlap.dp = true;
      // Transformer Engine's userbuffers TP overlap where the record's run used it: the Megatron-LM README's H100 runs
      // state --tp-comm-overlap; Megatron-Bridge's Llama 3 / 3.1 performance recipes turn it on whenever tp > 1
      // (scripts/performance/configs/llama3/llama3_llm_pretrain.py and llama3_llm_finetune.py, llama31/: a userbuffers
      // config per GPU, or CommOverlapConfig(tp_comm_overlap=tp > 1)). Its Qwen3 recipes do too except Qwen3-235B on
      // H100, the only Qwen3 record with tp > 1; the others' records run tp 1.
      train.overlap.tp =
          readme ? record["notes"] && record["notes"].as<std::string>().find("--tp-comm-overlap") != std::string::npos
                 : name.starts_with("llama3");
      train.cross_entropy_fusion = true;
      // LoRA rows: Megatron-Bridge's llama3_70b_lora_config_* (scripts/performance/configs/llama/
      // llama3_llm_finetune.py) call llama3_70b_peft_config(peft_scheme="lora"), LoRA() of dim 32
      // (src/megatron/bridge/peft/lora.py), and since 8b2f81eb0 (2026-02-10; v0.4.0 to v0.5.1, the releases of the
      // table's LoRA row) override its targets: `cfg.peft.target_modules = ["linear_qkv"]` ("only apply LoRA to QKV").
      if (task.find("LoRA") != std::string::npos) {
        train.lora.rank = 32;
        train.lora.proj = train.lora.fc1 = train.lora.fc2 = false;
      }
      // Megatron-Bridge's performance recipes reduce gradients in bf16 (cfg.ddp.grad_reduce_in_fp32 = False); the
      // Megatron-LM README runs use Megatron-LM's default for bf16, fp32 gradient buffers.
      train.grad_reduce_fp32 = readme;  // the SC'21 runs reduce fp16 gradients (below)
      // Megatron-Bridge's MoE recipes dispatch tokens with the flex dispatcher (DeepEP or HybridEP) on H100 and B200:
      // each recipe sets moe_flex_dispatcher_backend and calls apply_flex_dispatcher_backend, which keeps it on
      // Hopper and Blackwell (src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py, training/flex_dispatcher_backend.py).
      if (!readme) train.moe_dispatcher = MoeDispatcher::flex;
      // Except the runs whose release's performance config leaves the flex backend unset or asks for NCCL's
      // all-to-all (scripts/performance/configs/qwen3*/ at each tag; the container of a table and the Megatron-Bridge
      // release of its time: 25.09 v0.1.0rc4, 25.11 v0.2.0, 26.02 v0.3.0, 26.02.01 v0.3.1, 26.04 v0.4.x, 26.06 v0.5.x):
      //  * Qwen3-235B-A22B in every release: v0.1.0rc4's YAML and v0.2.0/v0.3.0's base configs set no flex backend
      //    on H100 or B200 (only on GB200/GB300), so Qwen3MoEModelProvider's moe_token_dispatcher_type "alltoall"
      //    stays; from v0.3.1 qwen3_235b_a22b_pretrain_config_h100/_b200 set moe_token_dispatcher_type = "alltoall".
      //  * Qwen3-30B-A3B in 25.09 and 25.11 (no backend set), and on B200 in 26.02 (v0.3.0's base config has none);
      //    from v0.3.0 on H100 (deepep) and v0.3.1 on B200 it runs the flex dispatcher.
      //  * GPT-OSS 120B in every release: no GPT-OSS workload base config for H100 or B200 sets
      //    moe_flex_dispatcher_backend (scripts/performance/configs/gpt_oss/, v0.2.0 to v0.5.1; only B300's V2 sets
      //    hybridep), so the model's "alltoall" stays (GPTOSSProvider in v0.2.0 and v0.3.0, gpt_oss_bridge.py from
      //    v0.3.1; the recipe's moe_flex_dispatcher_backend "deepep" is read only by a "flex" dispatcher), and from
      //    v0.4.0 set_workload_base_configs sets moe_token_dispatcher_type = "alltoall" outright when the base config
      //    names no backend (scripts/performance/utils/overrides.py).
      const std::vector<int> release = release_order(release_of(record));
      const bool before_26_02 = release < std::vector<int>{26, 2};
      const bool in_26_02 = release == std::vector<int>{26, 2};
      if (!readme && (name == "qwen3-235b-a22b" || name == "gpt-oss-120b" ||
                      (name == "qwen3-30b-a3b" && (before_26_02 || (in_26_02 && machine == "B200")))))
        train.moe_dispatcher = MoeDispatcher::alltoall;
      // The 25.09 table's "(tokendrop)" runs: that release's performance script (v0.1.0rc4,
      // scripts/performance/run_script.py) calls apply_moe_token_drop (src/megatron/bridge/training/utils/
      // moe_token_drop.py: capacity factor 1.0, each expert padded to its capacity), which needs the all-to-all
      // dispatcher ("Using token drop, disabling DeepEP").
      if (model.find("(tokendrop)") != std::string::npos) {
        train.moe_capacity_factor = 1.0;
        train.moe_pad_to_capacity = true;
        train.moe_dispatcher = MoeDispatcher::alltoall;
      }
      // The routers of the MoE rows, as Megatron-Bridge configures them (their kernels: workload_moe.cpp). The
      // performance configs fuse the router for Qwen3, DeepSeek-V3 and GPT-OSS in every release of the tables
      // (moe_router_fusion: true in scripts/performance/configs/{qwen3,deepseek}/*.yaml at v0.1.0rc4;
      // cfg.model.moe_router_fusion = True in configs/{qwen,qwen3,deepseek,gpt_oss}/*_llm_pretrain.py from v0.2.0 to
      // v0.5.1) but not for Nemotron 3 (configs/nemotronh/nemotron_3_llm_pretrain.py, v0.5.1). The model bridges set
      // the balancing: Qwen3 the auxiliary loss (qwen3_moe_bridge.py: "aux_loss", 1e-3), DeepSeek-V3 and Nemotron-H
      // the sequence-level one with an expert bias (deepseek_v3_bridge.py, nemotron_h_bridge.py: "seq_aux_loss",
      // moe_router_enable_expert_bias), GPT-OSS none (gpt_oss_bridge.py: "none").
      if (!readme && run.model.is_moe()) {
        train.moe_router_fusion = name != "nemotron-3-nano";
        if (name.starts_with("qwen3")) train.moe_aux_loss = MoeAuxLoss::aux_loss;
        if (name == "deepseek-v3" || name == "nemotron-3-nano") {
          train.moe_aux_loss = MoeAuxLoss::seq_aux_loss;
          train.moe_expert_bias = true;
        }
      }
      // Megatron-Core's host time per kernel launch on the node's CPU (the cluster file's, fitted on the host-bound
      // Megatron-LM functional tests: tests/experiments/megatron_host_test.cpp).
      train.host_launch_s = run.cluster.megatron_host_launch_s;
      train.attention = "cudnn";
      if (run.hardware.attention_implementations.count(train.attention) == 0) train.attention.clear();
      if (readme && sc21 == nullptr) {
        // The README's H100 runs state only their overlap flags and the model's sizes ("we vary hidden size, number of
        // attention heads, and number of layers"); the rest is Megatron-LM's default at the commit that published
        // them (NVIDIA/Megatron-LM@937571c, core_r0.8.0, megatron/training/arguments.py), as its GPT example of that
        // commit runs it (examples/gpt3/train_gpt3_175b_distributed.sh): linear biases (--disable-bias-linear not
        // given), 0.1 hidden and attention dropout, the unfused vocab-parallel cross entropy (--cross-entropy-loss-
        // fusion not given), the data loader's attention mask (--no-create-attention-mask-in-dataloader not given)
        // and the NaN checks of the loss and of each gradient bucket (--no-check-for-nan-in-loss-and-grad not
        // given): the settings the functional tests of the megatron_lm group model from their model_config.yaml.
        run.model.linear_bias = true;
        run.model.dropout = true;
        train.cross_entropy_fusion = false;
        train.attention_mask_in_dataloader = true;
        train.check_for_nan_in_grad = true;
      }
      if (sc21 != nullptr) {
        // Megatron-LM as the SC'21 artifact ran it (CONFIG.sh; the defaults of megatron/arguments.py in spring 2021,
        // e.g. NVIDIA/Megatron-LM@903f746c83): fp16 with fp16 gradients reduced as they are (no
        // --accumulate-allreduce-grads-in-fp32) and no distributed optimizer (it came in 2022); every layer
        // recomputed (--activations-checkpoint-method uniform, one layer per checkpoint); attention over materialised
        // scores with the fused scale-mask-softmax (--masked-softmax-fusion, on by default; flash attention came
        // later) and the 0.1 attention and hidden dropouts; linear biases (bias-GELU and bias-dropout-add fused);
        // the output layer tied to the word embedding; the unfused vocab-parallel cross entropy; torch DDP reducing
        // buckets during the backward, local DDP after it. Not modelled: the scatter/gather of pipeline messages
        // over the tensor-parallel ranks (each sends its full activation here; at most milliseconds per step).
        train.micro_batch = sc21->micro_batch;
        train.precision = Precision::fp16;
        train.recompute = RecomputePolicy::full;
        train.recompute_layers = 0;
        train.attention = std::string(kEagerAttention);
        train.masked_softmax_fusion = true;
        train.cross_entropy_fusion = false;
        train.grad_reduce_fp32 = false;
        train.overlap.dp = !sc21->local_ddp;
        par.zero_stage = 0;
        run.model.dropout = true;
        run.model.linear_bias = true;
        run.model.tied_embeddings = true;
        c.flops_count_recompute = true;
      }
      try {
        validate_run(run, where);
      } catch (const std::exception& error) {
        // The rule that rejects it, without the record's file position.
        std::string why = error.what();
        if (const auto key = why.find("key '"); key != std::string::npos) why = why.substr(key);
        if (const auto fix = why.find(". Fix:"); fix != std::string::npos) why.resize(fix);
        skip("chopsim rejects the run: " + why);
        continue;
      }
      // The tables do not state recomputation. Where Megatron-Bridge's performance config for the record's model and
      // GPU sets recompute_modules, and every release the tables cover sets the same (scripts/performance/configs/,
      // *workload_base_configs.py, v0.2.0 to v0.5.1), the run recomputes those modules: GPT-OSS 120B on H100 and B200
      // [layernorm, moe_act]; Nemotron 3 Nano on H100 in FP8 [moe, layernorm, core_attn, moe_act] (from v0.3.1, the
      // first with its config); DeepSeek-V3 on B200 [mla_up_proj] (its H100 config adds mlp; no H100 row is
      // predicted).
      RecomputeModules recipe_modules;
      if (name == "deepseek-v3" && machine == "B200") recipe_modules.mla_up_proj = true;
      // Its pp 8 x vp 2, ep 32 layout (the 26.04.01 row) is v0.4.2's DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2, which
      // recomputes [mla_up_proj, mlp].
      const bool deepseek_b200_ep32 = name == "deepseek-v3" && machine == "B200" && par.ep == 32 && vp == 2;
      if (deepseek_b200_ep32) recipe_modules.mlp = true;
      // The MoE rows whose performance config captures the router and the dispatcher's preprocessing in CUDA graphs
      // (cuda_graph_impl "transformer_engine", cuda_graph_scope with moe_router and moe_preprocess, in
      // scripts/performance/configs/{qwen3,qwen}/*workload_base_configs.py and deepseek/, nemotronh/ at each tag):
      // Qwen3-30B-A3B on B200 from v0.2.0 (25.11) to v0.4.x (26.04.01), every precision inheriting the BF16 preset;
      // DeepSeek-V3's B200 FP8_MX_V2 (the pp 8 x vp 2, ep 32 layout) and Nemotron 3 Nano on B200 (v0.4.x). Their
      // attention (and Nemotron's Mamba) graphs are not modelled. The 25.09 YAML's cuda_graphs: true (v0.1.0rc4)
      // names no scope and is left out.
      if (!readme && machine == "B200" && release >= std::vector<int>{25, 11} &&
          (name == "qwen3-30b-a3b" || deepseek_b200_ep32 || name == "nemotron-3-nano"))
        train.cuda_graph_scope.moe_router = train.cuda_graph_scope.moe_preprocess = true;
      if (name == "gpt-oss-120b" && (machine == "H100" || machine == "B200"))
        recipe_modules.layernorm = recipe_modules.moe_act = true;
      if (name == "nemotron-3-nano" && machine == "H100" && train.precision == Precision::fp8)
        recipe_modules.moe = recipe_modules.layernorm = recipe_modules.core_attn = recipe_modules.moe_act = true;
      if (recipe_modules.any()) {
        train.recompute = RecomputePolicy::selective;
        train.recompute_modules = recipe_modules;
        c.notes += "; recomputes the recipe's modules (" + join(recompute_module_names(recipe_modules)) + ")";
      }
      // A measured run fitted its GPUs, so a run that does not fit with that recomputed the least it needed:
      // Megatron's block recomputation of the first k layers of each model chunk (--recompute-granularity full
      // --recompute-method block --recompute-num-layers k), the smallest k that fits.
      if (!estimate_peak_memory(run.model, par, train, run.hardware).fits()) {
        if (recipe_modules.any()) c.notes += ", which does not fit";
        train.recompute_modules = {};
        const std::vector<int> chunks = par.virtual_stage_layers(run.model.layers);
        const int most = chunks.empty() ? run.model.layers : *std::max_element(chunks.begin(), chunks.end());
        train.recompute = RecomputePolicy::full;
        bool fits = false;
        for (int k = 1; k <= most && !fits; ++k) {
          train.recompute_layers = k;
          fits = estimate_peak_memory(run.model, par, train, run.hardware).fits();
          if (fits)
            c.notes += "; recomputes the first " + std::to_string(k) + " of each chunk's layers (the least that fits)";
        }
        if (!fits) {
          train.recompute = RecomputePolicy::none;  // nothing fits: reported as out of memory
          train.recompute_layers = 0;
        }
      }
      // Megatron-Core's batch-level EP overlap (combined 1F1B, overlap.ep_1f1b) where the release's performance
      // config sets moe_a2a_overlap=True for the record's layout: Qwen3-235B-A22B on H100 (tp 2, pp 8 x vp 4, ep 32)
      // from v0.2.0 to v0.5.1 and in perf_recipes/qwen/h100/qwen3_moe.py; Qwen3-30B-A3B on H100 with pp 2 x vp 12
      // (v0.2.0 and v0.3.0; v0.3.1's ep 16 layout sets False); Qwen3-235B-A22B on B200 in v0.2.0 (from v0.3.0 its
      // B200 configs set False); DeepSeek-V3 on B200 in its pp 8 x vp 2, ep 32 layout (v0.4.2's
      // DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2, with DeepEP; its CUDA graphs of the attention, router and MoE
      // preprocessing are not modelled). v0.1.0rc4 (25.09) sets it nowhere. Megatron-Core needs the interleaved
      // schedule and no full recomputation for it.
      const bool from_25_11 = !(release < std::vector<int>{25, 11});
      const bool a2a_overlap =
          !readme && from_25_11 &&
          ((name == "qwen3-235b-a22b" && (machine == "H100" || release == std::vector<int>{25, 11})) ||
           (name == "qwen3-30b-a3b" && machine == "H100" && par.pp == 2) || deepseek_b200_ep32);
      if (a2a_overlap && par.pp_schedule == PipelineSchedule::interleaved && train.recompute != RecomputePolicy::full) {
        train.overlap.ep_1f1b = true;
        c.notes += "; expert all-to-alls overlapped batch-wise (combined 1F1B, moe_a2a_overlap)";
      }
      // A record that prints no micro-batch (the README's H100 rows) is a tuned run of a throughput table: it is
      // predicted with each power-of-two micro-batch that divides the data-parallel replica's share of the batch, keeps
      // the schedule valid and fits as the run above does, and the fastest counts (validation.cpp), as a tuner would
      // have chosen. With 1 alone, the fp32 gradient reduce-scatter of GPT-32B (tp 8, dp 48: 16 GB per GPU through
      // one 400 Gb/s NIC, >= 0.31 s) could only hide behind the last of four micro-batches' backward (~0.13 s), while
      // the measured step (0.89 s at 459.6 TFLOP/s) leaves < 0.1 s beside the compute.
      // (The A100 rows print none either, but the SC'21 artifact gives theirs.)
      if ((!record["micro_batch"] || record["micro_batch"].IsNull()) && sc21 == nullptr) {
        const int per_replica = train.global_batch / std::max(par.dp, 1);
        c.micro_batch_choices = {train.micro_batch};
        for (int m = 2 * train.micro_batch; m <= per_replica; m *= 2) {
          if (per_replica % m != 0) continue;
          RunSpec candidate = run;
          candidate.training.micro_batch = m;
          try {
            validate_run(candidate, where);
          } catch (const std::exception&) {
            continue;  // e.g. the interleaved schedule's micro-batch count must divide by pp
          }
          if (estimate_peak_memory(candidate.model, par, candidate.training, run.hardware).fits())
            c.micro_batch_choices.push_back(m);
        }
        if (c.micro_batch_choices.size() == 1) c.micro_batch_choices.clear();
      }
      cases.push_back(std::move(c));
    } catch (const YAML::Exception& error) {
      throw InputError(where, "", "malformed record: " + error.msg, "restore the file from ../shared/data");
    }
  }
}

}  // namespace chopsim::validation_detail
