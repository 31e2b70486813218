#include "csv_tables.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/common/units.hpp"

namespace chopsim::calibration_detail {

CsvTable parse_csv(const std::string& content, const std::string& path) {
  CsvTable table;
  table.path = path;
  std::size_t i = content.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  bool any = false;  // the current record has content (a field or a separator)
  int line = 1;
  int record_line = 1;
  auto end_record = [&]() {
    if (any || !field.empty()) {
      record.push_back(std::move(field));
      if (table.header.empty()) {
        table.header = std::move(record);
      } else {
        table.rows.push_back(std::move(record));
        table.lines.push_back(record_line);
      }
    }
    record.clear();
    field.clear();
    any = false;
  };
  for (; i < content.size(); ++i) {
    const char c = content[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < content.size() && content[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    switch (c) {
      case '"':
        quoted = true;
        any = true;
        break;
      case ',':
        record.push_back(std::move(field));
        field.clear();
        any = true;
        break;
      case '\r':
        break;
      case '\n':
        end_record();
        ++line;
        record_line = line;
        break;
      default:
        if (!any && field.empty()) record_line = line;
        field += c;
        any = true;
    }
  }
  if (quoted)
    throw InputError(SourceLocation{path, record_line}, "", "a quoted field is not closed before the end of the file",
                     "the file looks truncated; export it again");
  end_record();
  return table;
}

namespace {

int find_column(const CsvTable& table, const std::string& name) {
  for (std::size_t i = 0; i < table.header.size(); ++i)
    if (table.header[i] == name) return static_cast<int>(i);
  return -1;
}

/// TraceLens writes "Kernel Time (µs)_median"; match without depending on the micro sign's encoding.
int find_kernel_time_column(const CsvTable& table) {
  for (std::size_t i = 0; i < table.header.size(); ++i)
    if (table.header[i].starts_with("Kernel Time (") && table.header[i].ends_with(")_median"))
      return static_cast<int>(i);
  return -1;
}

bool has_all(const CsvTable& table, std::initializer_list<const char*> names) {
  return std::all_of(names.begin(), names.end(), [&](const char* n) { return find_column(table, n) >= 0; });
}

std::string vidur_collective_time_column(const CsvTable& table) {
  for (const auto& h : table.header)
    if (h.starts_with("time_stats.") && h.ends_with(".median")) return h;
  return "";
}

/// Typed access to one table's cells, with errors that name the file, line and column.
class Cells {
 public:
  explicit Cells(const CsvTable& table) : table_(table) {}

  int column(const std::string& name) const {
    const int index = find_column(table_, name);
    if (index < 0)
      throw InputError(SourceLocation{table_.path, 1}, name, "column is missing from the header",
                       "use the table as its tool writes it (docs/calibration.md lists the columns read)");
    return index;
  }

  const std::string& text(std::size_t row, int column) const {
    static const std::string empty;
    const auto& cells = table_.rows[row];
    return static_cast<std::size_t>(column) < cells.size() ? cells[static_cast<std::size_t>(column)] : empty;
  }

  /// The number in (row, column); nullopt for an empty cell; InputError for text that is not a number.
  std::optional<double> maybe_number(std::size_t row, int column) const {
    std::string cell = text(row, column);
    cell.erase(cell.begin(),
               std::find_if(cell.begin(), cell.end(), [](unsigned char ch) { return !std::isspace(ch); }));
    while (!cell.empty() && std::isspace(static_cast<unsigned char>(cell.back()))) cell.pop_back();
    if (cell.empty()) return std::nullopt;
    double value = 0.0;
    const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
    if (error != std::errc() || end != cell.data() + cell.size() || !std::isfinite(value))
      throw InputError(SourceLocation{table_.path, table_.lines[row]}, table_.header[static_cast<std::size_t>(column)],
                       "expected a number, found '" + cell + "'", "fix or remove the row");
    return value;
  }

  double number(std::size_t row, int column) const {
    const auto value = maybe_number(row, column);
    if (!value)
      throw InputError(SourceLocation{table_.path, table_.lines[row]}, table_.header[static_cast<std::size_t>(column)],
                       "the cell is empty", "fix or remove the row");
    return *value;
  }

  bool flag(std::size_t row, int column) const {
    const std::string cell = to_lower(text(row, column));
    return cell == "true" || cell == "1";
  }

  [[nodiscard]] std::size_t rows() const { return table_.rows.size(); }
  [[nodiscard]] int line(std::size_t row) const { return table_.lines[row]; }

 private:
  const CsvTable& table_;
};

void require_rows(const CsvTable& table, std::size_t used, const std::string& what) {
  if (table.rows.empty())
    throw InputError(SourceLocation{table.path}, "", "the table has a header but no rows",
                     "give a table with measurements");
  if (used == 0)
    throw InputError(SourceLocation{table.path}, "", "no row holds a usable " + what,
                     "check the table: every row lacks a positive time or size");
}

std::string first_input_type(const std::string& cell) {
  // "['c10::BFloat16', 'c10::BFloat16', 'Scalar']" -> "c10::BFloat16"
  const auto open = cell.find('\'');
  if (open == std::string::npos) return "";
  const auto close = cell.find('\'', open + 1);
  return close == std::string::npos ? "" : cell.substr(open + 1, close - open - 1);
}

// ---------------------------------------------------------------------------------------------------------------
// TraceLens per-op tables. Sizes: "GFLOPS_first" is the op's FLOPs in 10^9; "Data Moved (MB)_first" its minimal
// tensor traffic in MiB (TraceLens divides bytes by 2^20: GEMM 8944x1024x1024 bf16 moves 36.94 "MB" = 38.73e6 B).

void read_tracelens_ops(const CsvTable& table, KernelClass kernel_class, std::size_t input, const LoadOptions& options,
                        MeasurementSet& set) {
  const Cells cells(table);
  const int name = cells.column("name");
  const bool compute_class = kernel_class == KernelClass::gemm || kernel_class == KernelClass::attention;
  const int gflops = compute_class ? cells.column("GFLOPS_first") : -1;
  const int moved = cells.column("Data Moved (MB)_first");
  const int time = find_kernel_time_column(table);
  if (time < 0) (void)cells.column("Kernel Time (µs)_median");  // throws the missing-column error
  const int spec = find_column(table, "Compute Spec");
  const int input_type = find_column(table, "Input type_first");
  std::size_t used = 0;
  for (std::size_t r = 0; r < cells.rows(); ++r) {
    const auto us = cells.maybe_number(r, time);
    if (!us || *us <= 0.0) continue;
    KernelSample s;
    s.kernel_class = kernel_class;
    s.duration_s = *us * units::kMicrosecond;
    s.bytes = cells.maybe_number(r, moved).value_or(0.0) * units::kMiB;
    s.input = input;
    s.label = cells.text(r, name);
    if (compute_class) {
      s.flops = cells.maybe_number(r, gflops).value_or(0.0) * units::kGiga;
      if (spec >= 0) s.dtype = normalise_dtype(cells.text(r, spec));
      if (s.dtype.empty() && input_type >= 0) s.dtype = normalise_dtype(first_input_type(cells.text(r, input_type)));
      if (s.dtype.empty()) s.dtype = options.default_dtype;
      std::string shape;
      for (const char* dim : {"param: M", "param: N", "param: K"}) {
        const int c = find_column(table, dim);
        if (c >= 0) shape += (shape.empty() ? " " : "x") + cells.text(r, c);
      }
      s.label += shape;
      if (s.flops <= 0.0) continue;
    } else if (s.bytes <= 0.0) {
      continue;
    }
    set.kernels.push_back(std::move(s));
    ++used;
  }
  require_rows(table, used, compute_class ? "FLOP count and kernel time" : "byte count and kernel time");
}

// ---------------------------------------------------------------------------------------------------------------
// Vidur's per-op profile (vidur/profiling/mlp/mlp_impl.py, @ 7d47513): one transformer layer in fp16
// (mlp_wrapper.py: model.to(dtype=torch.float16)), op times from the PyTorch profiler in ms (CudaTimer with
// record_function: the sum of the op's kernel times). Shapes per tensor-parallel worker, head_dim = n_embd / n_head:
//   attn_pre_proj   QKV GEMM   [T, h] x [h, (nq + 2 nkv) hd / tp]
//   attn_post_proj  output     [T, nq hd / tp] x [nq hd / tp, h]
//   mlp_up_proj     up (+gate) [T, h] x [h, (gated ? 2 : 1) I / tp]
//   mlp_down_proj   down       [T, I / tp] x [I / tp, h]
//   mlp_act         SiluAndMul reads 2 T I/tp, writes T I/tp (GELU: reads and writes T I/tp)
//   input_layernorm, post_attention_layernorm   RMSNorm reads and writes T h (+ the h weights)
//   add             residual add: reads 2 T h, writes T h
//   attn_rope       rotary embedding of q and k in place: reads and writes T (nq + nkv) hd / tp
// The embedding lookup (emb) is left out: with tp > 1 it is several masking kernels.

void read_vidur_mlp(const CsvTable& table, std::size_t input, MeasurementSet& set) {
  const Cells cells(table);
  const int tokens_col = cells.column("num_tokens");
  const int tp_col = cells.column("num_tensor_parallel_workers");
  const int heads_col = cells.column("n_head");
  const int kv_col = cells.column("n_kv_head");
  const int embd_col = cells.column("n_embd");
  const int expanded_col = cells.column("n_expanded_embd");
  const int gated_col = cells.column("use_gated_mlp");
  constexpr double kElement = 2.0;  // fp16
  struct Op {
    const char* name;
    KernelClass kernel_class;
    int column;
  };
  std::vector<Op> ops;
  for (const auto& [name, kernel_class] :
       std::initializer_list<std::pair<const char*, KernelClass>>{{"attn_pre_proj", KernelClass::gemm},
                                                                  {"attn_post_proj", KernelClass::gemm},
                                                                  {"mlp_up_proj", KernelClass::gemm},
                                                                  {"mlp_down_proj", KernelClass::gemm},
                                                                  {"mlp_act", KernelClass::elementwise},
                                                                  {"add", KernelClass::elementwise},
                                                                  {"attn_rope", KernelClass::elementwise},
                                                                  {"input_layernorm", KernelClass::norm},
                                                                  {"post_attention_layernorm", KernelClass::norm}}) {
    const int c = find_column(table, std::string("time_stats.") + name + ".median");
    if (c >= 0) ops.push_back({name, kernel_class, c});
  }
  if (ops.empty()) (void)cells.column("time_stats.mlp_up_proj.median");
  std::size_t used = 0;
  for (std::size_t r = 0; r < cells.rows(); ++r) {
    const double t = cells.number(r, tokens_col);
    const double tp = cells.number(r, tp_col);
    const double nq = cells.number(r, heads_col);
    const double nkv = cells.number(r, kv_col);
    const double h = cells.number(r, embd_col);
    const double ffn = cells.number(r, expanded_col);
    const bool gated = cells.flag(r, gated_col);
    if (t <= 0.0 || tp <= 0.0 || nq <= 0.0 || h <= 0.0 || ffn <= 0.0)
      throw InputError(SourceLocation{table.path, cells.line(r)}, "num_tokens", "shape columns must be positive",
                       "fix the row");
    const double hd = h / nq;
    for (const Op& op : ops) {
      const auto ms = cells.maybe_number(r, op.column);
      if (!ms || *ms <= 0.0) continue;
      KernelSample s;
      s.kernel_class = op.kernel_class;
      s.duration_s = *ms * units::kMillisecond;
      s.input = input;
      const std::string name = op.name;
      double m = t, k = 0.0, n = 0.0;
      if (name == "attn_pre_proj") {
        k = h;
        n = (nq + 2.0 * nkv) * hd / tp;
      } else if (name == "attn_post_proj") {
        k = nq * hd / tp;
        n = h;
      } else if (name == "mlp_up_proj") {
        k = h;
        n = (gated ? 2.0 : 1.0) * ffn / tp;
      } else if (name == "mlp_down_proj") {
        k = ffn / tp;
        n = h;
      } else if (name == "mlp_act") {
        s.bytes = kElement * (gated ? 3.0 : 2.0) * t * ffn / tp;
      } else if (name == "add") {
        s.bytes = kElement * 3.0 * t * h;
      } else if (name == "attn_rope") {
        s.bytes = kElement * 2.0 * t * (nq + nkv) * hd / tp;
      } else {  // the two RMSNorms
        s.bytes = kElement * (2.0 * t * h + h);
      }
      if (op.kernel_class == KernelClass::gemm) {
        s.flops = 2.0 * m * n * k;
        s.bytes = kElement * (m * k + k * n + m * n);
        s.dtype = "fp16";
      }
      s.label = name + " T=" + cells.text(r, tokens_col) + " TP=" + cells.text(r, tp_col);
      set.kernels.push_back(std::move(s));
      ++used;
    }
  }
  require_rows(table, used, "op time");
}

std::optional<CollectiveKind> collective_from_text(std::string text) {
  text = to_lower(text);
  text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
  if (text.find("allreduce") != std::string::npos) return CollectiveKind::all_reduce;
  if (text.find("allgather") != std::string::npos) return CollectiveKind::all_gather;
  if (text.find("reducescatter") != std::string::npos) return CollectiveKind::reduce_scatter;
  if (text.find("alltoall") != std::string::npos) return CollectiveKind::all_to_all;
  if (text.find("broadcast") != std::string::npos) return CollectiveKind::broadcast;
  if (text.find("send") != std::string::npos || text.find("recv") != std::string::npos)
    return CollectiveKind::send_recv;
  return std::nullopt;
}

// Vidur's collective profile (vidur/profiling/collectives, @ 7d47513): `size` is already in bytes
// (collectives_wrapper.py reports size * 2 for its fp16 buffer), the time is the median NCCL kernel time in ms
// (CudaTimer with filter "nccl"). num_workers GPUs, devices_per_node of them per node.
void read_vidur_collective(const CsvTable& table, std::size_t input, MeasurementSet& set) {
  const Cells cells(table);
  const int workers = cells.column("num_workers");
  const int per_node = cells.column("devices_per_node");
  const int size = cells.column("size");
  const int kind_col = cells.column("collective");
  const std::string time_name = vidur_collective_time_column(table);
  const int time = cells.column(time_name.empty() ? "time_stats.all_reduce.median" : time_name);
  std::size_t used = 0;
  for (std::size_t r = 0; r < cells.rows(); ++r) {
    const auto kind = collective_from_text(cells.text(r, kind_col));
    if (!kind)
      throw InputError(SourceLocation{table.path, cells.line(r)}, "collective",
                       "unknown collective '" + cells.text(r, kind_col) + "'",
                       "use all_reduce, all_gather, reduce_scatter, broadcast or send_recv");
    const double n = cells.number(r, workers);
    const double d = cells.number(r, per_node);
    const double bytes = cells.number(r, size);
    const auto ms = cells.maybe_number(r, time);
    if (!ms || *ms <= 0.0 || bytes <= 0.0 || n < 2.0) continue;
    CollectiveSample s;
    s.kind = *kind;
    s.group_size = static_cast<int>(n);
    s.scope = n <= d ? LinkScope::intra_node : LinkScope::inter_node;
    s.bytes = bytes;
    s.duration_s = *ms * units::kMillisecond;
    s.input = input;
    set.collectives.push_back(s);
    ++used;
  }
  require_rows(table, used, "collective time");
}

double dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32" || dtype == "tf32") return 4.0;
  if (dtype == "bf16" || dtype == "fp16") return 2.0;
  if (dtype == "fp8") return 1.0;
  return 0.0;
}

// TraceLens' NCCL analysis (nccl_summary_implicit_sync.csv): per collective and message size, the communication
// latency with the start skew removed ("implicit sync": from the last rank's arrival to the end), in µs. The
// per-rank table (nccl_summary_long.csv) includes time spent waiting for late ranks and is not read.
void read_nccl_summary(const CsvTable& table, std::size_t input, const LoadOptions& options, MeasurementSet& set,
                       std::vector<std::string>& notes) {
  const Cells cells(table);
  const int name = cells.column("Collective name");
  const int dtype_col = cells.column("dtype");
  const int elements = cells.column("In msg nelems");
  const int group = cells.column("Group size");
  const int latency = cells.column("comm_latency_median");
  std::size_t used = 0;
  for (std::size_t r = 0; r < cells.rows(); ++r) {
    const auto kind = collective_from_text(cells.text(r, name));
    if (!kind) continue;
    const double element = dtype_bytes(normalise_dtype(cells.text(r, dtype_col)));
    if (element <= 0.0)
      throw InputError(SourceLocation{table.path, cells.line(r)}, "dtype",
                       "unknown element type '" + cells.text(r, dtype_col) + "'",
                       "use BFloat16, Half, Float or Float8 as TraceLens writes them");
    const double n = cells.number(r, group);
    const double in_elements = cells.number(r, elements);
    const auto us = cells.maybe_number(r, latency);
    if (!us || *us <= 0.0 || in_elements <= 0.0 || n < 2.0) continue;
    CollectiveSample s;
    s.kind = *kind;
    s.group_size = static_cast<int>(n);
    // chopsim's size convention (kernel_class.hpp): all-gather counts the gathered output, the others the input.
    s.bytes = in_elements * element * (*kind == CollectiveKind::all_gather ? n : 1.0);
    s.scope = s.group_size <= options.gpus_per_node ? LinkScope::intra_node : LinkScope::inter_node;
    s.duration_s = *us * units::kMicrosecond;
    s.input = input;
    set.collectives.push_back(s);
    ++used;
  }
  notes.push_back("the table does not name nodes: groups of up to " + std::to_string(options.gpus_per_node) +
                  " GPUs (--gpus-per-node) are taken as intra-node");
  require_rows(table, used, "collective latency");
}

struct KindRule {
  const char* name;
  const char* columns;
  std::function<bool(const CsvTable&)> matches;
};

const std::vector<KindRule>& rules() {
  static const std::vector<KindRule> kRules = {
      {"tracelens-gemm", "param: M, param: N, param: K, GFLOPS_first, Data Moved (MB)_first, Kernel Time (µs)_median",
       [](const CsvTable& t) {
         return has_all(t, {"param: M", "param: N", "param: K", "GFLOPS_first"});
       }},
      {"tracelens-sdpa", "param: N_Q, param: d_h_qk, GFLOPS_first, Data Moved (MB)_first, Kernel Time (µs)_median",
       [](const CsvTable& t) {
         return has_all(t, {"param: N_Q", "param: d_h_qk", "GFLOPS_first"});
       }},
      {"tracelens-elementwise", "param: shape_in1 or param: op_shape, Data Moved (MB)_first, Kernel Time (µs)_median",
       [](const CsvTable& t) {
         return (find_column(t, "param: shape_in1") >= 0 || find_column(t, "param: op_shape") >= 0) &&
                find_column(t, "Data Moved (MB)_first") >= 0;
       }},
      {"tracelens-reduce", "param: reduce_type, Data Moved (MB)_first, Kernel Time (µs)_median",
       [](const CsvTable& t) {
         return has_all(t, {"param: reduce_type", "Data Moved (MB)_first"});
       }},
      {"vidur-mlp",
       "num_tokens, num_tensor_parallel_workers, n_head, n_kv_head, n_embd, n_expanded_embd, "
       "use_gated_mlp, time_stats.<op>.median",
       [](const CsvTable& t) {
         return has_all(t, {"num_tokens", "num_tensor_parallel_workers", "n_embd"});
       }},
      {"vidur-collective", "num_workers, devices_per_node, size, collective, time_stats.<collective>.median",
       [](const CsvTable& t) {
         return has_all(t, {"num_workers", "devices_per_node", "size", "collective"}) &&
                !vidur_collective_time_column(t).empty();
       }},
      {"tracelens-nccl-summary", "Collective name, dtype, In msg nelems, Group size, comm_latency_median",
       [](const CsvTable& t) {
         return has_all(t, {"Collective name", "In msg nelems", "Group size", "comm_latency_median"});
       }},
  };
  return kRules;
}

}  // namespace

std::string normalise_dtype(const std::string& text) {
  const std::string t = to_lower(text);
  if (t.find("bf16") != std::string::npos || t.find("bfloat16") != std::string::npos) return "bf16";
  if (t.find("fp8") != std::string::npos || t.find("float8") != std::string::npos ||
      t.find("e4m3") != std::string::npos || t.find("e5m2") != std::string::npos)
    return "fp8";
  if (t.find("tf32") != std::string::npos) return "tf32";
  if (t.find("fp16") != std::string::npos || t.find("half") != std::string::npos || t == "float16") return "fp16";
  if (t.find("fp32") != std::string::npos || t == "float" || t == "float32" || t.ends_with("::float")) return "fp32";
  return "";
}

std::string table_kind(const CsvTable& table) {
  for (const auto& rule : rules())
    if (rule.matches(table)) return rule.name;
  return "";
}

std::vector<std::string> table_kind_descriptions() {
  std::vector<std::string> lines;
  for (const auto& rule : rules()) lines.push_back(std::string(rule.name) + " (columns " + rule.columns + ")");
  return lines;
}

void read_table(const CsvTable& table, const std::string& kind, std::size_t input, const LoadOptions& options,
                MeasurementSet& set) {
  std::vector<std::string>& notes = set.inputs[input].notes;
  if (kind == "tracelens-gemm") {
    read_tracelens_ops(table, KernelClass::gemm, input, options, set);
  } else if (kind == "tracelens-sdpa") {
    read_tracelens_ops(table, KernelClass::attention, input, options, set);
  } else if (kind == "tracelens-elementwise") {
    read_tracelens_ops(table, KernelClass::elementwise, input, options, set);
  } else if (kind == "tracelens-reduce") {
    read_tracelens_ops(table, KernelClass::reduction, input, options, set);
  } else if (kind == "vidur-mlp") {
    read_vidur_mlp(table, input, set);
    notes.push_back(
        "Vidur op profile: fp16, times in ms; GEMM shapes from n_embd, n_head, n_kv_head, "
        "n_expanded_embd and the TP degree; emb left out");
  } else if (kind == "vidur-collective") {
    read_vidur_collective(table, input, set);
    notes.push_back(
        "Vidur collective profile: size in bytes, median NCCL kernel time in ms; inter-node when "
        "num_workers > devices_per_node");
  } else if (kind == "tracelens-nccl-summary") {
    read_nccl_summary(table, input, options, set, notes);
  } else {
    throw ModelError("read_table: unknown kind " + kind);
  }
}

}  // namespace chopsim::calibration_detail
