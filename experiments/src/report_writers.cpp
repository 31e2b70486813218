// Output files of a run: the timeline (timeline.json or timeline.pftrace, timeline_formats.hpp), ops.h5 (HDF5 op
// table), summary.json.

#include <H5Cpp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/json_writer.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/hdf5/append_table.hpp"
#include "chopsim/hdf5/attributes.hpp"
#include "observers.hpp"

namespace chopsim::detail {

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 5> kSuffix = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  double value = bytes;
  while (value >= 1024.0 && unit + 1 < kSuffix.size()) {
    value /= 1024.0;
    ++unit;
  }
  std::array<char, 32> text{};
  if (unit == 0)
    std::snprintf(text.data(), text.size(), "%.0f %s", value, kSuffix[unit]);
  else
    std::snprintf(text.data(), text.size(), "%.1f %s", value, kSuffix[unit]);
  return text.data();
}

namespace {
const Op& op_of(const Workload& workload, const OpEvent& event) {
  return workload.program(static_cast<int>(event.rank)).streams[event.stream].ops[event.op];
}

std::string_view category_label(const Op& op) {
  return op.kind == OpKind::compute ? std::string_view("compute") : to_string(op.category);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// timeline.json

struct TimelineWriter::State {
  const Workload& workload;
  TimelineFormat format;
  std::ofstream file;
  std::unique_ptr<TimelineEncoder> encoder;
  bool finished = false;
  struct Counters {
    bool any = false;
    double power_w = 0.0, clock_hz = 0.0, temperature_c = 0.0;
  };
  std::vector<Counters> counters;
  int gpus_per_node = 1;
  bool described = false;      ///< the process and thread names are written
  std::vector<int> requested;  ///< the GPUs asked for (empty: all)
  std::vector<char> shown;     ///< per rank: its events are written (empty: all)
  double max_bytes = 0.0;      ///< limit_size(): 0 = no limit
  int iterations = 1;
  bool telemetry = false;
  std::string source;
  double estimated_bytes = 0.0;
  int ranks_shown = 0;
  std::vector<SliceArgument> arguments;  ///< scratch of on_op_event

  State(const Workload& w, const std::filesystem::path& path, TimelineFormat f)
      : workload(w), format(f), file(open_for_writing(path)), encoder(make_timeline_encoder(f, file)) {}

  /// Names the GPUs and their streams: every GPU, or under symmetry the representatives, each with the GPUs it
  /// stands for.
  void describe(const std::vector<std::uint32_t>& representative) {
    if (described) return;
    described = true;
    const int world = workload.layout.world_size();
    std::vector<int> members(static_cast<std::size_t>(world), 0);
    for (const std::uint32_t r : representative) ++members[r];
    if (!requested.empty()) {
      // A requested GPU that is not simulated is shown through its class's representative.
      shown.assign(static_cast<std::size_t>(world), 0);
      for (const int r : requested)
        shown[representative.empty() ? static_cast<std::size_t>(r) : representative[static_cast<std::size_t>(r)]] = 1;
    }
    const TimelineBytesPerOp per_op = timeline_bytes_per_op(format);
    for (int rank = 0; rank < world; ++rank) {
      if (!representative.empty() && representative[static_cast<std::size_t>(rank)] != static_cast<std::uint32_t>(rank))
        continue;
      if (!shown.empty() && !shown[static_cast<std::size_t>(rank)]) continue;
      const auto coordinates = workload.layout.coordinates(rank);
      std::string label = "GPU " + std::to_string(rank) + " (node " +
                          std::to_string(rank / std::max(gpus_per_node, 1)) + ", pp " + std::to_string(coordinates.pp) +
                          ", dp " + std::to_string(coordinates.dp) + ", tp " + std::to_string(coordinates.tp) + ")";
      if (!representative.empty())
        label += ", stands for " + std::to_string(members[static_cast<std::size_t>(rank)]) +
                 " GPUs (its data-parallel replicas: chopsim simulated one per symmetry class)";
      const auto& streams = workload.program(rank).streams;
      std::vector<std::string> stream_names;
      stream_names.reserve(streams.size());
      for (const auto& stream : streams) stream_names.push_back(stream.name);
      encoder->gpu(static_cast<std::uint32_t>(rank), label, stream_names);
      ++ranks_shown;
      estimated_bytes += static_cast<double>(workload.program(rank).op_count()) * iterations *
                         (per_op.op + (telemetry ? per_op.telemetry : 0.0));
    }
    if (max_bytes > 0.0 && estimated_bytes > max_bytes)
      throw InputError({source}, "",
                       "the timeline would be about " + format_bytes(estimated_bytes) + " (" +
                           std::to_string(ranks_shown) + " GPUs shown x " + std::to_string(iterations) +
                           " iterations), more than the " + format_bytes(max_bytes) + " chopsim writes without --force",
                       "show fewer GPUs (--timeline-ranks 0,8), run fewer iterations, or pass --force");
  }
};

TimelineWriter::TimelineWriter(const Workload& workload, const std::filesystem::path& path, int gpus_per_node,
                               std::vector<int> ranks, TimelineFormat format)
    : state_(std::make_unique<State>(workload, path, format)) {
  state_->gpus_per_node = gpus_per_node;
  for (const int r : ranks)
    if (r < 0 || r >= workload.layout.world_size())
      throw ModelError("timeline: GPU " + std::to_string(r) + " is not among the run's " +
                       std::to_string(workload.layout.world_size()));
  state_->requested = std::move(ranks);
}

void TimelineWriter::on_rank_classes(const std::vector<std::uint32_t>& representative) {
  state_->describe(representative);
}

TimelineWriter::~TimelineWriter() = default;

void TimelineWriter::limit_size(double max_bytes, int iterations, bool telemetry, std::string source) {
  state_->max_bytes = max_bytes;
  state_->iterations = std::max(iterations, 1);
  state_->telemetry = telemetry;
  state_->source = std::move(source);
}

void TimelineWriter::on_op_event(const OpEvent& event) {
  state_->describe({});  // every GPU, unless the classes came first
  if (!event.is_end) return;
  if (!state_->shown.empty() && !state_->shown[event.rank]) return;
  const Op& op = op_of(state_->workload, event);
  if (op.kind == OpKind::delay) return;  // host gaps of replayed traces: the empty space between kernels
  std::string name(state_->workload.name(op));
  if (op.kind != OpKind::compute) name += " " + format_bytes(op.bytes);
  auto& args = state_->arguments;
  args.clear();
  args.push_back(SliceArgument::of_integer("iteration", event.iteration));
  if (op.layer >= 0) args.push_back(SliceArgument::of_integer("layer", op.layer));
  if (op.micro_batch >= 0) args.push_back(SliceArgument::of_integer("micro_batch", op.micro_batch));
  args.push_back(SliceArgument::of_text("pass", to_string(op.pass)));
  if (op.kind == OpKind::compute) {
    args.push_back(SliceArgument::of_text("class", to_string(op.kernel_class)));
    args.push_back(SliceArgument::of_real("flops", op.flops));
    args.push_back(SliceArgument::of_real("bytes", op.bytes));
  } else {
    args.push_back(
        SliceArgument::of_text("kind", op.kind == OpKind::collective ? to_string(op.collective) : to_string(op.kind)));
    args.push_back(SliceArgument::of_text("group", op.kind != OpKind::collective ? std::string_view("pp")
                                                   : op.group_index >= 0         ? std::string_view("explicit")
                                                                                 : to_string(op.group)));
    args.push_back(SliceArgument::of_real("bytes", op.bytes));
  }
  SliceRecord slice;
  slice.rank = event.rank;
  slice.stream = event.stream;
  slice.start_s = event.start_s;
  slice.end_s = event.time_s;
  slice.name = name;
  slice.category = category_label(op);
  slice.arguments = args;
  state_->encoder->slice(slice);
}

void TimelineWriter::on_telemetry(const GpuStateSample& sample) {
  state_->describe({});
  if (!state_->shown.empty() && !state_->shown[sample.gpu]) return;
  auto& counters = state_->counters;
  if (sample.gpu >= counters.size()) counters.resize(sample.gpu + 1);
  auto& last = counters[sample.gpu];
  TimelineEncoder& encoder = *state_->encoder;
  if (!last.any || sample.power_w != last.power_w)
    encoder.counter(sample.gpu, TimelineCounter::power, sample.time_s, sample.power_w);
  if (!last.any || sample.clock_hz != last.clock_hz)
    encoder.counter(sample.gpu, TimelineCounter::clock, sample.time_s, sample.clock_hz / 1e6);
  if (!last.any || std::abs(sample.temperature_c - last.temperature_c) >= 0.1) {
    encoder.counter(sample.gpu, TimelineCounter::temperature, sample.time_s, sample.temperature_c);
    last.temperature_c = sample.temperature_c;
  }
  last.any = true;
  last.power_w = sample.power_w;
  last.clock_hz = sample.clock_hz;
}

void TimelineWriter::finish() {
  if (state_->finished) return;
  state_->describe({});
  state_->encoder->finish();
  state_->file.close();
  if (!state_->file) throw OutputError("cannot write the timeline file");
  state_->finished = true;
}

// ---------------------------------------------------------------------------------------------
// ops.h5

namespace {
constexpr std::size_t kNameLength = 40;
constexpr std::size_t kShortLength = 16;
/// Rows per HDF5 chunk (~1.4 MB of /ops rows, the order of HDF5's default 1 MB chunk cache): the quick start's run
/// with --out took 0.60x the time and 48 instead of 67 MiB compared with 64 Ki-row chunks; a 1.5 M-row /ops the same.
constexpr hsize_t kChunkRows = 8192;

/// One row of /ops. Fixed-length strings read in h5py as bytes (decode with .astype(str)).
struct OpRow {
  std::uint32_t rank;
  std::uint32_t iteration;
  char stream[kShortLength];
  char name[kNameLength];
  char kind[kShortLength];
  char kernel_class[kShortLength];
  char category[kShortLength];
  char pass[kShortLength];
  std::int32_t layer;
  std::int32_t micro_batch;
  double start_s;
  double duration_s;
  double flops;
  double bytes;
};

void copy_fixed(char* destination, std::size_t size, std::string_view text) {
  std::memset(destination, 0, size);
  std::memcpy(destination, text.data(), std::min(size, text.size()));
}

H5::CompType op_row_type() {
  H5::CompType type(sizeof(OpRow));
  const H5::StrType name_type(H5::PredType::C_S1, kNameLength);
  const H5::StrType short_type(H5::PredType::C_S1, kShortLength);
  type.insertMember("rank", HOFFSET(OpRow, rank), H5::PredType::NATIVE_UINT32);
  type.insertMember("iteration", HOFFSET(OpRow, iteration), H5::PredType::NATIVE_UINT32);
  type.insertMember("stream", HOFFSET(OpRow, stream), short_type);
  type.insertMember("name", HOFFSET(OpRow, name), name_type);
  type.insertMember("kind", HOFFSET(OpRow, kind), short_type);
  type.insertMember("class", HOFFSET(OpRow, kernel_class), short_type);
  type.insertMember("category", HOFFSET(OpRow, category), short_type);
  type.insertMember("pass", HOFFSET(OpRow, pass), short_type);
  type.insertMember("layer", HOFFSET(OpRow, layer), H5::PredType::NATIVE_INT32);
  type.insertMember("micro_batch", HOFFSET(OpRow, micro_batch), H5::PredType::NATIVE_INT32);
  type.insertMember("start_s", HOFFSET(OpRow, start_s), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("duration_s", HOFFSET(OpRow, duration_s), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("flops", HOFFSET(OpRow, flops), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("bytes", HOFFSET(OpRow, bytes), H5::PredType::NATIVE_DOUBLE);
  return type;
}

}  // namespace

/// One row of /telemetry.
struct TelemetryRow {
  std::uint32_t gpu;
  double time_s;         ///< start of the interval
  double duration_s;     ///< its length (the last interval of a run may be shorter)
  double power_w;        ///< mean over the interval
  double clock_mhz;      ///< time-weighted mean over the interval
  double temperature_c;  ///< at the end of the interval
  double throttled_fraction;
};

H5::CompType telemetry_row_type() {
  H5::CompType type(sizeof(TelemetryRow));
  type.insertMember("gpu", HOFFSET(TelemetryRow, gpu), H5::PredType::NATIVE_UINT32);
  type.insertMember("time_s", HOFFSET(TelemetryRow, time_s), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("duration_s", HOFFSET(TelemetryRow, duration_s), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("power_w", HOFFSET(TelemetryRow, power_w), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("clock_mhz", HOFFSET(TelemetryRow, clock_mhz), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("temperature_c", HOFFSET(TelemetryRow, temperature_c), H5::PredType::NATIVE_DOUBLE);
  type.insertMember("throttled_fraction", HOFFSET(TelemetryRow, throttled_fraction), H5::PredType::NATIVE_DOUBLE);
  return type;
}

/// Per GPU: the last sample and the interval being filled.
struct TelemetryBin {
  bool started = false;
  GpuStateSample last;
  double bin_start_s = 0.0;
  double energy_j = 0.0, clock_time = 0.0, throttled_s = 0.0;
};

struct OpsTableWriter::State {
  const Workload& workload;
  std::filesystem::path path;
  H5::H5File file;
  hdf5::AppendTable<OpRow> ops;
  bool finished = false;
  // Telemetry.
  double interval_s = 0.0;
  std::vector<double> inlet_c;
  const ThermalModel* thermal = nullptr;
  hdf5::AppendTable<TelemetryRow> telemetry;
  std::vector<TelemetryBin> bins;
  std::vector<std::uint32_t> representative;  ///< under symmetry, per GPU (empty: every GPU has its own rows)
};

void OpsTableWriter::on_rank_classes(const std::vector<std::uint32_t>& representative) {
  state_->representative = representative;
}

OpsTableWriter::OpsTableWriter(const Workload& workload, const std::filesystem::path& path,
                               const std::string& run_name) {
  H5::Exception::dontPrint();
  try {
    // Object timestamps off: the same run must give byte-identical files.
    H5::FileCreatPropList file_properties;
    state_ = std::make_unique<State>(State{workload,
                                           path,
                                           H5::H5File(path.string(), H5F_ACC_TRUNC, file_properties),
                                           {},
                                           false,
                                           0.0,
                                           {},
                                           nullptr,
                                           {},
                                           {},
                                           {}});
    state_->ops = hdf5::AppendTable<OpRow>(state_->file, "ops", op_row_type(), kChunkRows);
    hdf5::write_string_attribute(
        state_->ops.dataset().getId(), "description",
        "one row per executed op; times in seconds from the start of the simulation; "
        "flops in FLOP, bytes in bytes (HBM traffic for compute, message size for communication)");
    hdf5::write_string_attribute(state_->ops.dataset().getId(), "run", run_name);
  } catch (const H5::Exception& error) {
    throw OutputError("cannot create " + path.string() + ": " + error.getDetailMsg());
  }
}

OpsTableWriter::~OpsTableWriter() = default;

void OpsTableWriter::on_op_event(const OpEvent& event) {
  if (!event.is_end) return;
  const auto& workload = state_->workload;
  const Op& op = op_of(workload, event);
  if (op.kind == OpKind::delay) return;
  OpRow row{};
  row.rank = event.rank;
  row.iteration = event.iteration;
  copy_fixed(row.stream, kShortLength, workload.program(static_cast<int>(event.rank)).streams[event.stream].name);
  copy_fixed(row.name, kNameLength, workload.name(op));
  copy_fixed(row.kind, kShortLength, op.kind == OpKind::collective ? to_string(op.collective) : to_string(op.kind));
  copy_fixed(row.kernel_class, kShortLength, to_string(op.kernel_class));
  copy_fixed(row.category, kShortLength, category_label(op));
  copy_fixed(row.pass, kShortLength, to_string(op.pass));
  row.layer = op.layer;
  row.micro_batch = op.micro_batch;
  row.start_s = event.start_s;
  row.duration_s = event.time_s - event.start_s;
  row.flops = op.flops;
  row.bytes = op.bytes;
  try {
    state_->ops.add(row);
  } catch (const H5::Exception& error) {
    throw OutputError("cannot write " + state_->path.string() + ": " + error.getDetailMsg());
  }
}

void OpsTableWriter::enable_telemetry(double interval_s, std::vector<double> inlet_c, const ThermalModel& thermal) {
  auto& st = *state_;
  if (!(interval_s > 0.0)) throw OutputError("telemetry interval must be positive");
  st.interval_s = interval_s;
  st.inlet_c = std::move(inlet_c);
  st.thermal = &thermal;
  st.bins.resize(st.inlet_c.size());
  try {
    st.telemetry = hdf5::AppendTable<TelemetryRow>(st.file, "telemetry", telemetry_row_type(), kChunkRows);
    hdf5::write_string_attribute(
        st.telemetry.dataset().getId(), "description",
        "per GPU and interval: mean power (W), time-weighted mean clock (MHz), temperature at the "
        "interval's end (degrees C), fraction of the interval throttled by the power cap or the "
        "slowdown temperature; times in seconds from the start of the simulation");
    std::array<char, 64> text{};
    std::snprintf(text.data(), text.size(), "%.17g", interval_s);
    hdf5::write_string_attribute(st.telemetry.dataset().getId(), "interval_s", text.data());
  } catch (const H5::Exception& error) {
    throw OutputError("cannot create the telemetry table in " + st.path.string() + ": " + error.getDetailMsg());
  }
}

namespace {
/// The row of a GPU's bin that ends at `end_s` after `duration_s` (a whole interval, or the run's last part of one).
TelemetryRow bin_row(const TelemetryBin& bin, std::uint32_t gpu, double duration_s, double end_s, double inlet_c,
                     const ThermalModel& thermal) {
  const GpuStateSample& s = bin.last;
  TelemetryRow row{};
  row.gpu = gpu;
  row.time_s = bin.bin_start_s;
  row.duration_s = duration_s;
  row.power_w = bin.energy_j / duration_s;
  row.clock_mhz = bin.clock_time / duration_s / 1e6;
  row.temperature_c = thermal.advance_c(s.temperature_c, inlet_c, s.power_w, end_s - s.time_s);
  row.throttled_fraction = bin.throttled_s / duration_s;
  return row;
}

/// Moves a GPU's telemetry bin from its last sample to `time_s`, emitting every interval completed on the way.
void fill_bins(TelemetryBin& bin, std::uint32_t gpu, double time_s, double interval_s, double inlet_c,
               const ThermalModel& thermal, hdf5::AppendTable<TelemetryRow>& out) {
  const GpuStateSample& s = bin.last;
  double t = s.time_s;
  while (t < time_s) {
    const double bin_end = bin.bin_start_s + interval_s;
    const double until = std::min(bin_end, time_s);
    const double dt = until - t;
    bin.energy_j += s.power_w * dt;
    bin.clock_time += s.clock_hz * dt;
    if (s.flags != 0) bin.throttled_s += dt;
    t = until;
    if (until >= bin_end) {
      out.add(bin_row(bin, gpu, interval_s, bin_end, inlet_c, thermal));
      bin.bin_start_s = bin_end;
      bin.energy_j = bin.clock_time = bin.throttled_s = 0.0;
    }
  }
}
}  // namespace

void OpsTableWriter::on_telemetry(const GpuStateSample& sample) {
  auto& st = *state_;
  if (st.thermal == nullptr || sample.gpu >= st.bins.size()) return;
  TelemetryBin& bin = st.bins[sample.gpu];
  if (!bin.started) {
    bin.started = true;
    bin.bin_start_s = sample.time_s;
  } else {
    try {
      fill_bins(bin, sample.gpu, sample.time_s, st.interval_s, st.inlet_c[sample.gpu], *st.thermal, st.telemetry);
    } catch (const H5::Exception& error) {
      throw OutputError("cannot write " + st.path.string() + ": " + error.getDetailMsg());
    }
  }
  bin.last = sample;
}

void OpsTableWriter::finish(double end_s) {
  if (state_->finished) return;
  auto& st = *state_;
  try {
    if (st.thermal != nullptr) {
      for (std::size_t g = 0; g < st.bins.size(); ++g) {
        TelemetryBin& bin = st.bins[g];
        if (!bin.started) continue;
        const auto gpu = static_cast<std::uint32_t>(g);
        fill_bins(bin, gpu, end_s, st.interval_s, st.inlet_c[g], *st.thermal, st.telemetry);
        const double covered = end_s - bin.bin_start_s;
        if (covered > 0.0)  // the last, partial interval
          st.telemetry.add(bin_row(bin, gpu, covered, end_s, st.inlet_c[g], *st.thermal));
      }
      st.telemetry.close();
    }
    st.ops.close();
    if (!st.representative.empty()) {
      const hsize_t gpus = st.representative.size();
      const H5::DataSpace space(1, &gpus);
      H5::DSetCreatPropList properties;
      H5Pset_obj_track_times(properties.getId(), 0);  // no timestamp: the same run gives the same bytes
      H5::DataSet classes = st.file.createDataSet("representative", H5::PredType::STD_U32LE, space, properties);
      classes.write(st.representative.data(), H5::PredType::NATIVE_UINT32);
      hdf5::write_string_attribute(classes.getId(), "description",
                                   "per GPU: the GPU whose rows in /ops and /telemetry stand for it (chopsim simulated "
                                   "one GPU per symmetry class of data-parallel replicas; docs/design.md, Symmetry)");
    }
    st.file.close();
  } catch (const H5::Exception& error) {
    throw OutputError("cannot write " + st.path.string() + ": " + error.getDetailMsg());
  }
  st.finished = true;
}

}  // namespace chopsim::detail
