# Runs `trace_bench callbacks --quick` and checks that it exits 0 and prints
# every part with a number: a part that vanished from the output would
# otherwise go unnoticed. cmake -DBENCH=<trace_bench> -P check_callbacks_bench.cmake
execute_process(COMMAND ${BENCH} callbacks --quick RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "trace_bench callbacks --quick exited with ${status}")
endif()
set(number "[0-9]+\\.[0-9]")
foreach(part
    "dispatch +uninteresting call[^\n]*guard off: +${number}"
    "dispatch +uninteresting call[^\n]*guard on: +${number}"
    "args +driver launch[^\n]*kernel args off: +${number}"
    "args +driver launch, zero-cost driver, driver only: +${number}[^\n]*driver queries per launch"
    "args +driver launch, zero-cost driver, live map +: +${number} ns +\\(0\\.00 driver queries per launch"
    "args +driver launch, driver spinning[^\n]*driver only: +${number} ns"
    "args +driver launch, driver spinning[^\n]*live map +: +${number} ns"
    "unwind +capture_stack, +16 frames deep[^\n]*cache hit: +${number}"
    "unwind +capture_stack, +100 frames deep[^\n]*cache hit: +${number}"
    "unwind +capture_stack, +64 frames deep, thread cache miss[^\n]*${number}"
    "unwind +capture_stack, +64 frames deep, new stack: +${number}"
    "record +ApiEvent: +${number}"
    "record +KernelArgEvent: +${number}"
    "record +stack_of_call[^\n]*: +${number}"
    "record +analysed call[^\n]*stacks on +${number} ns, off +${number}"
    "guard +DtoH async copy[^\n]*guard on +${number} ns, off +${number}"
    "guard +cudaEventRecord[^\n]*guard on +${number} ns, off +${number}"
    "launch +driver queries per launch, driver only: ${number}"
    "launch +driver queries per launch, live map: 0\\.00 cuPointerGetAttributes"
    "stacks and guard on, zero-cost driver, driver only: +${number} ns per launch"
    "stacks and guard on, zero-cost driver, live map: +${number} ns per launch"
    "Only a GPU can measure")
  if(NOT out MATCHES "${part}")
    message(FATAL_ERROR "trace_bench callbacks --quick printed no line matching: ${part}")
  endif()
endforeach()
