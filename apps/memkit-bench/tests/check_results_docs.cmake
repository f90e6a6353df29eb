# SPDX-License-Identifier: BSL-1.0
# The committed figures are generated, never written by hand: every docs/results/NAME.json has
# beside it NAME.md, exactly what `memkit-bench markdown NAME.json` makes of it, and the headline
# table of docs/BENCHMARKS.md (between `<!-- headline: results/NAME.json -->` and
# `<!-- /headline -->`) is exactly what `memkit-bench markdown --headline` makes of that run.
# With -DUPDATE=ON the files are rewritten from the JSON instead of compared (after a new run).
# Usage: cmake -DBENCH=path/to/memkit-bench -DDOCS_DIR=docs [-DUPDATE=ON]
#          -P check_results_docs.cmake
function(generate out_var)
  execute_process(COMMAND ${BENCH} markdown ${ARGN}
    RESULT_VARIABLE result OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "memkit-bench markdown ${ARGN} failed (${result}): ${err}")
  endif()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

set(problems "")
file(GLOB runs ${DOCS_DIR}/results/*.json)
if(NOT runs)
  message(FATAL_ERROR "no committed run in ${DOCS_DIR}/results/")
endif()
foreach(run ${runs})
  string(REGEX REPLACE "\\.json$" ".md" summary ${run})
  generate(expected ${run})
  if(UPDATE)
    file(WRITE ${summary} "${expected}")
  elseif(NOT EXISTS ${summary})
    string(APPEND problems "${summary} is missing: run with -DUPDATE=ON to generate it\n")
  else()
    file(READ ${summary} committed)
    if(NOT committed STREQUAL expected)
      string(APPEND problems "${summary} differs from what memkit-bench makes of ${run}\n")
    endif()
  endif()
endforeach()

set(page ${DOCS_DIR}/BENCHMARKS.md)
file(READ ${page} text)
string(REGEX MATCH "<!-- headline: ([^ ]+) -->\n" opening "${text}")
if(NOT opening)
  string(APPEND problems "${page} has no '<!-- headline: results/NAME.json -->' marker\n")
else()
  set(source ${DOCS_DIR}/${CMAKE_MATCH_1})
  string(FIND "${text}" "${opening}" begin)
  string(LENGTH "${opening}" opening_length)
  math(EXPR begin "${begin} + ${opening_length}")
  string(FIND "${text}" "<!-- /headline -->" end)
  if(end LESS begin)
    string(APPEND problems "${page}: no '<!-- /headline -->' after the headline marker\n")
  else()
    math(EXPR length "${end} - ${begin}")
    string(SUBSTRING "${text}" ${begin} ${length} committed)
    generate(expected --headline ${source})
    if(UPDATE)
      string(SUBSTRING "${text}" 0 ${begin} before)
      string(SUBSTRING "${text}" ${end} -1 after)
      file(WRITE ${page} "${before}${expected}${after}")
    elseif(NOT committed STREQUAL expected)
      string(APPEND problems "${page}'s headline table differs from what memkit-bench makes of "
                             "${source}:\n--- committed\n${committed}--- generated\n${expected}")
    endif()
  endif()
endif()

if(problems)
  message(FATAL_ERROR "${problems}Regenerate: cmake -DBENCH=${BENCH} -DDOCS_DIR=${DOCS_DIR} "
                      "-DUPDATE=ON -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
list(LENGTH runs count)
message(STATUS "${count} committed run(s) and the headline table match their JSON")
