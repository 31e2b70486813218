// results.csv of `chopsim sweep` and `chopsim study`, read back for their report pages.

#include <algorithm>
#include <fstream>

#include "chopsim/common/error.hpp"
#include "report_pages.hpp"

namespace chopsim::report_detail {

namespace fs = std::filesystem;

/// One CSV line (RFC 4180 quoting, as results.csv writes it).
std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

ResultsCsv read_results_csv(const fs::path& file, const std::string& writer) {
  ResultsCsv table;
  table.file = file;
  table.writer = writer;
  std::ifstream in(file);
  std::string line;
  if (!std::getline(in, line))
    throw InputError({file.string()}, "", "an empty results.csv", "pass the --out folder of a finished " + writer);
  table.header = split_csv_line(line);
  int line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    std::vector<std::string> fields = split_csv_line(line);
    if (fields.size() != table.header.size())
      throw InputError({file.string(), line_number}, "",
                       "a row of " + std::to_string(fields.size()) + " fields under a header of " +
                           std::to_string(table.header.size()),
                       "pass results.csv as " + writer + " wrote it");
    table.rows.push_back(std::move(fields));
  }
  return table;
}

std::size_t ResultsCsv::column(const std::string& name) const {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end())
    throw InputError({file.string(), 1}, name, "results.csv has no '" + name + "' column",
                     "pass the --out folder of " + writer + ", as it wrote it");
  return static_cast<std::size_t>(it - header.begin());
}

}  // namespace chopsim::report_detail
