#include "kineto_events.hpp"

#include <algorithm>

namespace chopsim::detail::kineto {

using simdjson::ondemand::object;
using simdjson::ondemand::value;

bool is_memory_bound_class(KernelClass c) {
  return c == KernelClass::elementwise || c == KernelClass::norm || c == KernelClass::reduction ||
         c == KernelClass::memcpy || c == KernelClass::optimizer || c == KernelClass::other;
}

double collective_size(CollectiveKind kind, const CollectiveArgs& args, double element_bytes) {
  const double in = static_cast<double>(args.in_nelems), out = static_cast<double>(args.out_nelems);
  double elements = -1.0;
  switch (kind) {
    case CollectiveKind::all_gather:
      elements = out;  // the gathered output (CollectiveKind's convention)
      break;
    case CollectiveKind::send_recv:
      elements = std::max(in, out);
      break;
    default:
      elements = in;
  }
  if (elements < 0) return kUnknown;
  return elements * element_bytes;
}

std::optional<std::string_view> peek_string_field(std::string_view element, std::string_view quoted_key,
                                                  std::size_t window) {
  const std::string_view head = element.substr(0, std::min(window, element.size()));
  const auto at = head.find(quoted_key);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t i = at + quoted_key.size();
  while (i < element.size() && (element[i] == ' ' || element[i] == ':' || element[i] == '\n' || element[i] == '\t'))
    ++i;
  if (i >= element.size() || element[i] != '"') return std::nullopt;
  const auto end = element.find('"', i + 1);
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view text = element.substr(i + 1, end - i - 1);
  if (text.find('\\') != std::string_view::npos) return std::nullopt;
  return text;
}

bool read_event_header(object& event, Event& out) {
  bool has_args = false;
  for (auto field : event) {
    const std::string_view key = raw_key(field);
    value v = field.value();
    if (key == "ph") {
      out.ph = scalar_text(v);
    } else if (key == "cat") {
      out.cat = scalar_text(v);
    } else if (key == "name") {
      out.name = scalar_text(v);
      out.name_escaped = out.name.find('\\') != std::string_view::npos;
    } else if (key == "ts") {
      out.ts = scalar_text(v);
    } else if (key == "dur") {
      out.dur = scalar_text(v);
    } else if (key == "pid") {
      out.pid_text = scalar_text(v);
    } else if (key == "tid") {
      out.tid_text = scalar_text(v);
    } else if (key == "args") {
      has_args = true;
    }
  }
  return has_args;
}

std::string_view event_name(object& event, const Event& e) {
  if (!e.name_escaped) return e.name;
  std::string_view name;
  if (event.find_field_unordered("name").get_string().get(name) != simdjson::SUCCESS) return e.name;
  return name;
}

void read_dims(value v, std::vector<OpTensor>& inputs) {
  std::size_t i = 0;
  for (value element : v.get_array()) {
    if (i >= inputs.size()) inputs.emplace_back();
    OpTensor& tensor = inputs[i++];
    tensor.dims.clear();
    tensor.list_elements = 0.0;
    if (element.type() != simdjson::ondemand::json_type::array) continue;
    for (value d : element.get_array()) {
      if (d.type() == simdjson::ondemand::json_type::array) {  // TensorList: nested dims, not one tensor
        tensor.dims.clear();
        double elements = 1.0;
        for (value n : d.get_array())
          if (n.type() == simdjson::ondemand::json_type::number) elements *= static_cast<double>(n.get_int64());
        tensor.list_elements += elements;
        continue;
      }
      if (d.type() != simdjson::ondemand::json_type::number) {
        tensor.dims.clear();
        break;
      }
      tensor.dims.push_back(d.get_int64());
    }
  }
}

void read_types(value v, std::vector<OpTensor>& inputs) {
  std::size_t i = 0;
  for (value element : v.get_array()) {
    if (i >= inputs.size()) inputs.emplace_back();
    inputs[i].element_bytes = kUnknown;
    if (auto text = json_string(element)) inputs[i].element_bytes = dtype_bytes(*text).value_or(kUnknown);
    ++i;
  }
}

void read_concrete(value v, std::vector<std::string>& concrete) {
  for (value element : v.get_array()) {
    auto text = json_string(element);
    concrete.emplace_back(text ? *text : std::string_view());
  }
}

}  // namespace chopsim::detail::kineto
