#pragma once
// Scalar HDF5 attributes as chopsim's files write them (the kernel store, ops.h5): strings UTF-8 and fixed-length
// (an empty value is one NUL, as HDF5 has no zero-length fixed strings), numbers in the given native type.
// Header-only, in chopsim_hdf5_table with append_table.hpp.

#include <H5Cpp.h>

#include <algorithm>
#include <string>

#include "chopsim/common/error.hpp"

namespace chopsim::hdf5 {

/// Writes the string attribute `name` = `value` on `object` (a file, group or dataset id).
inline void write_string_attribute(hid_t object, const char* name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, std::max<std::size_t>(value.size(), 1));
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  const herr_t status = H5Awrite(attribute, type, padded.data());
  H5Aclose(attribute);
  H5Sclose(space);
  H5Tclose(type);
  if (attribute < 0 || status < 0) throw OutputError(std::string("cannot write HDF5 attribute ") + name);
}

/// Writes the numeric attribute `name` = `value` on `object`, stored as `type` (e.g. H5T_NATIVE_INT32).
template <class T>
void write_number_attribute(hid_t object, const char* name, T value, hid_t type) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t status = H5Awrite(attribute, type, &value);
  H5Aclose(attribute);
  H5Sclose(space);
  if (attribute < 0 || status < 0) throw OutputError(std::string("cannot write HDF5 attribute ") + name);
}

}  // namespace chopsim::hdf5
