#include "chopsim/traces/records.hpp"

#include "chopsim/common/error.hpp"

namespace chopsim {

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
