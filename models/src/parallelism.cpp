#include "chopsim/models/parallelism.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "chopsim/common/error.hpp"

namespace chopsim {

std::vector<int> ParallelismSpec::virtual_stage_layers(int layers) const {
  if (!stage_layers.empty()) return stage_layers;
  const int stages = std::max(pp, 1) * std::max(chunks(), 1);
  const int embedding = account_for_embedding_in_split ? 1 : 0;
  const int loss = account_for_loss_in_split ? 1 : 0;
  std::vector<int> counts(static_cast<std::size_t>(stages), (layers + embedding + loss) / stages);
  counts.front() -= embedding;
  counts.back() -= loss;
  return counts;
}

int ParallelismSpec::layers_of_stage(int layers, int stage) const {
  const std::vector<int> counts = virtual_stage_layers(layers);
  int sum = 0;
  for (std::size_t v = static_cast<std::size_t>(stage); v < counts.size(); v += static_cast<std::size_t>(pp))
    sum += counts[v];
  return sum;
}

std::string_view to_string(MoeDispatcher dispatcher) { return dispatcher == MoeDispatcher::flex ? "flex" : "alltoall"; }

namespace {
/// `value`'s name in a YAML name table; the table's first name for a value it lacks (every table lists every value).
template <class Enum, std::size_t N>
std::string_view name_in(const std::array<std::pair<std::string_view, Enum>, N>& table, Enum value) {
  for (const auto& [name, entry] : table)
    if (entry == value) return name;
  return table.front().first;
}
}  // namespace

std::string_view to_string(Fp8Recipe recipe) { return name_in(kFp8RecipeNames, recipe); }
std::string_view to_string(MoeAuxLoss loss) { return name_in(kMoeAuxLossNames, loss); }
std::string_view to_string(FsdpImplementation implementation) {
  return name_in(kFsdpImplementationNames, implementation);
}
std::string_view to_string(Optimizer optimizer) { return name_in(kOptimizerNames, optimizer); }
std::string_view to_string(TrainMetric metric) { return name_in(kTrainMetricNames, metric); }

std::string_view to_string(Framework framework) {
  switch (framework) {
    case Framework::megatron_te:
      return "megatron-te";
    case Framework::pytorch_eager:
      return "pytorch-eager";
  }
  return "?";
}

std::string_view to_string(GroupRole role) {
  switch (role) {
    case GroupRole::tp:
      return "tp";
    case GroupRole::cp:
      return "cp";
    case GroupRole::dp:
      return "dp";
    case GroupRole::data:
      return "data";
    case GroupRole::pp:
      return "pp";
    case GroupRole::expert_tp:
      return "expert_tp";
    case GroupRole::ep:
      return "ep";
    case GroupRole::expert_data:
      return "expert_data";
    case GroupRole::shard:
      return "shard";
    case GroupRole::replicate:
      return "replicate";
    case GroupRole::world:
      return "world";
  }
  return "unknown";
}

RankLayout::RankLayout(const ParallelismSpec& parallelism) : parallelism_(parallelism) {
  const auto& p = parallelism;
  if (p.dp < 1 || p.tp < 1 || p.pp < 1 || p.cp < 1 || p.ep < 1)
    throw ModelError("parallelism: dp, tp, pp, cp and ep must all be at least 1");
  const int data_size = p.dp * p.cp;
  const int etp = p.expert_tp();
  if (etp < 1) throw ModelError("parallelism: etp must be at least 1 (0 = tp)");
  if ((p.tp * data_size) % (etp * p.ep) != 0)
    throw ModelError("parallelism: etp x ep = " + std::to_string(etp) + " x " + std::to_string(p.ep) +
                     " must divide tp x cp x dp = " + std::to_string(p.tp * data_size) +
                     " (the expert layers lay out the ranks of a pipeline stage again, as in Megatron-Core)");
  if (p.shard_group_size < 0 || (p.shard_group_size > 0 && data_size % p.shard_group_size != 0))
    throw ModelError("parallelism: shard_group_size=" + std::to_string(p.shard_group_size) +
                     " must be 0 (whole data group) or divide dp*cp=" + std::to_string(data_size));
  world_size_ = p.world_size();
  shard_size_ = p.shard_group_size == 0 ? data_size : p.shard_group_size;
}

RankCoordinates RankLayout::coordinates(int rank) const {
  if (rank < 0 || rank >= world_size_)
    throw ModelError("RankLayout: rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_size_) + ")");
  const auto& p = parallelism_;
  RankCoordinates c;
  c.tp = rank % p.tp;
  rank /= p.tp;
  c.cp = rank % p.cp;
  rank /= p.cp;
  c.dp = rank % p.dp;
  c.pp = rank / p.dp;
  return c;
}

int RankLayout::rank_of(const RankCoordinates& c) const {
  const auto& p = parallelism_;
  if (c.tp < 0 || c.tp >= p.tp || c.cp < 0 || c.cp >= p.cp || c.dp < 0 || c.dp >= p.dp || c.pp < 0 || c.pp >= p.pp)
    throw ModelError("RankLayout: coordinates outside the parallel grid");
  return c.tp + p.tp * (c.cp + p.cp * (c.dp + p.dp * c.pp));
}

int RankLayout::group_size(GroupRole role) const {
  const auto& p = parallelism_;
  const int data_size = p.dp * p.cp;
  switch (role) {
    case GroupRole::tp:
      return p.tp;
    case GroupRole::cp:
      return p.cp;
    case GroupRole::dp:
      return p.dp;
    case GroupRole::data:
      return data_size;
    case GroupRole::pp:
      return p.pp;
    case GroupRole::expert_tp:
      return p.expert_tp();
    case GroupRole::ep:
      return p.ep;
    case GroupRole::expert_data:
      return p.tp * data_size / (p.expert_tp() * p.ep);
    case GroupRole::shard:
      return shard_size_;
    case GroupRole::replicate:
      return data_size / shard_size_;
    case GroupRole::world:
      return world_size_;
  }
  throw ModelError("RankLayout: unknown group role");
}

namespace {

/// Where a group sits inside an index range: its members are first + stride*k for k in [0, size). For the data-group
/// roles the index is cp + CP*dp (dp x cp ranks with the same tp and pp); for the expert roles, the stage's rank index.
struct GroupSlice {
  int first = 0;
  int stride = 1;
};

GroupSlice data_slice(int data_index, GroupRole role, int shard_size) {
  switch (role) {
    case GroupRole::data:
      return {0, 1};
    case GroupRole::shard:  // consecutive blocks of shard_size ranks
      return {data_index - data_index % shard_size, 1};
    case GroupRole::replicate:  // same position in every shard block
      return {data_index % shard_size, shard_size};
    default:
      break;
  }
  throw ModelError("RankLayout: not a data-group role");
}

/// An expert-layer group inside the pipeline stage, as a slice of the stage's rank index tp + TP*(cp + CP*dp) (a
/// stage rank is that index plus the stage's base).
GroupSlice expert_slice(int stage_index, GroupRole role, int etp, int ep) {
  switch (role) {
    case GroupRole::expert_tp:  // consecutive blocks of etp ranks
      return {stage_index - stage_index % etp, 1};
    case GroupRole::ep:  // same etp position, consecutive ep blocks inside a block of etp x ep ranks
      return {stage_index % etp + (stage_index - stage_index % (etp * ep)), etp};
    case GroupRole::expert_data:  // same position in every block of etp x ep ranks
      return {stage_index % (etp * ep), etp * ep};
    default:
      break;
  }
  throw ModelError("RankLayout: not an expert-layer role");
}

bool is_expert_role(GroupRole role) {
  return role == GroupRole::expert_tp || role == GroupRole::ep || role == GroupRole::expert_data;
}

}  // namespace

std::vector<int> RankLayout::group(int rank, GroupRole role) const {
  const auto& p = parallelism_;
  const RankCoordinates c = coordinates(rank);
  std::vector<int> members;
  const int size = group_size(role);
  members.reserve(static_cast<std::size_t>(size));
  RankCoordinates m = c;
  switch (role) {
    case GroupRole::tp:
      for (m.tp = 0; m.tp < p.tp; ++m.tp) members.push_back(rank_of(m));
      return members;
    case GroupRole::cp:
      for (m.cp = 0; m.cp < p.cp; ++m.cp) members.push_back(rank_of(m));
      return members;
    case GroupRole::dp:
      for (m.dp = 0; m.dp < p.dp; ++m.dp) members.push_back(rank_of(m));
      return members;
    case GroupRole::pp:
      for (m.pp = 0; m.pp < p.pp; ++m.pp) members.push_back(rank_of(m));
      return members;
    case GroupRole::world:
      for (int r = 0; r < world_size_; ++r) members.push_back(r);
      return members;
    default:
      break;
  }
  if (is_expert_role(role)) {
    const int stage_size = p.tp * p.cp * p.dp;
    const int stage_base = rank - rank % stage_size;
    const GroupSlice slice = expert_slice(rank % stage_size, role, p.expert_tp(), p.ep);
    for (int k = 0; k < size; ++k) members.push_back(stage_base + slice.first + slice.stride * k);
    return members;
  }
  const GroupSlice slice = data_slice(c.cp + p.cp * c.dp, role, shard_size_);
  for (int k = 0; k < size; ++k) {
    const int data_index = slice.first + slice.stride * k;
    m.cp = data_index % p.cp;
    m.dp = data_index / p.cp;
    members.push_back(rank_of(m));
  }
  return members;
}

int RankLayout::index_in_group(int rank, GroupRole role) const {
  const auto& p = parallelism_;
  const RankCoordinates c = coordinates(rank);
  const int data_index = c.cp + p.cp * c.dp;
  switch (role) {
    case GroupRole::tp:
      return c.tp;
    case GroupRole::cp:
      return c.cp;
    case GroupRole::dp:
      return c.dp;
    case GroupRole::data:
      return data_index;
    case GroupRole::pp:
      return c.pp;
    case GroupRole::expert_tp:
      return (rank % (p.tp * p.cp * p.dp)) % p.expert_tp();
    case GroupRole::ep:
      return (rank % (p.tp * p.cp * p.dp)) / p.expert_tp() % p.ep;
    case GroupRole::expert_data:
      return (rank % (p.tp * p.cp * p.dp)) / (p.expert_tp() * p.ep);
    case GroupRole::shard:
      return data_index % shard_size_;
    case GroupRole::replicate:
      return data_index / shard_size_;
    case GroupRole::world:
      return rank;
  }
  throw ModelError("RankLayout: unknown group role");
}

int RankLayout::group_id(int rank, GroupRole role) const {
  // The lowest rank of the group: members are listed in increasing rank order (rank grows with every
  // coordinate and with the data index), so this is the first member, unique to the group.
  const auto& p = parallelism_;
  RankCoordinates c = coordinates(rank);
  switch (role) {
    case GroupRole::tp:
      c.tp = 0;
      return rank_of(c);
    case GroupRole::cp:
      c.cp = 0;
      return rank_of(c);
    case GroupRole::dp:
      c.dp = 0;
      return rank_of(c);
    case GroupRole::pp:
      c.pp = 0;
      return rank_of(c);
    case GroupRole::world:
      return 0;
    default:
      break;
  }
  if (is_expert_role(role)) {
    const int stage_size = p.tp * p.cp * p.dp;
    return rank - rank % stage_size + expert_slice(rank % stage_size, role, p.expert_tp(), p.ep).first;
  }
  const GroupSlice slice = data_slice(c.cp + p.cp * c.dp, role, shard_size_);
  c.cp = slice.first % p.cp;
  c.dp = slice.first / p.cp;
  return rank_of(c);
}

}  // namespace chopsim
