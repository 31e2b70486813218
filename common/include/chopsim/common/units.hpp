#pragma once
// chopsim computes in SI units: seconds, bytes, FLOP, FLOP/s, bytes/s, watts, hertz, joules, kelvin
// differences (temperatures are stated in degrees Celsius where they are absolute, and say so).
// Conversions happen at the boundary (config decoding, report writing) with these constants.

namespace chopsim::units {

inline constexpr double kKilo = 1e3;
inline constexpr double kMega = 1e6;
inline constexpr double kGiga = 1e9;
inline constexpr double kTera = 1e12;
inline constexpr double kPeta = 1e15;

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * kKiB;
inline constexpr double kGiB = 1024.0 * kMiB;
inline constexpr double kTiB = 1024.0 * kGiB;

inline constexpr double kNanosecond = 1e-9;
inline constexpr double kMicrosecond = 1e-6;
inline constexpr double kMillisecond = 1e-3;

}  // namespace chopsim::units
