// validation.csv: the validation table as data (one row per measured case), for `chopsim report` and scripts.

#include <ostream>

#include "chopsim/experiments/validation.hpp"
#include "csv_text.hpp"
#include "validation_internal.hpp"

namespace chopsim {

namespace {

/// A prediction's value and error columns: empty when it was not made.
std::string prediction_columns(const ValidationCase& c, const ValidationPrediction& p) {
  if (!p.ok) return ",";
  return detail::csv_number(validation_detail::display_value(c.metric, p.predicted)) + "," +
         detail::csv_number(p.relative_error);
}

}  // namespace

void write_validation_csv(std::ostream& out, const std::vector<ValidationResult>& results) {
  out << "case,group,metric_unit,measured,predicted,error,calibrated,calibrated_error,status,reason,source\n";
  for (const ValidationResult& r : results) {
    const ValidationCase& c = r.validation_case;
    std::string status = "ok", reason;
    if (!c.not_modelled.empty()) {
      status = "not_modelled";
      reason = c.not_modelled;
    } else if (!r.uncalibrated.ok) {
      status = "failed";
      reason = r.uncalibrated.failure;
    }
    out << detail::csv_field(c.id) << ',' << detail::csv_field(c.group) << ','
        << detail::csv_field(validation_detail::metric_unit(c.metric)) << ','
        << detail::csv_number(validation_detail::display_value(c.metric, c.measured)) << ','
        << prediction_columns(c, r.uncalibrated) << ','
        << (r.has_profile() ? prediction_columns(c, r.calibrated) : std::string(",")) << ',' << status << ','
        << detail::csv_field(reason) << ',' << detail::csv_field(c.source) << '\n';
  }
}

}  // namespace chopsim
