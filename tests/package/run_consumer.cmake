# Installs the build into one prefix, moves that tree to another place (so nothing can depend on the install
# path), builds tests/package/consumer against it with find_package, and runs it with a clean environment.
# The consumer is configured with the generator, build program and compiler of the build that runs this test
# (GENERATOR, MAKE_PROGRAM, CXX_COMPILER), never CMake's default: scripts/setup.sh installs Ninja, not make.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/first-prefix
  RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
file(RENAME ${WORK_DIR}/first-prefix ${WORK_DIR}/moved-prefix)

foreach(var GENERATOR MAKE_PROGRAM CXX_COMPILER)
  if(NOT ${var})
    message(FATAL_ERROR "run_consumer.cmake needs -D${var}=... (see tests/CMakeLists.txt)")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/consumer-build
    -G ${GENERATOR} -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/moved-prefix -DCMAKE_BUILD_TYPE=Release
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed:\n${out}\n${err}")
endif()

# The runtime search must not lean on the environment or on the build tree: run with only PATH set, after the
# build tree's runtime is out of reach by name.
execute_process(COMMAND env -i PATH=/usr/bin:/bin ${WORK_DIR}/consumer-build/consumer
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(expected "2.5\n42\nSUCCESS\n")
if(NOT rc EQUAL 0 OR NOT out STREQUAL expected)
  message(FATAL_ERROR "consumer failed (exit ${rc}): expected\n${expected}got\n${out}\n${err}")
endif()
message(STATUS "consumer printed the expected output from a relocated install")
file(REMOVE_RECURSE ${WORK_DIR})
