// RankLayout: Megatron's rank order and the groups of every role.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/models/parallelism.hpp"

namespace chopsim {
namespace {

constexpr GroupRole kRoles[] = {GroupRole::tp,    GroupRole::cp,        GroupRole::dp,   GroupRole::data,
                                GroupRole::pp,    GroupRole::expert_tp, GroupRole::ep,   GroupRole::expert_data,
                                GroupRole::shard, GroupRole::replicate, GroupRole::world};

ParallelismSpec grid(int tp, int cp, int dp, int pp) {
  ParallelismSpec p;
  p.tp = tp;
  p.cp = cp;
  p.dp = dp;
  p.pp = pp;
  return p;
}

TEST(RankLayout, TensorParallelVariesFastestThenContextDataPipeline) {
  const RankLayout layout(grid(2, 2, 2, 2));
  // rank = tp + TP*(cp + CP*(dp + DP*pp)): rank 13 = 1 + 2*(0 + 2*(1 + 2*1)).
  const RankCoordinates c = layout.coordinates(13);
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.cp, 0);
  EXPECT_EQ(c.dp, 1);
  EXPECT_EQ(c.pp, 1);
  for (int rank = 0; rank < layout.world_size(); ++rank) EXPECT_EQ(layout.rank_of(layout.coordinates(rank)), rank);
  EXPECT_EQ(layout.group(0, GroupRole::tp), (std::vector<int>{0, 1}));
  EXPECT_EQ(layout.group(0, GroupRole::cp), (std::vector<int>{0, 2}));
  EXPECT_EQ(layout.group(0, GroupRole::dp), (std::vector<int>{0, 4}));
  EXPECT_EQ(layout.group(0, GroupRole::data), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(layout.group(3, GroupRole::pp), (std::vector<int>{3, 11}));
}

TEST(RankLayout, ExpertGroupsAreBlocksOfTheDataGroup) {
  ParallelismSpec p = grid(2, 1, 4, 1);
  p.ep = 2;
  const RankLayout layout(p);
  // Data group of rank 0: {0, 2, 4, 6}; EP blocks {0, 2} and {4, 6}; expert_data joins equal positions.
  EXPECT_EQ(layout.group(0, GroupRole::ep), (std::vector<int>{0, 2}));
  EXPECT_EQ(layout.group(4, GroupRole::ep), (std::vector<int>{4, 6}));
  EXPECT_EQ(layout.group(0, GroupRole::expert_data), (std::vector<int>{0, 4}));
  EXPECT_EQ(layout.group(7, GroupRole::expert_data), (std::vector<int>{3, 7}));
  EXPECT_EQ(layout.index_in_group(6, GroupRole::ep), 1);
  EXPECT_EQ(layout.index_in_group(6, GroupRole::expert_data), 1);
}

TEST(RankLayout, FoldedExpertGroupsSpanTheTensorParallelRanks) {
  // MoE parallel folding (Megatron-Core, etp 1): tp 2 x dp 4 = 8 ranks per stage, ep 4 over them. The stage's ranks
  // in order form the ep blocks {0..3}, {4..7}; expert_data joins equal positions; no expert tensor parallelism.
  ParallelismSpec p = grid(2, 1, 4, 2);
  p.ep = 4;
  p.etp = 1;
  const RankLayout layout(p);
  EXPECT_EQ(layout.group(1, GroupRole::ep), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(layout.group(6, GroupRole::ep), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(layout.group(13, GroupRole::ep), (std::vector<int>{12, 13, 14, 15}));  // second pipeline stage
  EXPECT_EQ(layout.group(5, GroupRole::expert_data), (std::vector<int>{1, 5}));
  EXPECT_EQ(layout.group(5, GroupRole::expert_tp), (std::vector<int>{5}));
  EXPECT_EQ(layout.group_size(GroupRole::expert_data), 2);
  EXPECT_EQ(layout.index_in_group(6, GroupRole::ep), 2);
  EXPECT_EQ(layout.index_in_group(6, GroupRole::expert_data), 1);
  // ep 8 over tp 2 x dp 4, more than dp x cp: only possible folded.
  p.ep = 8;
  EXPECT_EQ(RankLayout(p).group(9, GroupRole::ep), (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  p.etp = 0;
  EXPECT_THROW(RankLayout{p}, ModelError);
  // etp = 2 = tp is the default layout: the expert tp group is the tp group, ep blocks of the data group.
  p.ep = 2;
  p.etp = 2;
  const RankLayout same(p);
  p.etp = 0;
  const RankLayout by_default(p);
  for (const GroupRole role : {GroupRole::expert_tp, GroupRole::ep, GroupRole::expert_data})
    for (int r = 0; r < same.world_size(); ++r) EXPECT_EQ(same.group(r, role), by_default.group(r, role));
  for (int r = 0; r < same.world_size(); ++r)
    EXPECT_EQ(same.group(r, GroupRole::expert_tp), same.group(r, GroupRole::tp));
}

TEST(RankLayout, HybridShardingShardsInsideBlocksAndReplicatesAcross) {
  ParallelismSpec p = grid(1, 1, 8, 1);
  p.shard_group_size = 4;
  const RankLayout layout(p);
  EXPECT_EQ(layout.group(5, GroupRole::shard), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(layout.group(5, GroupRole::replicate), (std::vector<int>{1, 5}));
  EXPECT_EQ(layout.group_size(GroupRole::replicate), 2);
  p.shard_group_size = 0;  // whole data group
  const RankLayout whole(p);
  EXPECT_EQ(whole.group_size(GroupRole::shard), 8);
  EXPECT_EQ(whole.group(5, GroupRole::replicate), (std::vector<int>{5}));
}

// For every role: the groups partition the ranks, group_id is equal exactly within a group, and
// index_in_group and group_size agree with group().
void expect_consistent_groups(const ParallelismSpec& p) {
  const RankLayout layout(p);
  const int world = layout.world_size();
  for (const GroupRole role : kRoles) {
    SCOPED_TRACE(std::string(to_string(role)));
    for (int a = 0; a < world; ++a) {
      const std::vector<int> members = layout.group(a, role);
      ASSERT_EQ(static_cast<int>(members.size()), layout.group_size(role));
      ASSERT_TRUE(std::is_sorted(members.begin(), members.end()));
      const auto position = std::find(members.begin(), members.end(), a);
      ASSERT_NE(position, members.end());
      EXPECT_EQ(layout.index_in_group(a, role), position - members.begin());
      const int id = layout.group_id(a, role);
      EXPECT_GE(id, 0);
      EXPECT_LT(id, world);
      for (int b = 0; b < world; ++b) {
        const bool same_group = std::find(members.begin(), members.end(), b) != members.end();
        EXPECT_EQ(same_group, layout.group_id(b, role) == id) << "ranks " << a << " and " << b;
        if (same_group) {
          EXPECT_EQ(layout.group(b, role), members);
        }
      }
    }
  }
}

TEST(RankLayout, GroupIdsIdentifyGroupsExactly) {
  ParallelismSpec p = grid(2, 2, 4, 2);
  p.ep = 4;
  p.shard_group_size = 2;
  expect_consistent_groups(p);
  ParallelismSpec q = grid(1, 1, 6, 3);
  q.ep = 3;
  q.shard_group_size = 3;
  expect_consistent_groups(q);
  ParallelismSpec folded = grid(4, 2, 2, 2);  // 16 ranks per stage
  folded.ep = 8;
  folded.etp = 2;
  expect_consistent_groups(folded);
  folded.etp = 1;
  expect_consistent_groups(folded);
}

TEST(RankLayout, RejectsGroupsThatDoNotDivideTheDataGroup) {
  ParallelismSpec p = grid(1, 1, 6, 1);
  p.ep = 4;
  EXPECT_THROW(RankLayout{p}, ModelError);
  p.ep = 1;
  p.shard_group_size = 4;
  EXPECT_THROW(RankLayout{p}, ModelError);
  EXPECT_THROW(RankLayout{grid(0, 1, 1, 1)}, ModelError);
  EXPECT_THROW((void)RankLayout(grid(1, 1, 2, 1)).coordinates(2), ModelError);
}

}  // namespace
}  // namespace chopsim
