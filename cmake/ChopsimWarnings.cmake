# Warnings are errors in every chopsim target (the brief: -Wall -Wextra -Werror).
function(chopsim_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  # GCC 12 at -O3 (CMAKE_BUILD_TYPE=Release) reports -Wrestrict inside libstdc++'s own
  # std::string operator+ (GCC bug 105651, fixed in GCC 13). Keep it a warning there, not an error,
  # so every build type of Debian 12's compiler builds.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-error=restrict)
  endif()
endfunction()
