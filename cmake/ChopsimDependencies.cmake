# Every dependency comes from Debian 12's packages (scripts/setup-debian.sh installs them).
find_package(PkgConfig REQUIRED)
# SimGrid 3.32 ships only simgrid.pc (see docs/design.md).
pkg_check_modules(SimGrid REQUIRED IMPORTED_TARGET simgrid>=3.32)
find_package(Boost 1.74 REQUIRED)  # Boost.Graph is header-only
find_package(yaml-cpp REQUIRED)    # target `yaml-cpp` (no namespace in 0.7)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(TBB REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C CXX)
find_package(Threads REQUIRED)
if(CHOPSIM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()

# FindHDF5 gives variables on some CMake versions and hdf5:: targets on others; wrap both in one target.
if(NOT TARGET chopsim_hdf5)
  add_library(chopsim_hdf5 INTERFACE)
  if(TARGET hdf5::hdf5_cpp)
    target_link_libraries(chopsim_hdf5 INTERFACE hdf5::hdf5_cpp)
    if(TARGET hdf5::hdf5)
      target_link_libraries(chopsim_hdf5 INTERFACE hdf5::hdf5)
    endif()
  else()
    target_include_directories(chopsim_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
    target_link_libraries(chopsim_hdf5 INTERFACE ${HDF5_CXX_LIBRARIES} ${HDF5_LIBRARIES})
    target_compile_definitions(chopsim_hdf5 INTERFACE ${HDF5_DEFINITIONS})
  endif()
endif()
