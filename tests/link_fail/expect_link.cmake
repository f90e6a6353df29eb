# SPDX-License-Identifier: BSL-1.0
# Compiles main.cpp with MAIN_FLAGS and pool_user.cpp with USER_FLAGS (';'-separated -D options)
# and links them. With EXPECT=fail the test passes only if the link fails with an unresolved
# reference to fill(), the function whose pool parameter differs in layout: proof that the two
# layouts cannot meet in one program. With EXPECT=link (the control) it must link and run.
# Variables: COMPILER, INCLUDE_DIR, SOURCE_DIR, WORK_DIR, MAIN_FLAGS, USER_FLAGS, EXPECT.
file(MAKE_DIRECTORY ${WORK_DIR})
foreach(part main pool_user)
  if(part STREQUAL "main")
    set(flags ${MAIN_FLAGS})
  else()
    set(flags ${USER_FLAGS})
  endif()
  execute_process(
    COMMAND ${COMPILER} -std=c++17 -c ${flags} -I${INCLUDE_DIR} ${SOURCE_DIR}/${part}.cpp
      -o ${WORK_DIR}/${part}.o
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${part}.cpp did not compile with ${flags}; the test proves nothing:\n"
                        "${out}${err}")
  endif()
endforeach()
execute_process(
  COMMAND ${COMPILER} ${WORK_DIR}/main.o ${WORK_DIR}/pool_user.o -o ${WORK_DIR}/program
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "fail")
  if(result EQUAL 0)
    message(FATAL_ERROR "main.cpp (${MAIN_FLAGS}) and pool_user.cpp (${USER_FLAGS}) linked: two "
                        "layouts of memkit::pool can meet in one program")
  endif()
  if(NOT "${out}${err}" MATCHES "undefined reference to `fill\\(memkit::|undefined symbol: fill\\(memkit::")
    message(FATAL_ERROR "the link failed, but not for the missing fill():\n${out}${err}")
  endif()
  message(STATUS "${MAIN_FLAGS} against ${USER_FLAGS}: does not link, as it must")
else()
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "main.cpp and pool_user.cpp with ${MAIN_FLAGS} failed to link:\n${out}${err}")
  endif()
  execute_process(COMMAND ${WORK_DIR}/program RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "the linked program failed (exit ${result})")
  endif()
  message(STATUS "${MAIN_FLAGS}: links and runs")
endif()
