# `cmake --install build --prefix PREFIX` (issue 18; docs/install.md): the chopsim command in PREFIX/bin; the shipped
# configs (run configs, hardware, models, clusters, sweeps, studies) in PREFIX/share/chopsim/configs and the
# calibration profiles in PREFIX/share/chopsim/calibration/profiles, where an installed chopsim looks for them
# (default_search_path: beside its executable); the docs in PREFIX/share/doc/chopsim; the Python package in
# PREFIX/lib/python3/dist-packages/chopsim (PYTHONPATH=PREFIX/lib/python3/dist-packages). `cpack -G DEB` in the build
# folder makes a Debian package of the same files.
include(GNUInstallDirs)
install(TARGETS chopsim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/chopsim/configs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/calibration/profiles/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/chopsim/calibration/profiles)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Bash completion, where bash-completion loads it on demand, and the manual page (man chopsim).
install(FILES ${PROJECT_SOURCE_DIR}/scripts/completion/chopsim.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME chopsim)
install(FILES ${PROJECT_SOURCE_DIR}/docs/chopsim.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
if(TARGET chopsim_python)
  set(CHOPSIM_PYTHON_DIR lib/python3/dist-packages/chopsim)
  install(TARGETS chopsim_python LIBRARY DESTINATION ${CHOPSIM_PYTHON_DIR})
  install(FILES ${PROJECT_SOURCE_DIR}/python/chopsim/__init__.py DESTINATION ${CHOPSIM_PYTHON_DIR})
endif()

set(CPACK_PACKAGE_NAME chopsim)
set(CPACK_PACKAGE_VENDOR "chopsim developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Discrete-event simulator of GPU clusters training large language models")
set(CPACK_PACKAGE_CONTACT "chopsim developers")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # the runtime libraries' packages from the binary's links (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libjs-chart.js")  # chopsim report inlines Chart.js from the package's file
set(CPACK_DEBIAN_PACKAGE_SECTION science)
include(CPack)
