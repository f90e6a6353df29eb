# SPDX-License-Identifier: BSL-1.0
# Fails if a tracked source file (C++ sources and headers, CMake files, Python and shell scripts)
# does not name its licence in an SPDX line among its first three lines (after a #! line, where
# there is one), so a new file cannot arrive without it.
# Usage: cmake -DSOURCE_DIR=. -DGIT=git -P check_spdx.cmake
execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} ls-files
  RESULT_VARIABLE result OUTPUT_VARIABLE tracked ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "git ls-files failed in ${SOURCE_DIR}: ${err}")
endif()
string(REPLACE "\n" ";" tracked "${tracked}")
set(expected "SPDX-License-Identifier: BSL-1.0")
set(missing "")
set(count 0)
foreach(file ${tracked})
  if(NOT file MATCHES "(\\.(hpp|cpp|h|cmake|py|sh)|(^|/)CMakeLists\\.txt|^\\.ci/run)$")
    continue()
  endif()
  if(NOT EXISTS ${SOURCE_DIR}/${file})
    continue() # deleted in the work tree, not yet in the index
  endif()
  math(EXPR count "${count} + 1")
  file(STRINGS ${SOURCE_DIR}/${file} head LIMIT_COUNT 3)
  string(FIND "${head}" "${expected}" at)
  if(at EQUAL -1)
    string(APPEND missing "  ${file}\n")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "These tracked files lack '${expected}' in their first lines:\n${missing}")
endif()
message(STATUS "${count} tracked source files name their licence")
