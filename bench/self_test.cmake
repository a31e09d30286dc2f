# ctest bench-self-test: runs `tdsl-bench --self-test`. Without a GPU it
# must print "no CUDA device" and exit with 2 (not crash: a signal or any
# other status fails); with a GPU it must exit 0.
execute_process(COMMAND ${BENCH} --self-test --json self-test.json
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(out MATCHES "no CUDA device")
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "without a GPU tdsl-bench --self-test must exit 2, got '${rc}'")
  endif()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "tdsl-bench --self-test failed on a GPU: '${rc}'")
endif()
