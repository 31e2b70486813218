#pragma once
// Building blocks of the report pages: JSON text for chart configs, HTML escaping, the page frame with Chart.js.

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chopsim::report_detail {

/// Shortest text that reads back as the same double; "null" for NaN and infinities (JSON has neither).
[[nodiscard]] std::string json_number(double value);
/// A JSON string literal, also safe inside an HTML <script> ("</" is written "<\/").
[[nodiscard]] std::string json_string(std::string_view text);
[[nodiscard]] std::string html_escape(std::string_view text);
/// A right-aligned table cell with `value` printed by the printf `format`; "-" for NaN and infinities (a figure the
/// row does not have).
[[nodiscard]] std::string number_cell(double value, const char* format);
/// A Chart.js axis options object with a displayed title.
[[nodiscard]] std::string axis_title(const std::string& title);

/// One chart: a heading, a short note and a Chart.js config (JSON text).
struct Chart {
  Chart(std::string id_, std::string title_, std::string note_, std::string config_, std::string controls_ = {})
      : id(std::move(id_)),
        title(std::move(title_)),
        note(std::move(note_)),
        config(std::move(config_)),
        controls(std::move(controls_)) {}
  std::string id;
  std::string title;
  std::string note;
  std::string config;
  std::string controls;  ///< HTML placed above the chart (a picker and its data), or empty
};

/// The whole page: `title`, the HTML of `head_html` (tables), then every chart, with Chart.js inlined.
[[nodiscard]] std::string page(const std::string& title, const std::string& head_html,
                               const std::vector<Chart>& charts);

/// Chart.js' source (InputError naming the package when the build did not find it).
[[nodiscard]] std::string chartjs_source();

}  // namespace chopsim::report_detail
