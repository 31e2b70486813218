#pragma once
// chopsim's growing HDF5 tables: the kernel store's tables (traces/src/kernel_store.cpp) and ops.h5's /ops and
// /telemetry (experiments/src/report_writers.cpp). One-dimensional datasets of a compound row type, chunked,
// shuffled and deflated, with object timestamps off so that the same rows give byte-identical files. Header-only,
// in its own CMake target (chopsim_hdf5_table) so that chopsim_common stays free of HDF5.

#include <H5Cpp.h>

#include <utility>
#include <vector>

namespace chopsim::hdf5 {

/// Creation properties of a table: chunks of `chunk_rows` rows, shuffle + deflate level 4, no object timestamps.
[[nodiscard]] inline H5::DSetCreatPropList table_properties(hsize_t chunk_rows) {
  H5::DSetCreatPropList properties;
  const hsize_t chunk[1] = {chunk_rows};
  properties.setChunk(1, chunk);
  properties.setShuffle();
  properties.setDeflate(4);
  H5Pset_obj_track_times(properties.getId(), 0);
  return properties;
}

/// A table of `Row` (described by the compound `type`) that grows as rows are added and is written a chunk at a
/// time. HDF5 failures throw H5::Exception; callers turn them into errors that name their file.
template <class Row>
class AppendTable {
 public:
  AppendTable() = default;
  AppendTable(H5::H5File& file, const char* name, H5::CompType type, hsize_t chunk_rows)
      : type_(std::move(type)), chunk_rows_(chunk_rows) {
    const hsize_t initial[1] = {0};
    const hsize_t maximum[1] = {H5S_UNLIMITED};
    const H5::DataSpace space(1, initial, maximum);
    dataset_ = file.createDataSet(name, type_, space, table_properties(chunk_rows));
    buffer_.reserve(chunk_rows);
  }

  /// The dataset, for attributes.
  [[nodiscard]] H5::DataSet& dataset() { return dataset_; }

  /// Buffers a row; writes the buffer out when it holds a whole chunk.
  void add(const Row& row) {
    buffer_.push_back(row);
    if (buffer_.size() >= chunk_rows_) flush();
  }

  /// Writes the buffered rows at the end of the dataset.
  void flush() {
    if (buffer_.empty()) return;
    const hsize_t new_size[1] = {written_ + buffer_.size()};
    dataset_.extend(new_size);
    H5::DataSpace file_space = dataset_.getSpace();
    const hsize_t offset[1] = {written_};
    const hsize_t count[1] = {buffer_.size()};
    file_space.selectHyperslab(H5S_SELECT_SET, count, offset);
    const H5::DataSpace memory_space(1, count);
    dataset_.write(buffer_.data(), type_, memory_space, file_space);
    written_ += buffer_.size();
    buffer_.clear();
  }

  void close() {
    flush();
    dataset_.close();
  }

 private:
  H5::CompType type_;
  hsize_t chunk_rows_ = 1;
  H5::DataSet dataset_;
  std::vector<Row> buffer_;
  hsize_t written_ = 0;
};

}  // namespace chopsim::hdf5
