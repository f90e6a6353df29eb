# SPDX-License-Identifier: BSL-1.0
# Compiles SOURCE twice: with ERROR_FLAG (e.g. -Werror=deprecated-declarations) it must be rejected,
# and without it accepted; both times the diagnostics must match REGEX. Proof that code written
# against a deprecated name still builds, and that the warning naming its replacement is the one
# thing standing between it and -Werror.
# Variables: COMPILER, STANDARD (e.g. 17), INCLUDE_DIR, SOURCE, ERROR_FLAG, REGEX.
foreach(mode error warning)
  set(flags -std=c++${STANDARD} -fsyntax-only -Wall -Wextra -I${INCLUDE_DIR})
  if(mode STREQUAL "error")
    list(APPEND flags ${ERROR_FLAG})
  endif()
  execute_process(COMMAND ${COMPILER} ${flags} ${SOURCE}
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(mode STREQUAL "error" AND result EQUAL 0)
    message(FATAL_ERROR "${SOURCE} compiled with ${ERROR_FLAG}; its deprecated names must fail it")
  endif()
  if(mode STREQUAL "warning" AND NOT result EQUAL 0)
    message(FATAL_ERROR "${SOURCE} failed to compile without ${ERROR_FLAG}:\n${out}${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${REGEX}")
    message(FATAL_ERROR "${SOURCE} (${mode}): no diagnostic matching ${REGEX}\ngot:\n${out}${err}")
  endif()
endforeach()
message(STATUS "${SOURCE}: compiles with the deprecation warning, fails with ${ERROR_FLAG}")
