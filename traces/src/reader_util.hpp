#pragma once
// Small helpers shared by the readers (not part of the public interface).

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chopsim/traces/reader.hpp"

namespace chopsim::detail {

/// Parses a JSON number token in microseconds (or, with `token_in_ns`, nanoseconds) into integer nanoseconds
/// without going through a double when the token is plain decimal (Kineto writes "4458676981028.392" and
/// "1712195495505583.0": up to 19 significant digits that a double would round). Returns nullopt if the token is
/// not a number.
std::optional<std::int64_t> parse_time_as_ns(std::string_view token, bool token_in_ns = false);
inline std::optional<std::int64_t> parse_microseconds_as_ns(std::string_view token) {
  return parse_time_as_ns(token, false);
}
/// later - earlier, in nanoseconds, without signed overflow: raw timestamps of a corrupt file can be anywhere in
/// int64 (INT64_MIN, 19-digit values), where the difference does not fit; it is then taken in doubles, far beyond any
/// real trace's span, and read_trace_checked refuses the record.
inline double ns_interval(std::int64_t later, std::int64_t earlier) {
  std::int64_t difference = 0;
  if (__builtin_sub_overflow(later, earlier, &difference))
    return static_cast<double>(later) - static_cast<double>(earlier);
  return static_cast<double>(difference);
}
/// a + b nanoseconds, saturated at the ends of int64 (a corrupt start plus a corrupt duration).
inline std::int64_t ns_sum_saturated(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

/// Digits before the decimal point of a number token (17 or more means nanoseconds since the epoch: as
/// microseconds such a value would be after the year 5000).
std::size_t integer_digits(std::string_view token);

/// The key of an object field as it appears in the JSON text (no unescaping: trace keys have no escapes). Cheaper
/// than unescaped_key(), which copies every key.
template <class Field>
std::string_view raw_key(Field& field) {
  const char* start = nullptr;
  if (field.key().raw().get(start) != simdjson::SUCCESS || start == nullptr) return {};
  const void* end = std::memchr(start, '"', 4096);
  return end ? std::string_view(start, static_cast<std::size_t>(static_cast<const char*>(end) - start))
             : std::string_view();
}
/// The text of a scalar value without consuming it: a number's digits, a string's content between the quotes
/// (escapes left as written). Empty for objects and arrays.
std::string_view scalar_text(simdjson::ondemand::value value);
/// Integer from scalar_text ("123", "\"2560\""); nullopt if it is not an integer.
std::optional<std::int64_t> text_int(std::string_view text);

/// Integer value of a JSON number or numeric string ("2560"); nullopt otherwise.
std::optional<std::int64_t> json_int(simdjson::ondemand::value value);
/// Double value of a JSON number or numeric string; nullopt otherwise.
std::optional<double> json_double(simdjson::ondemand::value value);
/// String value (unescaped), or nullopt.
std::optional<std::string_view> json_string(simdjson::ondemand::value value);

/// Bytes per element of a PyTorch dtype as Kineto writes it in "Input type" ("c10::BFloat16", "float") or in
/// record_param_comms' "dtype" ("BFloat16", "Float"); nullopt if unknown.
std::optional<double> dtype_bytes(std::string_view dtype);

/// Parses "[0, 1, 2]" into the canonical text "[0, 1, 2]" (whitespace normalised); returns the input if it is not a
/// list of integers.
std::string canonical_rank_list(std::string_view text);

// Factories of the built-in readers (one .cpp each).
std::unique_ptr<TraceReader> make_kineto_reader();
std::unique_ptr<TraceReader> make_rocprof_json_reader();
std::unique_ptr<TraceReader> make_rocprof_csv_reader();
std::unique_ptr<TraceReader> make_nsys_sqlite_reader();
std::unique_ptr<TraceReader> make_nvidia_smi_reader();
std::unique_ptr<TraceReader> make_dcgm_dmon_reader();
std::unique_ptr<TraceReader> make_amd_smi_reader();

// Probes for format detection.
bool probe_kineto(const FilePreview& preview);
bool probe_rocprof_json(const FilePreview& preview);
bool probe_rocprof_csv(const FilePreview& preview);
bool probe_nsys_sqlite(const FilePreview& preview);
bool probe_nvidia_smi(const FilePreview& preview);
bool probe_dcgm_dmon(const FilePreview& preview);
bool probe_amd_smi(const FilePreview& preview);

}  // namespace chopsim::detail
