# SPDX-License-Identifier: BSL-1.0
# Compiles SOURCE with -DMEMKIT_COMPILE_FAIL and succeeds only if the compiler rejects it AND its
# diagnostics match REGEX: proof that the translation unit fails for the reason under test.
# (ctest's WILL_FAIL cannot prove that: it passes on any failure, and combined with
# PASS_REGULAR_EXPRESSION it inverts the match.)
# Variables: COMPILER, STANDARD (e.g. 17), INCLUDE_DIR, SOURCE, REGEX.
execute_process(
  COMMAND ${COMPILER} -std=c++${STANDARD} -fsyntax-only -DMEMKIT_COMPILE_FAIL -I${INCLUDE_DIR}
          ${SOURCE}
  RESULT_VARIABLE result
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled with MEMKIT_COMPILE_FAIL defined; it must not")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "${SOURCE} failed to compile, but without the expected diagnostic\n"
                      "expected: ${REGEX}\ngot:\n${out}${err}")
endif()
message(STATUS "${SOURCE}: rejected with the expected diagnostic")
