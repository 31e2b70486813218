# Warnings are errors in every chopsim target (the brief: -Wall -Wextra -Werror).
function(chopsim_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
endfunction()
