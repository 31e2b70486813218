// Format registry, detection and the helpers shared by the readers.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "byte_source.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "reader_util.hpp"

namespace chopsim {

void TraceFormatRegistry::add(TraceFormat format) {
  for (const auto& existing : formats_)
    if (existing.name == format.name) throw ModelError("trace format '" + format.name + "' registered twice");
  formats_.push_back(std::move(format));
}

const TraceFormat& TraceFormatRegistry::get(std::string_view name) const {
  for (const auto& format : formats_)
    if (format.name == name) return format;
  throw UnknownNameError("trace format", std::string(name), names());
}

std::vector<std::string> TraceFormatRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& format : formats_) out.push_back(format.name);
  return out;
}

const TraceFormat& TraceFormatRegistry::detect(const FilePreview& preview) const {
  for (const auto& format : formats_)
    if (format.probe(preview)) return format;
  std::string known;
  for (const auto& format : formats_) known += "\n  " + format.name + ": " + format.description;
  const std::string problem = preview.head.empty() ? "the file is empty" : "the file is in no format chopsim reads";
  throw InputError({preview.path.string()}, "", problem + "; supported formats:" + known,
                   "pass a trace in one of these formats, or name the format with --format if detection failed");
}

FilePreview read_preview(const std::filesystem::path& path) {
  if (!std::filesystem::is_regular_file(path))
    throw InputError({path.string()}, "", std::filesystem::exists(path) ? "not a regular file" : "no such file",
                     "check the path");
  FilePreview preview;
  preview.path = path;
  preview.gzip = detail::is_gzip_file(path);
  auto source = detail::ByteSource::open(path);
  constexpr std::size_t kPreview = 64 * 1024;
  preview.head.resize(kPreview);
  std::size_t have = 0;
  try {
    while (have < kPreview) {
      const std::size_t got = source->read(preview.head.data() + have, kPreview - have);
      if (got == 0) break;
      have += got;
    }
  } catch (const InputError&) {
    // A truncated gzip file still has a readable start: detection uses it and the reader reports the truncation.
    // When nothing could be read, the gzip error is the answer ("the file is empty" would mislead).
    if (have == 0) throw;
  }
  preview.head.resize(have);
  return preview;
}

void register_builtin_trace_formats(TraceFormatRegistry& registry) {
  using namespace detail;
  // Order matters where probes overlap: the most specific first.
  registry.add({"nsys-sqlite",
                "Nsight Systems SQLite export (nsys export --type sqlite): CUPTI kernels, memcpy, memset, NVTX",
                probe_nsys_sqlite, make_nsys_sqlite_reader});
  registry.add({"rocprofv3-json", "rocprofv3 / rocprofiler-sdk JSON (--output-format json): kernel dispatches, agents",
                probe_rocprof_json, make_rocprof_json_reader});
  registry.add(
      {"kineto", "PyTorch profiler / Kineto Chrome-trace JSON, plain or .gz", probe_kineto, make_kineto_reader});
  registry.add({"rocprofv3-csv", "rocprofv3 kernel trace CSV (--kernel-trace --output-format csv)", probe_rocprof_csv,
                make_rocprof_csv_reader});
  registry.add({"nvidia-smi", "nvidia-smi --query-gpu=... --format=csv [-l N] telemetry", probe_nvidia_smi,
                make_nvidia_smi_reader});
  registry.add({"dcgm-dmon", "DCGM dcgmi dmon text output (-e fields)", probe_dcgm_dmon, make_dcgm_dmon_reader});
  registry.add({"amd-smi", "AMD rocm-smi / amd-smi metric CSV telemetry (power, clocks, temperature, use)",
                probe_amd_smi, make_amd_smi_reader});
}

namespace detail {

std::size_t integer_digits(std::string_view token) {
  std::size_t i = 0;
  while (i < token.size() && (token[i] == ' ' || token[i] == '"' || token[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i + digits < token.size() && std::isdigit(static_cast<unsigned char>(token[i + digits]))) ++digits;
  return digits;
}

std::optional<std::int64_t> parse_time_as_ns(std::string_view token, bool token_in_ns) {
  while (!token.empty() &&
         (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t'))
    token.remove_suffix(1);
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"') token = token.substr(1, token.size() - 2);
  if (token.empty()) return std::nullopt;
  bool negative = false;
  std::size_t i = 0;
  if (token[0] == '-') {
    negative = true;
    ++i;
  }
  const std::int64_t scale = token_in_ns ? 1 : 1000;
  const int kept_decimals = token_in_ns ? 0 : 3;  // fraction digits that are whole nanoseconds
  std::int64_t whole = 0;
  std::size_t digits = 0;
  bool overflow = false;
  for (; i < token.size() && std::isdigit(static_cast<unsigned char>(token[i])) && digits < 19; ++i, ++digits) {
    // 19 digits can exceed INT64_MAX ("9223372036854775808", found by fuzz_kineto in CI): stop before the
    // multiplication overflows and let the exponent path below refuse or round the value.
    const int digit = token[i] - '0';
    if (whole > (std::numeric_limits<std::int64_t>::max() - digit) / 10) {
      overflow = true;
      break;
    }
    whole = whole * 10 + digit;
  }
  // Plain decimal that fits int64 nanoseconds: exact integer arithmetic.
  bool plain = digits > 0 && !overflow && whole <= (std::int64_t{9'000'000'000'000'000'000} / scale);
  std::int64_t fraction_ns = 0;
  if (plain && i < token.size() && token[i] == '.') {
    ++i;
    std::int64_t place = scale / 10;
    std::size_t fraction_digits = 0;
    for (; i < token.size() && std::isdigit(static_cast<unsigned char>(token[i])); ++i, ++fraction_digits) {
      if (static_cast<int>(fraction_digits) < kept_decimals) {
        fraction_ns += (token[i] - '0') * place;
        place /= 10;
      } else if (static_cast<int>(fraction_digits) == kept_decimals && token[i] >= '5') {
        ++fraction_ns;  // round half up on the first dropped digit
      }
    }
    if (fraction_digits == 0) plain = false;
  }
  if (plain && i == token.size()) {
    const std::int64_t ns = whole * scale + fraction_ns;
    return negative ? -ns : ns;
  }
  // Exponent form: through a double (what the file's precision allows).
  double value = 0.0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size()) return std::nullopt;
  value *= static_cast<double>(scale);
  if (!(std::fabs(value) < 9.2e18)) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(value));
}

std::string_view scalar_text(simdjson::ondemand::value value) {
  std::string_view token = value.raw_json_token();
  while (!token.empty() &&
         (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t'))
    token.remove_suffix(1);
  if (token.empty() || token.front() == '{' || token.front() == '[') return {};
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"') token = token.substr(1, token.size() - 2);
  return token;
}

std::optional<std::int64_t> text_int(std::string_view text) {
  std::int64_t integer = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), integer);
  if (ec == std::errc() && end == text.data() + text.size()) return integer;
  double number = 0.0;
  auto [end2, ec2] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec2 == std::errc() && end2 == text.data() + text.size() && std::fabs(number) < 9.2e18)
    return static_cast<std::int64_t>(std::llround(number));
  return std::nullopt;
}

std::optional<std::int64_t> json_int(simdjson::ondemand::value value) {
  simdjson::ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return std::nullopt;
  if (type == simdjson::ondemand::json_type::number) {
    std::int64_t integer = 0;
    if (value.get_int64().get(integer) == simdjson::SUCCESS) return integer;
    double number = 0.0;
    if (value.get_double().get(number) == simdjson::SUCCESS && std::fabs(number) < 9.2e18)
      return static_cast<std::int64_t>(std::llround(number));
    return std::nullopt;
  }
  if (type == simdjson::ondemand::json_type::string) {
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
    std::int64_t integer = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), integer);
    if (ec == std::errc() && end == text.data() + text.size()) return integer;
  }
  return std::nullopt;
}

std::optional<double> json_double(simdjson::ondemand::value value) {
  simdjson::ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS) return std::nullopt;
  if (type == simdjson::ondemand::json_type::number) {
    double number = 0.0;
    if (value.get_double().get(number) == simdjson::SUCCESS) return number;
    return std::nullopt;
  }
  if (type == simdjson::ondemand::json_type::string) {
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
    double number = 0.0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec == std::errc() && end == text.data() + text.size()) return number;
  }
  return std::nullopt;
}

std::optional<std::string_view> json_string(simdjson::ondemand::value value) {
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
  return text;
}

std::optional<double> dtype_bytes(std::string_view dtype) {
  std::string d = to_lower(dtype);
  if (d.starts_with("c10::")) d = d.substr(5);
  if (d == "float" || d == "float32" || d == "int" || d == "int32" || d == "unsigned int" || d == "complexhalf")
    return 4.0;
  if (d == "bfloat16" || d == "half" || d == "float16" || d == "short" || d == "int16" || d == "short int") return 2.0;
  if (d == "double" || d == "float64" || d == "long" || d == "long int" || d == "int64" || d == "complexfloat")
    return 8.0;
  if (d.starts_with("float8") || d == "byte" || d == "char" || d == "bool" || d == "unsigned char" ||
      d == "signed char" || d == "uint8" || d == "int8")
    return 1.0;
  return std::nullopt;
}

std::string canonical_rank_list(std::string_view text) {
  std::string out = "[";
  bool first = true;
  std::size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '[')) ++i;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i) break;
    if (!first) out += ", ";
    out.append(text.substr(i, j - i));
    first = false;
    i = j;
    while (i < text.size() && (text[i] == ',' || text[i] == ' ')) ++i;
  }
  if (i < text.size() && text[i] == ']' && i + 1 == text.size()) return out + "]";
  return std::string(text);
}

}  // namespace detail
}  // namespace chopsim
