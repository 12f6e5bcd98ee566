# Stages the Pyodide runtime (the Deno host script, and Pyodide and Deno from npm, pinned by the committed
# src/pyodide/host/package-lock.json) into the build tree at the same place, relative to the library, as it is
# installed, so the library finds it by its own location in both trees.

set(_host_src ${PROJECT_SOURCE_DIR}/src/pyodide/host)
file(READ ${_host_src}/package.json _host_package)
string(JSON CODE_INTERPRETER_PYODIDE_VERSION GET "${_host_package}" dependencies pyodide)
string(JSON CODE_INTERPRETER_DENO_VERSION GET "${_host_package}" dependencies deno)

set(CODE_INTERPRETER_RUNTIME_INSTALL_DIR ${CMAKE_INSTALL_DATADIR}/code_interpreter/pyodide)
set(CODE_INTERPRETER_RUNTIME_BUILD_DIR ${PROJECT_BINARY_DIR}/${CODE_INTERPRETER_RUNTIME_INSTALL_DIR})
file(RELATIVE_PATH CODE_INTERPRETER_RUNTIME_RELPATH
  /prefix/${CMAKE_INSTALL_LIBDIR} /prefix/${CODE_INTERPRETER_RUNTIME_INSTALL_DIR})

find_program(NPM_EXECUTABLE npm REQUIRED)

set(_host_files host.mjs frames.mjs ring.mjs stdin_worker.mjs python_worker.mjs runner.py)
set(_staged)
foreach(f IN LISTS _host_files)
  add_custom_command(OUTPUT ${CODE_INTERPRETER_RUNTIME_BUILD_DIR}/${f}
    COMMAND ${CMAKE_COMMAND} -E copy ${_host_src}/${f} ${CODE_INTERPRETER_RUNTIME_BUILD_DIR}/${f}
    DEPENDS ${_host_src}/${f}
    COMMENT "Staging ${f}")
  list(APPEND _staged ${CODE_INTERPRETER_RUNTIME_BUILD_DIR}/${f})
endforeach()

set(_npm_stamp ${CODE_INTERPRETER_RUNTIME_BUILD_DIR}/npm-ci.stamp)
add_custom_command(OUTPUT ${_npm_stamp}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CODE_INTERPRETER_RUNTIME_BUILD_DIR}
  COMMAND ${CMAKE_COMMAND} -E copy ${_host_src}/package.json ${_host_src}/package-lock.json
          ${CODE_INTERPRETER_RUNTIME_BUILD_DIR}/
  # --ignore-scripts: Deno's postinstall only links a binary that its platform package already ships.
  COMMAND ${NPM_EXECUTABLE} ci --ignore-scripts --no-audit --no-fund --loglevel=error
  COMMAND ${CMAKE_COMMAND} -E touch ${_npm_stamp}
  WORKING_DIRECTORY ${CODE_INTERPRETER_RUNTIME_BUILD_DIR}
  DEPENDS ${_host_src}/package.json ${_host_src}/package-lock.json
  COMMENT "Installing Pyodide ${CODE_INTERPRETER_PYODIDE_VERSION} and Deno ${CODE_INTERPRETER_DENO_VERSION} (npm ci)")

add_custom_target(pyodide_runtime ALL DEPENDS ${_npm_stamp} ${_staged})
