# Run after a test binary is built (code_interpreter_label_tag in tests/CMakeLists.txt): writes OUT, a CTest file that
# gives the label TAG to each test case tagged [TAG]. The names are listed and prefixed the way CatchAddTests.cmake
# names the tests it adds, so they are the CTest names catch_discover_tests gave those cases.
execute_process(COMMAND "${TEST_EXECUTABLE}" "[${TAG}]" --list-test-names-only
  OUTPUT_VARIABLE output RESULT_VARIABLE result)
# Catch exits with the number of test cases listed; anything else (a signal's name, a crash) is a failure.
if(NOT result MATCHES "^[0-9]+$")
  message(FATAL_ERROR "listing the [${TAG}] tests of ${TEST_EXECUTABLE} failed (${result}):\n${output}")
endif()
string(REPLACE "\n" ";" output "${output}")
set(script "")
foreach(name ${output})
  string(APPEND script "set_tests_properties([==[${TEST_PREFIX}${name}]==] PROPERTIES LABELS ${TAG})\n")
endforeach()
file(WRITE "${OUT}" "${script}")
