# Runs `code-interpreter run` as a user would and checks its output and exit status exactly (the former
# examples/run_code tests, every assertion kept).
set(RUN_CODE ${CLI} run)
function(expect name expected_rc expected_out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
    INPUT_FILE ${STDIN_FILE})
  if(NOT rc STREQUAL expected_rc OR NOT out STREQUAL expected_out)
    message(FATAL_ERROR "${name}: expected exit ${expected_rc} and stdout\n[${expected_out}]\n"
                        "got exit ${rc} and stdout\n[${out}]\nstderr:\n${err}")
  endif()
  set(last_err "${err}" PARENT_SCOPE)
endfunction()

set(STDIN_FILE /dev/null)
expect("hello.py" 0 "Python 3.14.2 on emscripten
primes below 60: [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59]
mean 4.900, stdev 1.987
fib(90) = 2880067194370816120
sha256('sandbox') starts with b7ad567477c83756
" ${RUN_CODE} ${HELLO})

expect("exception" 1 "partial output\n" ${RUN_CODE} -c "print('partial output')\n1/0")
if(NOT last_err MATCHES "ZeroDivisionError: division by zero")
  message(FATAL_ERROR "exception: the traceback is not on stderr: ${last_err}")
endif()

expect("sys.exit" 1 "" ${RUN_CODE} -c "import sys\nsys.exit(5)")
# A SystemExit is no error to show: no traceback, only a message when it carries one (as CPython prints it).
if(NOT last_err STREQUAL "")
  message(FATAL_ERROR "sys.exit: stderr should be empty, was\n${last_err}")
endif()
expect("sys.exit with a message" 1 "" ${RUN_CODE} -c "import sys\nsys.exit('bye now')")
if(NOT last_err STREQUAL "bye now\n")
  message(FATAL_ERROR "sys.exit with a message: stderr should be the message, was\n${last_err}")
endif()
# The last expression's value and each display are printed, as Python's REPL shows them; rich results arrive with
# the run's answer, so they follow the output the run streamed.
expect("last expression" 0 "42\n" ${RUN_CODE} -c "6 * 7")
expect("display then value" 0 "between\n'shown'\n[1, 2]\n" ${RUN_CODE} -c "display('shown')\nprint('between')\n[1, 2]")
expect("timeout" 2 "" ${RUN_CODE} --timeout 1 -c "while True: pass")
if(NOT last_err MATCHES "TIMEOUT \\(execution\\)")
  message(FATAL_ERROR "timeout: no TIMEOUT line on stderr: ${last_err}")
endif()

file(WRITE ${WORK_DIR}/stdin.py "print(sum(range(101)))\n")
set(STDIN_FILE ${WORK_DIR}/stdin.py)
expect("stdin" 0 "5050\n" ${RUN_CODE} -)
set(STDIN_FILE /dev/null)

expect("usage" 64 "" ${RUN_CODE})
expect("unknown backend" 64 "" ${RUN_CODE} --backend nowhere -c "1")
expect("bad timeout" 64 "" ${RUN_CODE} --timeout soon -c "1")
expect("timeout rounding to nothing" 64 "" ${RUN_CODE} --timeout 0.0004 -c "1")
expect("timeout nan" 64 "" ${RUN_CODE} --timeout nan -c "1")
expect("timeout inf" 64 "" ${RUN_CODE} --timeout inf -c "1")
expect("missing value" 64 "" ${RUN_CODE} -c)
expect("directory as file" 64 "" ${RUN_CODE} ${WORK_DIR})

# --config: a JSON configuration read by the factory (docs/backends.md); a refused one is bad usage.
file(WRITE ${WORK_DIR}/run_config.json "{\"backend\": \"pyodide\", \"language\": \"python\"}\n")
expect("config" 0 "6\n" ${RUN_CODE} --config ${WORK_DIR}/run_config.json -c "print(2 * 3)")
file(WRITE ${WORK_DIR}/run_unsupported.json "{\"lifetime_seconds\": 60}\n")
expect("config unsupported" 64 "" ${RUN_CODE} --config ${WORK_DIR}/run_unsupported.json -c "1")
if(NOT last_err MATCHES "configuration: the backend pyodide cannot honour 'lifetime_seconds'")
  message(FATAL_ERROR "config unsupported: stderr was\n${last_err}")
endif()
expect("config missing" 64 "" ${RUN_CODE} --config ${WORK_DIR}/no_such_config.json -c "1")
file(WRITE ${WORK_DIR}/run_e2b.json "{\"backend\": \"e2b\", \"e2b\": {\"template\": \"x\"}}\n")
expect("config and another backend" 64 "" ${RUN_CODE} --config ${WORK_DIR}/run_e2b.json --backend pyodide -c "1")
if(NOT last_err MATCHES "--backend pyodide differs from the configuration's backend e2b")
  message(FATAL_ERROR "config and another backend: stderr was\n${last_err}")
endif()
