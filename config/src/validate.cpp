// Cross-field rules of a run: whether the parallel layout, the batch and the model fit together.
// Each message names the keys involved, shows the numbers and says what to change; it is placed at the
// key most likely to be changed (the run's parallelism or training key).

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "chopsim/common/json_writer.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/detail/decode.hpp"

namespace chopsim {

namespace config_detail {

namespace {

std::string str(long long value) { return std::to_string(value); }

/// Divisors of n (ascending), at most `limit` of them, for "use one of ..." hints.
std::string divisors_text(int n, std::size_t limit = 12) {
  std::vector<std::string> out;
  for (int d = 1; d <= n && out.size() < limit; ++d)
    if (n % d == 0) out.push_back(str(d));
  return join(out);
}

class Rules {
 public:
  explicit Rules(const Locator& locate) : locate_(locate) {}
  [[noreturn]] void fail(const std::string& key, const std::string& problem, const std::string& fix) const {
    throw InputError(locate_(key), key, problem, fix);
  }

 private:
  const Locator& locate_;
};

}  // namespace

void validate_run_at(const RunSpec& run, const Locator& locate) {
  const Rules rules(locate);
  const auto& par = run.parallelism;
  const auto& train = run.training;
  const auto& model = run.model;
  const auto& cluster = run.cluster;

  // Counts must be positive (decoded configs are; runs built in code may not be).
  const std::vector<std::pair<std::string, int>> positive = {
      {"parallelism.dp", par.dp},
      {"parallelism.tp", par.tp},
      {"parallelism.pp", par.pp},
      {"parallelism.cp", par.cp},
      {"parallelism.ep", par.ep},
      {"parallelism.virtual_stages", par.virtual_stages},
      {"training.global_batch", train.global_batch},
      {"training.micro_batch", train.micro_batch},
      {"training.seq_len", train.seq_len},
      {"cluster.nodes", cluster.nodes},
      {"cluster.gpus_per_node", cluster.gpus_per_node},
      {"model.layers", model.layers},
      {"model.hidden", model.hidden},
      {"model.heads", model.heads},
      {"model.kv_heads", model.kv_heads},
      {"model.experts", model.experts},
      {"model.top_k", model.top_k},
      {"iterations", run.iterations},
  };
  for (const auto& [key, value] : positive)
    if (value < 1) rules.fail(key, "must be a positive integer, found " + str(value), "set " + key + " >= 1");
  if (par.zero_stage < 0 || par.zero_stage > 3)
    rules.fail("parallelism.zero_stage", "must be 0, 1, 2 or 3, found " + str(par.zero_stage),
               "use 0 (plain DP), 1 (optimizer states sharded), 2 (+ gradients) or 3 (+ weights, FSDP full shard)");
  if (par.shard_group_size < 0)
    rules.fail("parallelism.shard_group_size", "must be >= 0, found " + str(par.shard_group_size),
               "use 0 to shard over the whole data group");

  // The layout must use every GPU exactly once.
  const long long gpus = static_cast<long long>(cluster.nodes) * cluster.gpus_per_node;
  // Beyond any cluster built (the largest are ~10^5 GPUs), and past what ranks index in traces and outputs: a run
  // of 10^9 GPUs used to allocate until killed.
  constexpr long long kLargestCluster = 1 << 20;
  if (gpus > kLargestCluster)
    rules.fail("cluster.nodes",
               "the cluster has " + str(gpus) + " GPUs (cluster.nodes " + str(cluster.nodes) +
                   " x cluster.gpus_per_node " + str(cluster.gpus_per_node) + "), more than chopsim simulates (" +
                   str(kLargestCluster) + ")",
               "use at most " + str(kLargestCluster / std::max(cluster.gpus_per_node, 1)) + " nodes");
  const long long product = static_cast<long long>(par.tp) * par.pp * par.dp * par.cp;
  if (product != gpus) {
    const long long model_parallel = static_cast<long long>(par.tp) * par.pp * par.cp;
    const std::string fix = gpus % model_parallel == 0
                                ? "set parallelism.dp: " + str(gpus / model_parallel) + " (= " + str(gpus) +
                                      " GPUs / (tp*pp*cp = " + str(model_parallel) + ")), or change cluster.nodes"
                                : "no dp fits: " + str(gpus) +
                                      " GPUs is not a multiple of tp*pp*cp = " + str(model_parallel) +
                                      "; change tp, pp or cp, or cluster.nodes";
    rules.fail("parallelism.dp",
               "tp*pp*dp*cp = " + str(par.tp) + "*" + str(par.pp) + "*" + str(par.dp) + "*" + str(par.cp) + " = " +
                   str(product) + " does not match the cluster's " + str(gpus) + " GPUs (cluster.nodes " +
                   str(cluster.nodes) + " x cluster.gpus_per_node " + str(cluster.gpus_per_node) + ")",
               fix);
  }
  if (cluster.fabric.kind == "none" && cluster.nodes != 1)
    rules.fail("cluster.nodes",
               "cluster.fabric.kind 'none' connects no nodes, but cluster.nodes is " + str(cluster.nodes),
               "set cluster.nodes: 1, or use a fabric (rail_optimized, fat_tree)");
  if (cluster.gpus_per_node % run.hardware.dies_per_package != 0)
    rules.fail("cluster.gpus_per_node",
               "gpus_per_node (" + str(cluster.gpus_per_node) +
                   ") is not a multiple of the hardware's dies per "
                   "package (" +
                   str(run.hardware.dies_per_package) + "): a package's dies sit in one node",
               "use a gpus_per_node that is a multiple of " + str(run.hardware.dies_per_package));

  // Tensor parallelism splits heads (and KV heads) across ranks.
  const int kv_tp = std::gcd(model.heads, model.kv_heads);
  if (model.heads % par.tp != 0)
    rules.fail("parallelism.tp",
               "model.heads (" + str(model.heads) + ") is not divisible by parallelism.tp (" + str(par.tp) + ")",
               "use a tp that divides both heads and kv_heads: " + divisors_text(kv_tp));
  if (model.kv_heads % par.tp != 0)
    rules.fail("parallelism.tp",
               "model.kv_heads (" + str(model.kv_heads) + ") is not divisible by parallelism.tp (" + str(par.tp) +
                   "); each TP rank needs whole KV heads",
               "use a tp that divides kv_heads: " + divisors_text(model.kv_heads));
  // Megatron-Core's MambaMixer splits the Mamba heads and the B/C groups over tp.
  const bool mamba_layers = model.is_hybrid() && model.hybrid_pattern.find('M') != std::string::npos;
  if (mamba_layers && (model.mamba_heads % par.tp != 0 || model.mamba_groups % par.tp != 0))
    rules.fail("parallelism.tp",
               "the Mamba-2 heads (" + str(model.mamba_heads) + ") and groups (" + str(model.mamba_groups) +
                   ") are split over tp, but tp is " + str(par.tp),
               "use a tp that divides both: " + divisors_text(std::gcd(model.mamba_heads, model.mamba_groups)));
  if (mamba_layers && par.cp > 1)
    rules.fail("parallelism.cp",
               "context parallelism is not modelled for Mamba-2 layers (its scan carries state across the sequence)",
               "set cp: 1");
  if (par.sequence_parallel && par.tp == 1)
    rules.fail("parallelism.sequence_parallel", "sequence_parallel splits activations across the TP group, but tp is 1",
               "set sequence_parallel: false, or tp > 1");
  if (par.sequence_parallel && train.seq_len % par.tp != 0)
    rules.fail("training.seq_len",
               "with sequence_parallel, training.seq_len (" + str(train.seq_len) +
                   ") must be divisible by parallelism.tp (" + str(par.tp) + ")",
               "use a seq_len that is a multiple of " + str(par.tp));

  // Pipeline: each stage (and virtual stage) holds whole layers.
  const long long chunks = static_cast<long long>(par.pp) * par.virtual_stages;
  if (!par.stage_layers.empty()) {
    // One entry per virtual stage, in Megatron's order: every stage's first chunk, then every stage's second, ...
    // (an interleaved pipeline_model_parallel_layout; with 1f1b simply one per stage).
    const int chunks_of_split = par.pp_schedule == PipelineSchedule::interleaved ? par.virtual_stages : 1;
    const int entries = par.pp * chunks_of_split;
    if (static_cast<int>(par.stage_layers.size()) != entries)
      rules.fail("parallelism.stage_layers",
                 "has " + str(static_cast<int>(par.stage_layers.size())) + " entries, but pp" +
                     (chunks_of_split > 1
                          ? " x virtual_stages is " + str(par.pp) + " x " + str(chunks_of_split) + " = " + str(entries)
                          : " is " + str(par.pp)),
                 chunks_of_split > 1 ? "give one layer count per virtual stage (" + str(entries) +
                                           " entries: stage 0's first chunk, stage 1's first chunk, ..., then every "
                                           "stage's second chunk, as Megatron's pipeline layout orders them)"
                                     : "give one layer count per pipeline stage (" + str(par.pp) + " entries)");
    long long sum = 0;
    for (const int layers : par.stage_layers) sum += layers;
    if (sum != model.layers)
      rules.fail("parallelism.stage_layers",
                 "the stages hold " + str(static_cast<int>(sum)) + " layers, but model.layers is " + str(model.layers),
                 "make the entries sum to " + str(model.layers));
    if (par.account_for_embedding_in_split || par.account_for_loss_in_split)
      rules.fail("parallelism.stage_layers",
                 "stage_layers gives every stage's layers; account_for_embedding_in_split and "
                 "account_for_loss_in_split would change them",
                 "remove one or the other");
  } else {
    const int extra = (par.account_for_embedding_in_split ? 1 : 0) + (par.account_for_loss_in_split ? 1 : 0);
    const long long slots = model.layers + extra;
    if (slots % chunks != 0) {
      const std::string counted = extra == 0 ? "model.layers (" + str(model.layers) + ")"
                                             : "model.layers + " + str(extra) + " (" + str(model.layers) +
                                                   " layers, the embedding and loss "
                                                   "counted as layers)";
      const bool megatron_split = extra == 0 && (model.layers + 2) % chunks == 0 && (model.layers + 2) / chunks >= 2;
      rules.fail("parallelism.pp",
                 counted + " is not divisible by parallelism.pp x virtual_stages (" + str(par.pp) + " x " +
                     str(par.virtual_stages) + " = " + str(chunks) + ")",
                 megatron_split ? "count the embedding and the loss as layers, as Megatron's "
                                  "--account-for-embedding-in-pipeline-split and "
                                  "--account-for-loss-in-pipeline-split do: set "
                                  "parallelism.account_for_embedding_in_split and account_for_loss_in_split: true"
                                : "use pp x virtual_stages among the divisors of " + str(model.layers) + ": " +
                                      divisors_text(model.layers));
    } else if (slots / chunks <
               1 + std::max(par.account_for_embedding_in_split ? 1 : 0, par.account_for_loss_in_split ? 1 : 0)) {
      rules.fail("parallelism.pp",
                 "with the embedding or the loss counted as a layer, a virtual stage would hold no transformer layer",
                 "use fewer pipeline stages or virtual stages");
    }
  }
  if (par.pp_schedule == PipelineSchedule::one_f_one_b && par.virtual_stages != 1)
    rules.fail("parallelism.virtual_stages",
               "pp_schedule 1f1b runs one model chunk per stage, but virtual_stages is " + str(par.virtual_stages),
               "set pp_schedule: interleaved, or virtual_stages: 1");
  if (par.pp_schedule == PipelineSchedule::interleaved) {
    if (par.pp < 2)
      rules.fail("parallelism.pp_schedule", "the interleaved schedule needs a pipeline, but pp is " + str(par.pp),
                 "set pp >= 2, or pp_schedule: 1f1b");
    if (par.virtual_stages < 2)
      rules.fail("parallelism.virtual_stages",
                 "pp_schedule interleaved needs virtual_stages > 1 (model chunks per pipeline rank), found " +
                     str(par.virtual_stages),
                 "set virtual_stages >= 2 (layers / (pp * virtual_stages) layers per chunk), or pp_schedule: 1f1b");
  }

  // Batch: every data-parallel rank gets whole micro-batches.
  const long long per_step = static_cast<long long>(par.dp) * train.micro_batch;
  if (train.global_batch < per_step)
    rules.fail("training.global_batch",
               "training.global_batch (" + str(train.global_batch) + ") is smaller than dp x micro_batch (" +
                   str(par.dp) + " x " + str(train.micro_batch) + " = " + str(per_step) +
                   "): each data-parallel rank needs at least one micro-batch",
               "raise global_batch to a multiple of " + str(per_step) + ", or lower micro_batch");
  if (train.global_batch % per_step != 0)
    rules.fail("training.global_batch",
               "training.global_batch (" + str(train.global_batch) + ") is not divisible by dp x micro_batch (" +
                   str(par.dp) + " x " + str(train.micro_batch) + " = " + str(per_step) + ")",
               "use a multiple of " + str(per_step) + ", e.g. " + str((train.global_batch / per_step) * per_step) +
                   " or " + str((train.global_batch / per_step + 1) * per_step));
  const long long micro_batches = train.global_batch / per_step;
  if (par.pp_schedule == PipelineSchedule::interleaved && micro_batches % par.pp != 0)
    rules.fail("training.global_batch",
               "the interleaved schedule needs the number of micro-batches (global_batch / (dp x micro_batch) = " +
                   str(micro_batches) + ") to be a multiple of pp (" + str(par.pp) + ") (Megatron-LM's rule)",
               "use a global_batch that is a multiple of dp x micro_batch x pp = " + str(per_step * par.pp));

  // Context parallelism splits the sequence.
  if (train.seq_len % par.cp != 0)
    rules.fail("parallelism.cp",
               "training.seq_len (" + str(train.seq_len) + ") is not divisible by parallelism.cp (" + str(par.cp) + ")",
               "use a cp that divides seq_len");

  // Expert parallelism is carved out of the data group (dp x cp), as in Megatron-Core.
  if (par.ep > 1 && !model.is_moe())
    rules.fail("parallelism.ep",
               "parallelism.ep is " + str(par.ep) + " but model '" + model.name + "' has no experts (experts: 1)",
               "set ep: 1, or use a mixture-of-experts model");
  if (model.experts % par.ep != 0)
    rules.fail("parallelism.ep",
               "model.experts (" + str(model.experts) + ") is not divisible by parallelism.ep (" + str(par.ep) + ")",
               "use an ep that divides the expert count: " + divisors_text(model.experts));
  const long long data = static_cast<long long>(par.dp) * par.cp;
  if (par.etp < 0)
    rules.fail("parallelism.etp", "must be >= 1 (or 0 for tp), found " + str(par.etp),
               "remove it (the experts are then split like the dense layers, over tp) or use 1");
  const int etp = par.expert_tp();
  if (par.etp > 0 && !model.is_moe() && par.etp != par.tp)
    rules.fail("parallelism.etp", "parallelism.etp is set but model '" + model.name + "' has no experts",
               "remove etp, or use a mixture-of-experts model");
  if (etp == par.tp && data % par.ep != 0)
    rules.fail("parallelism.ep",
               "dp x cp (" + str(par.dp) + " x " + str(par.cp) + " = " + str(data) +
                   ") is not divisible by parallelism.ep (" + str(par.ep) +
                   "); with etp = tp (the default) expert-parallel groups are carved out of the data-parallel group",
               "use an ep that divides " + str(data) + ": " + divisors_text(static_cast<int>(data)) +
                   ", or set etp: 1 to let ep span the tensor-parallel ranks too (MoE parallel folding)");
  const long long stage = data * par.tp;
  if (etp != par.tp && etp > 0 && stage % (static_cast<long long>(etp) * par.ep) != 0)
    rules.fail("parallelism.etp",
               "etp x ep (" + str(etp) + " x " + str(par.ep) + ") does not divide tp x cp x dp (" + str(stage) +
                   "); the expert layers lay out the ranks of a pipeline stage as etp x ep x expert-data",
               "use etp and ep whose product divides " + str(stage));
  if (etp != par.tp && par.tp > 1 && !par.sequence_parallel)
    rules.fail("parallelism.etp",
               "etp (" + str(etp) + ") differs from tp (" + str(par.tp) +
                   ") without sequence parallelism; Megatron-Core runs MoE with tp > 1 only with it",
               "set parallelism.sequence_parallel: true, or remove etp");
  if (model.is_moe() && etp > 0 && model.ffn_hidden % etp != 0)
    rules.fail("parallelism.etp",
               "the experts' ffn_hidden (" + str(model.ffn_hidden) + ") is not divisible by etp (" + str(etp) + ")",
               "use an etp that divides " + str(model.ffn_hidden));

  // Megatron-Core's batch-level EP overlap (TransformerConfig's checks for overlap_moe_expert_parallel_comm).
  if (train.overlap.ep_1f1b) {
    const std::string key = "training.overlap.ep_1f1b";
    if (par.ep < 2)
      rules.fail(key, "the batch-level expert-parallel overlap needs expert parallelism, but ep is " + str(par.ep),
                 "set parallelism.ep > 1, or remove ep_1f1b");
    if (par.pp_schedule != PipelineSchedule::interleaved)
      rules.fail(key,
                 "the batch-level expert-parallel overlap merges the steady-state passes of the interleaved pipeline "
                 "schedule (Megatron-Core requires virtual stages with pp > 1; chopsim does not model its merged "
                 "step without pipelining)",
                 "set parallelism.pp > 1, pp_schedule: interleaved and virtual_stages > 1, or remove ep_1f1b");
    if (train.recompute == RecomputePolicy::full)
      rules.fail(key, "Megatron-Core does not allow full recomputation with the batch-level expert-parallel overlap",
                 "set training.recompute to none or selective, or remove ep_1f1b");
    if (par.zero_stage == 3)
      rules.fail(key,
                 "the batch-level expert-parallel overlap is modelled with Megatron's DDP or distributed optimizer",
                 "set parallelism.zero_stage 0-2, or remove ep_1f1b");
  }

  // Sharding.
  if (par.shard_group_size > 0) {
    if (par.zero_stage == 0)
      rules.fail("parallelism.shard_group_size",
                 "shard_group_size (" + str(par.shard_group_size) + ") is set but zero_stage is 0 (nothing is sharded)",
                 "set zero_stage (or fsdp: hybrid_shard), or remove shard_group_size");
    if (data % par.shard_group_size != 0)
      rules.fail("parallelism.shard_group_size",
                 "shard_group_size (" + str(par.shard_group_size) + ") does not divide dp x cp (" + str(par.dp) +
                     " x " + str(par.cp) + " = " + str(data) + ")",
                 "use a divisor of " + str(data) + ": " + divisors_text(static_cast<int>(data)));
  }

  // Training.
  if (train.fsdp_prefetch < 0)
    rules.fail("training.fsdp_prefetch", "must be >= 0, found " + str(train.fsdp_prefetch), "use 0, 1 or 2");
  if (!(train.dp_bucket_bytes > 0.0))
    rules.fail("training.dp_bucket_mb", "the gradient bucket size must be > 0", "use e.g. 25 (MiB)");
  if (train.moe_capacity_factor && !(*train.moe_capacity_factor > 0.0))
    rules.fail("training.moe_capacity_factor", "must be > 0", "use e.g. 1.0, or remove it for dropless routing");
  if (train.moe_load_imbalance != 1.0) {
    const double most = TrainingSpec::largest_moe_load_imbalance(model.experts, model.top_k, par.ep);
    if (!model.is_moe() || par.ep < 2)
      rules.fail("training.moe_load_imbalance",
                 "the load imbalance between expert-parallel ranks needs a mixture of experts split over ep > 1 (" +
                     std::string(model.is_moe() ? "ep is " + str(par.ep) : "model '" + model.name + "' has none") + ")",
                 "remove moe_load_imbalance, or set parallelism.ep > 1");
    else if (train.moe_load_imbalance > most)
      rules.fail("training.moe_load_imbalance",
                 "the busiest of " + str(par.ep) + " expert-parallel ranks takes at most " +
                     JsonWriter::format_number(most) + " times the mean (min(ep, experts / top_k) = min(" +
                     str(par.ep) + ", " + str(model.experts) + " / " + str(model.top_k) + ")), found " +
                     JsonWriter::format_number(train.moe_load_imbalance),
                 "use the measured max / mean of the tokens per expert-parallel rank, between 1 and " +
                     JsonWriter::format_number(most));
    else if (train.moe_capacity_factor && train.moe_pad_to_capacity)
      rules.fail("training.moe_load_imbalance",
                 "with moe_capacity_factor and moe_pad_to_capacity every expert takes its capacity (tokens above it "
                 "dropped, slots below it padded), whatever the imbalance",
                 "remove moe_load_imbalance; or set moe_pad_to_capacity: false (an expert takes what is routed to it "
                 "up to its capacity), or remove moe_capacity_factor for dropless routing");
  }
  if (train.unpad_attention && (par.cp > 1 || train.attention == kEagerAttention))
    rules.fail("training.unpad_attention",
               "unpad_attention is llm-foundry's flash-attn path around a fused attention kernel, without context "
               "parallelism, but the run has " +
                   (par.cp > 1 ? "cp " + str(par.cp) : std::string("eager attention")),
               par.cp > 1 ? "remove unpad_attention, or set parallelism.cp: 1"
                          : "remove unpad_attention, or use a fused attention (attention: flash2)");
  if (train.masked_softmax_fusion && train.attention != kEagerAttention)
    rules.fail("training.masked_softmax_fusion",
               "masked_softmax_fusion fuses the softmax of eager attention's materialised scores, but the run's "
               "attention is " +
                   (train.attention.empty() ? std::string("the hardware's fused kernel") : "'" + train.attention + "'"),
               "remove masked_softmax_fusion, or set training.attention: eager");
  if (train.cuda_graph_scope.moe_preprocess && !train.cuda_graph_scope.moe_router)
    rules.fail("training.cuda_graph_scope",
               "moe_preprocess captures the dispatcher's preprocessing with the router, but moe_router is not listed",
               "list moe_router too (Megatron-Core captures them together: [moe_router, moe_preprocess])");
  if (!model.is_moe()) {
    const char* key = train.moe_router_fusion                  ? "training.moe_router_fusion"
                      : train.moe_expert_bias                  ? "training.moe_expert_bias"
                      : train.moe_aux_loss != MoeAuxLoss::none ? "training.moe_aux_loss"
                      : train.cuda_graph_scope.moe_router      ? "training.cuda_graph_scope"
                                                               : nullptr;
    if (key != nullptr)
      rules.fail(key, "configures a mixture of experts' router, but model '" + model.name + "' has no experts",
                 "remove it, or use a model with experts");
  }
  if (!train.moe_pad_to_capacity && !train.moe_capacity_factor)
    rules.fail("training.moe_pad_to_capacity",
               "moe_pad_to_capacity: false is about padding to a capacity, but moe_capacity_factor is not set "
               "(dropless)",
               "remove moe_pad_to_capacity, or set moe_capacity_factor (Megatron's --moe-expert-capacity-factor)");
  if (!(train.host_launch_s < 0.01))
    rules.fail("training.host_launch_us",
               "must be below 10000 µs, found " + str(static_cast<long long>(std::lround(train.host_launch_s * 1e6))),
               "use the host time per kernel launch, e.g. 20 (µs; 0 = never host-bound)");
  const double peak = run.hardware.compute.peak_flops_per_s[static_cast<std::size_t>(train.precision)];
  if (!(peak > 0.0))
    rules.fail("training.precision",
               "hardware '" + run.hardware.name + "' has no " + std::string(to_string(train.precision)) +
                   " units (peak_tflops." + std::string(to_string(train.precision)) + " is 0)",
               "use a precision the GPU supports (bf16 everywhere)");
  if (train.recompute_modules.any() && train.recompute != RecomputePolicy::selective)
    rules.fail("training.recompute_modules",
               "recompute_modules lists what selective recomputation re-runs, but recompute is " +
                   std::string(train.recompute == RecomputePolicy::full ? "full" : "none"),
               "set recompute: selective (Megatron --recompute-granularity selective), or remove recompute_modules");
  if (train.recompute_early_stop && train.recompute != RecomputePolicy::full)
    rules.fail("training.recompute_early_stop",
               "recompute_early_stop says where a recomputed layer's forward stops, but recompute is " +
                   std::string(train.recompute == RecomputePolicy::selective ? "selective" : "none"),
               "set recompute: full (PyTorch's non-reentrant activation checkpointing of whole layers), or remove "
               "recompute_early_stop");
  if (train.recompute_modules.mla_up_proj && !run.model.is_mla())
    rules.fail("training.recompute_modules",
               "mla_up_proj recomputes multi-latent attention's up projections, but model '" + run.model.name +
                   "' has no latent attention (kv_lora_rank 0)",
               "remove mla_up_proj, or use a model with multi-latent attention (DeepSeek-V3)");
  if (train.recompute_modules.any() &&
      (train.attention == kEagerAttention || train.framework == Framework::pytorch_eager))
    rules.fail("training.recompute_modules",
               "recompute_modules is Megatron-Core's selective recomputation, modelled with a fused attention kernel",
               "remove recompute_modules (recompute: selective alone recomputes eager attention's internals)");
  if (train.framework == Framework::pytorch_eager) {
    if (par.tp > 1 || par.pp > 1 || par.cp > 1 || par.ep > 1)
      rules.fail("training.framework",
                 "pytorch-eager models Hugging Face modules without model parallelism, but the run has tp " +
                     str(par.tp) + ", pp " + str(par.pp) + ", cp " + str(par.cp) + ", ep " + str(par.ep),
                 "use data parallelism only (DDP: zero_stage 0, FSDP: zero_stage 3), or framework: megatron-te");
    if (run.model.is_moe())
      rules.fail("training.framework",
                 "pytorch-eager does not model mixture-of-experts layers (model '" + run.model.name + "' has " +
                     str(run.model.experts) + " experts)",
                 "use framework: megatron-te");
    if (run.model.is_hybrid())
      rules.fail("training.framework",
                 "pytorch-eager models Hugging Face's Llama-family modules, not a hybrid model's Mamba-2 layers",
                 "use framework: megatron-te");
    if (run.model.mtp_layers > 0)
      rules.fail("training.framework",
                 "pytorch-eager does not model multi-token prediction (model '" + run.model.name + "' has mtp_layers " +
                     str(run.model.mtp_layers) + ")",
                 "use framework: megatron-te, or a model file with mtp_layers: 0");
  }
  if (train.lora.enabled()) {
    // What chopsim models of Megatron-Bridge's LoRA (models/src/workload_lora.cpp).
    if (train.framework != Framework::megatron_te)
      rules.fail("training.lora", "LoRA is modelled as Megatron-Bridge runs it, on Megatron-Core's layers",
                 "use framework: megatron-te, or remove training.lora");
    if (run.model.is_mla() || run.model.is_hybrid() || run.model.mtp_layers > 0)
      rules.fail("training.lora",
                 "LoRA is modelled on transformer layers with standard attention; model '" + run.model.name +
                     "' has multi-latent attention, Mamba-2 layers or multi-token prediction",
                 "use another model, or remove training.lora");
    if (run.model.is_moe() && (train.lora.fc1 || train.lora.fc2))
      rules.fail("training.lora.targets",
                 "model '" + run.model.name +
                     "' is a mixture of experts: chopsim adapts its attention (qkv, proj) and keeps the experts "
                     "frozen; adapters on the experts' fc1/fc2 are not modelled",
                 "use targets: [qkv] or [qkv, proj]");
    if (par.zero_stage == 3)
      rules.fail("training.lora", "LoRA is modelled with Megatron's DDP or distributed optimizer (zero_stage 0-2)",
                 "use fsdp: none or zero_stage 1, or remove training.lora");
    if (train.lora.rank % par.tp != 0)
      rules.fail("training.lora.rank",
                 "must be a multiple of tp=" + str(par.tp) +
                     " (the adapter of a column-parallel linear splits its "
                     "rank over tp), found " +
                     str(train.lora.rank),
                 "use a rank that tp divides, e.g. " + str(par.tp * ((train.lora.rank + par.tp - 1) / par.tp)));
  }
  if (train.attention == kEagerAttention && par.cp > 1)
    rules.fail("training.attention",
               "eager attention is not modelled with context parallelism (cp " + str(par.cp) + ")",
               "use a fused attention implementation with cp, or cp: 1");
  if (!train.attention.empty() && train.attention != kEagerAttention &&
      run.hardware.attention_implementations.count(train.attention) == 0) {
    std::vector<std::string> names;
    for (const auto& [name, implementation] : run.hardware.attention_implementations) names.push_back(name);
    std::vector<std::string> candidates = names;
    candidates.emplace_back(kEagerAttention);
    const std::string suggestion = closest_match(train.attention, candidates);
    rules.fail("training.attention",
               "hardware '" + run.hardware.name + "' defines no attention implementation '" + train.attention +
                   "' (kernels.attention_implementations: " + (names.empty() ? std::string("none") : join(names)) + ")",
               suggestion.empty() ? "remove training.attention (the hardware's default attention efficiency), use "
                                    "'eager' (unfused PyTorch attention), or add the implementation to the hardware "
                                    "file with its source"
                                  : "did you mean '" + suggestion + "'?");
  }

  // Power.
  const auto& power = run.power;
  const auto& hw = run.hardware;
  auto mhz = [](double hz) { return std::to_string(static_cast<long long>(std::llround(hz / 1e6))); };
  if (power.lock_clock_hz > 0.0 &&
      (power.lock_clock_hz < hw.min_clock_hz || power.lock_clock_hz > hw.compute.boost_clock_hz))
    rules.fail("power.lock_clock_mhz",
               "the locked clock " + mhz(power.lock_clock_hz) + " MHz is outside the clock range of " + hw.name + " (" +
                   mhz(hw.min_clock_hz) + " to " + mhz(hw.compute.boost_clock_hz) + " MHz)",
               "lock a clock between hardware clocks_mhz.min and clocks_mhz.boost");
  if (power.cap_w > 0.0 && power.cap_w <= hw.idle_power_w)
    rules.fail("power.cap_w",
               "the power cap (" + std::to_string(power.cap_w) + " W) is not above the idle power of " + hw.name +
                   " (" + std::to_string(hw.idle_power_w) + " W): nothing could run",
               "set a cap above power_w.idle (typical caps: 50-100 % of the TDP, " + std::to_string(hw.tdp_w) + " W)");
  // A board's power limit is bounded by its hardware (nvidia-smi -pl and rocm-smi refuse limits above the board's
  // maximum, at most ~1.2x its TDP on the GPUs chopsim ships); ten times the TDP is beyond any board and would only
  // give meaningless power and temperatures (issue 16: a cap of 1e308 W gave 6.75e306 °C).
  if (power.cap_w > 10.0 * hw.tdp_w)
    rules.fail("power.cap_w",
               "the power cap (" + std::to_string(power.cap_w) + " W) is more than ten times the TDP of " + hw.name +
                   " (" + std::to_string(hw.tdp_w) + " W)",
               "set a cap up to the board's maximum power limit (typical caps: 50-100 % of the TDP), or remove cap_w");
  // The governor searches the clock in steps: a step below 0.1 MHz (no GPU has one; NVIDIA's are 15 MHz, AMD's 1
  // MHz) would make that search take millions of evaluations per decision.
  if (hw.governor.clock_step_hz < 1e5)
    rules.fail(
        "hardware.governor.clock_step_mhz",
        "the governor's clock step (" + std::to_string(hw.governor.clock_step_hz / 1e6) + " MHz) is below 0.1 MHz",
        "use the GPU's clock step (NVIDIA 15 MHz, AMD 1 MHz)");
  if (!(power.telemetry_interval_s > 0.0)) rules.fail("power.telemetry_interval_ms", "must be > 0", "use e.g. 1 (ms)");
  if (power.cooling && power.cooling->profile == CoolingSpec::Profile::per_slot) {
    const auto n = static_cast<int>(power.cooling->slot_offsets_k.size());
    const int packages = cluster.gpus_per_node / std::max(hw.dies_per_package, 1);
    if (n != cluster.gpus_per_node && n != packages)
      rules.fail("thermal.slot_offsets_k",
                 "profile per_slot needs one offset per GPU slot of a node (" + str(cluster.gpus_per_node) +
                     (packages != cluster.gpus_per_node ? " GPUs, or " + str(packages) + " packages" : "") +
                     "), found " + str(n),
                 "list " + str(cluster.gpus_per_node) + " offsets in K, e.g. [0, 0, 0, 0, 8, 8, 8, 8]");
  }
}

}  // namespace config_detail

void validate_run(const RunSpec& run, const SourceLocation& where) {
  config_detail::validate_run_at(run, config_detail::Locator(where));
}

}  // namespace chopsim
