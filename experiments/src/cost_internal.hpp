#pragma once
// Decoding of cost keys (private to chopsim_experiments): a GPU's price (a catalog entry, a study candidate's or a
// sweep's `cost:`) and the facility (`facility:`), read the same way wherever they appear.

#include "chopsim/config/detail/decode.hpp"
#include "chopsim/experiments/cost.hpp"

namespace chopsim::config_detail {

/// The keys of a GpuCost mapping over `cost`. Setting one of the two pricing modes drops the other (a candidate may
/// turn a rented GPU into an owned one).
void decode_gpu_cost(Mapping& m, GpuCost& cost);
/// The keys of a FacilityCost mapping over `facility`.
void decode_facility(Mapping& m, FacilityCost& facility);

}  // namespace chopsim::config_detail
