#include "html_report.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "chopsim/common/error.hpp"
#include "chopsim/common/json_writer.hpp"

namespace chopsim::report_detail {

std::string json_number(double value) { return JsonWriter::format_number(value); }

std::string json_string(std::string_view text) {
  // JsonWriter's escaping, and "</" as "<\/" so that the text cannot close the <script> element it sits in.
  std::string escaped = JsonWriter::escape(text);
  for (std::size_t at = escaped.find("</"); at != std::string::npos; at = escaped.find("</", at + 3))
    escaped.replace(at, 2, "<\\/");
  return "\"" + escaped + "\"";
}

std::string number_cell(double value, const char* format) {
  if (!std::isfinite(value)) return "<td class=\"n\">-</td>";
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), format, value);
  return std::string("<td class=\"n\">") + text.data() + "</td>";
}

std::string axis_title(const std::string& title) {
  return "{\"title\":{\"display\":true,\"text\":" + json_string(title) + "}}";
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string chartjs_source() {
  const std::filesystem::path path = CHOPSIM_CHARTJS;
  std::ifstream in(path, std::ios::binary);
  if (path.empty() || !in)
    throw InputError({"chopsim report"}, "",
                     "Chart.js was not found when chopsim was built (" +
                         (path.empty() ? std::string("/usr/share/javascript/chart.js/chart.min.js") : path.string()) +
                         ")",
                     "install Debian's libjs-chart.js (apt-get install libjs-chart.js), then build again");
  std::string source{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // Inlined in a <script> element: a "</script" inside would end it early.
  if (source.find("</script") != std::string::npos)
    throw InputError({path.string()}, "", "Chart.js contains '</script', which cannot be inlined",
                     "use Debian's libjs-chart.js 3.9");
  return source;
}

std::string page(const std::string& title, const std::string& head_html, const std::vector<Chart>& charts) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html_escape(title) +
         "</title>\n<style>\n"
         "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;"
         "padding:0 1em;color:#222}\n"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 10px;text-align:left}"
         "th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
         "section{margin:2em 0}p.note{color:#555;font-size:90%}canvas{max-height:420px}\n"
         "</style>\n</head>\n<body>\n<h1>" +
         html_escape(title) + "</h1>\n" + head_html;
  for (const Chart& chart : charts)
    out += "<section>\n<h2>" + html_escape(chart.title) + "</h2>\n" + chart.controls + "<canvas id=\"" + chart.id +
           "\"></canvas>\n" + (chart.note.empty() ? "" : "<p class=\"note\">" + html_escape(chart.note) + "</p>\n") +
           "</section>\n";
  // The charts' configs as one JSON object in its own element (tests and scripts read it with any JSON parser).
  out += "<script type=\"application/json\" id=\"chopsim-charts\">\n{";
  for (std::size_t i = 0; i < charts.size(); ++i)
    out += std::string(i ? ",\n" : "\n") + json_string(charts[i].id) + ": " + charts[i].config;
  out += "\n}\n</script>\n<script>\n" + chartjs_source() +
         "\n</script>\n<script>\n"
         "const chopsimCharts = JSON.parse(document.getElementById(\"chopsim-charts\").textContent);\nfor (const [id, "
         "config] of Object.entries(chopsimCharts)) new Chart(document.getElementById(id), config);\n"
         // Pickers (select.trace-picker): show one GPU's traces, read from the JSON element data-source names, in
         // the charts data-charts lists, instead of the GPUs drawn (datasets with a "gpu" field); the first option
         // (value "") brings those back.
         "for (const picker of document.querySelectorAll(\"select.trace-picker\")) {\n"
         "  const traces = JSON.parse(document.getElementById(picker.dataset.source).textContent);\n"
         "  picker.addEventListener(\"change\", () => {\n"
         "    for (const id of picker.dataset.charts.split(\",\")) {\n"
         "      const chart = Chart.getChart(id);\n"
         "      if (!chart) continue;\n"
         "      chart.data.datasets = chart.data.datasets.filter(d => !d.picked);\n"
         "      for (const d of chart.data.datasets) if (d.gpu !== undefined) d.hidden = picker.value !== \"\";\n"
         "      const picked = (traces[picker.value] || {})[id];\n"
         "      if (picker.value !== \"\" && picked)\n"
         "        chart.data.datasets.unshift({label: picker.value, picked: true, data: picked, borderColor: "
         "\"#000000\", borderWidth: 1.5, pointRadius: 0, stepped: true});\n"
         "      chart.update();\n"
         "    }\n"
         "  });\n"
         "}\n"
         // Tables of class "sortable": a click on a heading sorts the rows by that column (numbers as numbers),
         // a second click reverses the order.
         "for (const table of document.querySelectorAll(\"table.sortable\")) {\n"
         "  table.querySelectorAll(\"th\").forEach((th, column) => {\n"
         "    th.style.cursor = \"pointer\";\n"
         "    th.addEventListener(\"click\", () => {\n"
         "      const ascending = th.dataset.ascending !== \"1\";\n"
         "      th.dataset.ascending = ascending ? \"1\" : \"0\";\n"
         "      const rows = Array.from(table.querySelectorAll(\"tr\")).slice(1);\n"
         "      rows.sort((a, b) => {\n"
         "        const x = a.children[column].textContent, y = b.children[column].textContent;\n"
         "        const nx = parseFloat(x), ny = parseFloat(y);\n"
         "        const order = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);\n"
         "        return ascending ? order : -order;\n"
         "      });\n"
         "      for (const row of rows) row.parentNode.appendChild(row);\n"
         "    });\n"
         "  });\n"
         "}\n"
         "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace chopsim::report_detail
