#include "chopsim/traces/records.hpp"

#include <limits>

#include "chopsim/common/error.hpp"

namespace chopsim {

std::vector<int> process_group_ranks(std::string_view text) {
  std::vector<int> ranks;
  long long value = 0;
  bool in_number = false;
  for (const char c : text) {
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
      in_number = true;
      if (value > std::numeric_limits<int>::max()) return {};
    } else if (in_number) {
      ranks.push_back(static_cast<int>(value));
      value = 0;
      in_number = false;
    }
  }
  if (in_number) ranks.push_back(static_cast<int>(value));
  return ranks;
}

StringTable::StringTable() { intern(""); }

StringTable::StringTable(const StringTable& other) : strings_(other.strings_) { rebuild_index(); }

StringTable& StringTable::operator=(const StringTable& other) {
  if (this != &other) {
    strings_ = other.strings_;
    rebuild_index();
  }
  return *this;
}

void StringTable::rebuild_index() {
  index_.clear();
  for (std::size_t i = 0; i < strings_.size(); ++i) index_.emplace(strings_[i], static_cast<StringId>(i));
}

StringId StringTable::intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  const auto id = static_cast<StringId>(strings_.size());
  strings_.emplace_back(text);
  index_.emplace(strings_.back(), id);
  return id;
}

std::optional<StringId> StringTable::find(std::string_view text) const {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  return std::nullopt;
}

const std::string& StringTable::at(StringId id) const {
  if (id >= strings_.size()) throw ModelError("string id " + std::to_string(id) + " out of range");
  return strings_[id];
}

std::string_view to_string(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kernel:
      return "kernel";
    case ActivityKind::memcpy:
      return "memcpy";
    case ActivityKind::memset:
      return "memset";
  }
  return "kernel";
}

}  // namespace chopsim
