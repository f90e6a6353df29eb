# SPDX-License-Identifier: BSL-1.0
# The installed package's version file (SameMinorVersion before 1.0): a consumer asking for this
# major.minor, or an older patch of it, is accepted; one asking for another minor or another major
# fails at configure time, naming the version it found.
# Variables: VERSION (the project's, e.g. 0.2.0), PREFIX (the installed tree), BINARY_DIR,
# GENERATOR, SOURCE (tests/consumers/version).
string(REPLACE "." ";" parts ${VERSION})
list(GET parts 0 major)
list(GET parts 1 minor)
math(EXPR next_minor "${minor} + 1")
math(EXPR next_major "${major} + 1")
set(accepted "${major}.${minor}" "${major}.${minor}.0")
set(refused "${major}.${next_minor}" "${next_major}.${minor}")
if(minor GREATER 0)
  math(EXPR previous_minor "${minor} - 1")
  list(APPEND refused "${major}.${previous_minor}")
endif()

function(configure_with requested result_var output_var)
  string(REPLACE "." "_" id ${requested})
  file(REMOVE_RECURSE ${BINARY_DIR}/${id})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY_DIR}/${id} -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${PREFIX} -DREQUESTED=${requested}
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${result} PARENT_SCOPE)
  set(${output_var} "${out}${err}" PARENT_SCOPE)
endfunction()

foreach(requested ${accepted})
  configure_with(${requested} result output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "find_package(memkit ${requested}) failed against ${VERSION}:\n${output}")
  endif()
endforeach()
foreach(requested ${refused})
  configure_with(${requested} result output)
  if(result EQUAL 0)
    message(FATAL_ERROR "find_package(memkit ${requested}) accepted ${VERSION}; it must not")
  endif()
  if(NOT output MATCHES "version: ${VERSION}")
    message(FATAL_ERROR "find_package(memkit ${requested}) failed, but without naming the "
                        "version it found (${VERSION}):\n${output}")
  endif()
endforeach()
message(STATUS "${VERSION} accepts ${accepted} and refuses ${refused}")
