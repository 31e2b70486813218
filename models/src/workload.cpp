#include "chopsim/models/workload.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "workload_plan.hpp"
#include "workload_program.hpp"
#include "workload_stage.hpp"

namespace chopsim {

std::string_view to_string(OpKind kind) {
  switch (kind) {
    case OpKind::compute:
      return "compute";
    case OpKind::collective:
      return "collective";
    case OpKind::send:
      return "send";
    case OpKind::recv:
      return "recv";
    case OpKind::delay:
      return "delay";
  }
  return "unknown";
}

std::string_view to_string(CommCategory category) {
  switch (category) {
    case CommCategory::none:
      return "none";
    case CommCategory::tp:
      return "tp";
    case CommCategory::cp:
      return "cp";
    case CommCategory::dp:
      return "dp";
    case CommCategory::fsdp:
      return "fsdp";
    case CommCategory::pp:
      return "pp";
    case CommCategory::ep:
      return "ep";
  }
  return "unknown";
}

std::string_view to_string(Pass pass) {
  switch (pass) {
    case Pass::forward:
      return "forward";
    case Pass::backward:
      return "backward";
    case Pass::recompute:
      return "recompute";
    case Pass::optimizer:
      return "optimizer";
    case Pass::other:
      return "other";
  }
  return "unknown";
}

std::size_t Program::op_count() const {
  std::size_t count = 0;
  for (const Stream& stream : streams) count += stream.ops.size();
  return count;
}

double Workload::executed_flops_per_iteration() const {
  std::vector<double> ranks_per_program(programs.size(), 0.0);
  for (const std::uint32_t program : program_of_rank) ranks_per_program.at(program) += 1.0;
  double total = 0.0;
  for (std::size_t p = 0; p < programs.size(); ++p) {
    double program_flops = 0.0;
    for (const Stream& stream : programs[p].streams)
      for (const Op& op : stream.ops)
        if (op.kind == OpKind::compute) program_flops += op.flops;
    total += program_flops * ranks_per_program[p];
  }
  return total;
}

KernelFacts kernel_facts_for(const HardwareSpec& hardware, const TrainingSpec& training) {
  KernelFacts facts;
  if (training.attention != kEagerAttention)
    facts.deterministic_workspace_bytes_per_score =
        compute_params_for(hardware, training.attention).deterministic_attention.workspace_bytes_per_score;
  return facts;
}

double lora_layer_parameters(const TransformerSpec& model, const LoraSpec& lora) {
  if (!lora.enabled()) return 0.0;
  const double h = model.hidden;
  const double d = model.head_dim();
  const double qkv_width = (model.heads + 2.0 * model.kv_heads) * d;
  const double attention_width = model.heads * static_cast<double>(model.v_dim());
  const double fc1_width = (model.mlp == MlpKind::swiglu ? 2.0 : 1.0) * model.ffn_hidden;
  double features = 0.0;  // in + out of every targeted linear
  if (lora.qkv) features += h + qkv_width;
  if (lora.proj) features += attention_width + h;
  if (lora.fc1) features += h + fc1_width;
  if (lora.fc2) features += model.ffn_hidden + h;
  return lora.rank * features;
}

double training_flops_per_token(const TransformerSpec& model, const TrainingSpec& training) {
  const double full = model_training_flops_per_token(model, training.seq_len);
  if (!training.lora.enabled()) return full;
  // Full training counts 6 x the active matrices; frozen ones skip their weight gradient (2 of the 6).
  const double frozen_weight_gradients = 2.0 * count_parameters(model).active_matmul;
  return full - frozen_weight_gradients + 6.0 * model.layers * lora_layer_parameters(model, training.lora);
}

Workload build_workload(const TransformerSpec& model, const ParallelismSpec& parallelism, const TrainingSpec& training,
                        const KernelFacts& kernels) {
  detail::validate_training_setup(model, parallelism, training);
  Workload workload;
  workload.layout = RankLayout(parallelism);
  detail::NameTable names(workload.names);
  workload.programs.reserve(static_cast<std::size_t>(parallelism.pp));
  for (int stage = 0; stage < parallelism.pp; ++stage) {
    detail::StageGenerator generator(model, parallelism, training, kernels, workload.layout, names, stage);
    workload.programs.push_back(generator.generate());
  }
  const int world = workload.layout.world_size();
  workload.program_of_rank.resize(static_cast<std::size_t>(world));
  for (int rank = 0; rank < world; ++rank)
    workload.program_of_rank[static_cast<std::size_t>(rank)] =
        static_cast<std::uint32_t>(workload.layout.coordinates(rank).pp);
  if (model.is_moe() && training.moe_dispatcher == MoeDispatcher::flex)
    workload.token_routing = TokenRouting{.experts = model.experts, .top_k = model.top_k};
  workload.tokens_per_iteration = training.tokens_per_iteration();
  workload.model_flops_per_iteration = training_flops_per_token(model, training) * workload.tokens_per_iteration;
  return workload;
}

std::string issue_order_problem(const Program& program) {
  if (program.issue_order.empty()) return "";
  std::vector<std::vector<std::uint32_t>> position(program.streams.size());
  for (std::size_t s = 0; s < program.streams.size(); ++s)
    position[s].assign(program.streams[s].ops.size(), UINT32_MAX);
  for (std::size_t i = 0; i < program.issue_order.size(); ++i) {
    const IssueStep& step = program.issue_order[i];
    if (step.stream >= program.streams.size() || step.op >= program.streams[step.stream].ops.size())
      return "issue step " + std::to_string(i) + " names stream " + std::to_string(step.stream) + " op " +
             std::to_string(step.op) + ", which does not exist";
    if (position[step.stream][step.op] != UINT32_MAX)
      return "op " + std::to_string(step.op) + " of stream " + program.streams[step.stream].name + " is issued twice";
    position[step.stream][step.op] = static_cast<std::uint32_t>(i);
  }
  if (program.issue_order.size() != program.op_count())
    return "the host issues " + std::to_string(program.issue_order.size()) + " of " +
           std::to_string(program.op_count()) + " ops";
  for (std::size_t s = 0; s < program.streams.size(); ++s) {
    const auto& ops = program.streams[s].ops;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (k > 0 && position[s][k] < position[s][k - 1])
        return "stream " + program.streams[s].name + " is issued out of its order at op " + std::to_string(k);
      for (std::uint32_t d = 0; d < ops[k].dependency_count; ++d) {
        const std::size_t index = static_cast<std::size_t>(ops[k].first_dependency) + d;
        if (index >= program.dependencies.size()) break;  // reported by whoever reads the dependencies
        const OpDependency& dep = program.dependencies[index];
        if (dep.stream >= program.streams.size() || dep.op >= program.streams[dep.stream].ops.size()) continue;
        if (position[dep.stream][dep.op] > position[s][k])
          return "op " + std::to_string(k) + " of stream " + program.streams[s].name + " is issued before op " +
                 std::to_string(dep.op) + " of stream " + program.streams[dep.stream].name + " that it waits for";
      }
    }
  }
  return "";
}

}  // namespace chopsim
