# Stages the Node side of the tests (local protocol servers, conformance scripts, the JS halves of benchmarks)
# into the build tree and installs their npm packages there with `npm ci` from the committed
# tests/package-lock.json, so a clean clone needs nothing but npm and the registry. Scripts import their packages
# from the staged node_modules next to them; the source tree is never written.

include(NodeRuntime)   # NODE_EXECUTABLE: the pinned Node.js, inside every pinned package's engines range

set(CODE_INTERPRETER_TEST_NODE_DIR ${PROJECT_BINARY_DIR}/tests/node)
set(_tests_src ${PROJECT_SOURCE_DIR}/tests)
set(_npm_stamp ${CODE_INTERPRETER_TEST_NODE_DIR}/npm-ci.stamp)

add_custom_command(OUTPUT ${_npm_stamp}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CODE_INTERPRETER_TEST_NODE_DIR}
  COMMAND ${CMAKE_COMMAND} -E copy ${_tests_src}/package.json ${_tests_src}/package-lock.json
          ${CODE_INTERPRETER_TEST_NODE_DIR}/
  COMMAND ${NPM_EXECUTABLE} ci --ignore-scripts --no-audit --no-fund --loglevel=error
  COMMAND ${CMAKE_COMMAND} -E touch ${_npm_stamp}
  WORKING_DIRECTORY ${CODE_INTERPRETER_TEST_NODE_DIR}
  DEPENDS ${_tests_src}/package.json ${_tests_src}/package-lock.json
  COMMENT "Installing the test servers' npm packages (npm ci)")

# The scripts are copied on every build (cheap), so an edit is picked up without reconfiguring.
add_custom_target(test_node_project ALL
  COMMAND ${CMAKE_COMMAND} -E copy_directory ${_tests_src}/servers ${CODE_INTERPRETER_TEST_NODE_DIR}/servers
  COMMAND ${CMAKE_COMMAND} -E copy_directory ${_tests_src}/conformance ${CODE_INTERPRETER_TEST_NODE_DIR}/conformance
  COMMAND ${CMAKE_COMMAND} -E copy_directory ${_tests_src}/bench ${CODE_INTERPRETER_TEST_NODE_DIR}/bench
  DEPENDS ${_npm_stamp}
  COMMENT "Staging the test servers and conformance scripts")
