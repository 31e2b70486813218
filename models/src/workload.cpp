#include "chopsim/models/workload.hpp"

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
  workload.tokens_per_iteration = training.tokens_per_iteration();
  workload.model_flops_per_iteration =
      model_training_flops_per_token(model, training.seq_len) * workload.tokens_per_iteration;
  return workload;
}

}  // namespace chopsim
