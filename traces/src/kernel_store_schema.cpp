#include "kernel_store_schema.hpp"

#include <initializer_list>
#include <string>
#include <utility>

#include "chopsim/traces/records.hpp"

namespace chopsim {

namespace {

using store_detail::AnnotationRow;
using store_detail::KernelRow;
using store_detail::kNoCollective;
using store_detail::StreamRow;
using store_detail::TelemetryRow;

H5::EnumType class_enum() {
  H5::EnumType type(H5::PredType::NATIVE_UINT8);
  for (std::uint8_t i = 0; i < kKernelClassCount; ++i)
    type.insert(std::string(kernel_class_name(static_cast<KernelClass>(i))), &i);
  return type;
}

H5::EnumType kind_enum() {
  H5::EnumType type(H5::PredType::NATIVE_UINT8);
  for (std::uint8_t i = 0; i < 3; ++i) type.insert(std::string(to_string(static_cast<ActivityKind>(i))), &i);
  return type;
}

H5::EnumType collective_enum() {
  H5::EnumType type(H5::PredType::NATIVE_UINT8);
  for (std::uint8_t i = 0; i < kCollectiveKindCount; ++i)
    type.insert(std::string(collective_kind_name(static_cast<CollectiveKind>(i))), &i);
  std::uint8_t none = kNoCollective;
  type.insert("none", &none);
  return type;
}

}  // namespace

#define CHOPSIM_MEMBER(Row, member, h5type) type.insertMember(#member, HOFFSET(Row, member), h5type)

H5::CompType store_detail::kernel_type() {
  H5::CompType type(sizeof(KernelRow));
  CHOPSIM_MEMBER(KernelRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(KernelRow, rank, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(KernelRow, device, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(KernelRow, stream, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(KernelRow, name, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(KernelRow, op, H5::PredType::NATIVE_UINT32);
  type.insertMember("class", HOFFSET(KernelRow, kernel_class), class_enum());
  CHOPSIM_MEMBER(KernelRow, kind, kind_enum());
  CHOPSIM_MEMBER(KernelRow, collective, collective_enum());
  CHOPSIM_MEMBER(KernelRow, start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, duration_s, H5::PredType::NATIVE_DOUBLE);
  const char* axes[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    type.insertMember(std::string("grid_") + axes[i], HOFFSET(KernelRow, grid) + i * sizeof(std::uint32_t),
                      H5::PredType::NATIVE_UINT32);
  }
  for (int i = 0; i < 3; ++i) {
    type.insertMember(std::string("block_") + axes[i], HOFFSET(KernelRow, block) + i * sizeof(std::uint32_t),
                      H5::PredType::NATIVE_UINT32);
  }
  CHOPSIM_MEMBER(KernelRow, flops, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, bytes, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, collective_bytes, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, group, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(KernelRow, group_size, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(KernelRow, correlation, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(KernelRow, launch_start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, launch_end_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(KernelRow, launch_thread, H5::PredType::NATIVE_INT64);
  return type;
}

H5::CompType store_detail::telemetry_type() {
  H5::CompType type(sizeof(TelemetryRow));
  CHOPSIM_MEMBER(TelemetryRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(TelemetryRow, device, H5::PredType::NATIVE_INT32);
  for (auto [name, offset] : std::initializer_list<std::pair<const char*, std::size_t>>{
           {"time_s", HOFFSET(TelemetryRow, time_s)},
           {"power_w", HOFFSET(TelemetryRow, power_w)},
           {"power_limit_w", HOFFSET(TelemetryRow, power_limit_w)},
           {"gfx_clock_hz", HOFFSET(TelemetryRow, gfx_clock_hz)},
           {"mem_clock_hz", HOFFSET(TelemetryRow, mem_clock_hz)},
           {"temp_edge_c", HOFFSET(TelemetryRow, temp_edge_c)},
           {"temp_junction_c", HOFFSET(TelemetryRow, temp_junction_c)},
           {"temp_memory_c", HOFFSET(TelemetryRow, temp_memory_c)},
           {"util_gpu", HOFFSET(TelemetryRow, util_gpu)},
           {"util_memory", HOFFSET(TelemetryRow, util_memory)},
           {"memory_used_bytes", HOFFSET(TelemetryRow, memory_used_bytes)},
           {"energy_j", HOFFSET(TelemetryRow, energy_j)}})
    type.insertMember(name, offset, H5::PredType::NATIVE_DOUBLE);
  return type;
}

H5::CompType store_detail::annotation_type() {
  H5::CompType type(sizeof(AnnotationRow));
  CHOPSIM_MEMBER(AnnotationRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(AnnotationRow, rank, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(AnnotationRow, device, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(AnnotationRow, stream, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(AnnotationRow, name, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(AnnotationRow, start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(AnnotationRow, duration_s, H5::PredType::NATIVE_DOUBLE);
  return type;
}

H5::CompType store_detail::stream_type() {
  H5::CompType type(sizeof(StreamRow));
  CHOPSIM_MEMBER(StreamRow, source, H5::PredType::NATIVE_UINT32);
  CHOPSIM_MEMBER(StreamRow, rank, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(StreamRow, device, H5::PredType::NATIVE_INT32);
  CHOPSIM_MEMBER(StreamRow, stream, H5::PredType::NATIVE_INT64);
  CHOPSIM_MEMBER(StreamRow, record_count, H5::PredType::NATIVE_UINT64);
  CHOPSIM_MEMBER(StreamRow, busy_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(StreamRow, first_start_s, H5::PredType::NATIVE_DOUBLE);
  CHOPSIM_MEMBER(StreamRow, last_end_s, H5::PredType::NATIVE_DOUBLE);
  return type;
}

#undef CHOPSIM_MEMBER

}  // namespace chopsim
