# SPDX-License-Identifier: BSL-1.0
# The build switches of config.hpp (docs/options.md) as cache variables, put on memkit's INTERFACE so
# that every target linking memkit::memkit, here or through find_package(), compiles with the same
# values: a program cannot silently mix two layouts of one class.
#
# Each switch is empty by default: the header's default then applies and no definition is added.
# A target that needs another value than the project's sets a target property of the same name,
# which replaces the interface value for that target only (one -D, never two that conflict):
#   set_target_properties(my_tests PROPERTIES MEMKIT_DEBUG 3 MEMKIT_STATISTICS ON)

set(MEMKIT_DEBUG "" CACHE STRING
  "MEMKIT_DEBUG for every consumer: 0-3, empty for the header default (1, or 0 with NDEBUG)")
set_property(CACHE MEMKIT_DEBUG PROPERTY STRINGS "" 0 1 2 3)
if(NOT MEMKIT_DEBUG MATCHES "^[0-3]?$")
  message(FATAL_ERROR "MEMKIT_DEBUG must be empty or 0, 1, 2 or 3, not '${MEMKIT_DEBUG}'")
endif()

foreach(switch MEMKIT_STATISTICS MEMKIT_VALGRIND)
  set(${switch} "" CACHE STRING "${switch} for every consumer: ON, OFF, or empty for the header default (OFF)")
  set_property(CACHE ${switch} PROPERTY STRINGS "" ON OFF)
endforeach()

# Adds `name=value` to memkit's interface, where value is the consumer's target property `name` if
# it has one, else `project_value`; nothing if both are empty. BOOL switches become 1 or 0.
function(memkit_interface_switch target name project_value kind)
  set(own "$<TARGET_PROPERTY:${name}>")
  if(kind STREQUAL "BOOL")
    set(own "$<BOOL:${own}>")
    if(NOT project_value STREQUAL "")
      if(project_value)
        set(project_value 1)
      else()
        set(project_value 0)
      endif()
    endif()
  endif()
  if(project_value STREQUAL "")
    set(fallback "")
  else()
    set(fallback "${name}=${project_value}")
  endif()
  target_compile_definitions(${target} INTERFACE
    "$<IF:$<STREQUAL:$<TARGET_PROPERTY:${name}>,>,${fallback},${name}=${own}>")
endfunction()
