# One warning policy for every target of ours: -Wall -Wextra -Wpedantic,
# errors when GPUDIAG_WERROR is on (CI).
function(gpudiag_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${GPUDIAG_WERROR}>>:-Werror>)
endfunction()

# Libraries that the CUDA driver may dlopen (the CUPTI injection library and
# the recorder it needs) must not use the initial-exec TLS model, which marks
# them STATIC_TLS and makes that dlopen fail. TLS descriptors keep their
# thread-local accesses close to initial-exec speed without the flag.
function(gpudiag_dlopen_safe_tls target)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-mtls-dialect=gnu2>)
  endif()
endfunction()
