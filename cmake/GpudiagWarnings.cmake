# One warning policy for every target of ours: -Wall -Wextra -Wpedantic,
# errors when GPUDIAG_WERROR is on (CI).
function(gpudiag_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${GPUDIAG_WERROR}>>:-Werror>)
endfunction()
