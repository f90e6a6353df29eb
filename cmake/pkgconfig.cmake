# SPDX-License-Identifier: BSL-1.0
# pkg-config files for projects that do not use CMake: memkit.pc (the headers, with the project's
# build switches), and, where src/ builds them, memkit-new-delete.pc (the operator new library)
# and memkit-preload.pc (its `preload` variable names the LD_PRELOAD library). Installed into
# ${CMAKE_INSTALL_LIBDIR}/pkgconfig, each finds the prefix from its own place (${pcfiledir}), so
# `cmake --install --prefix` anywhere gives working files.
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(MEMKIT_PC_PREFIX_FROM_PCDIR "")
  set(MEMKIT_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH MEMKIT_PC_PREFIX_FROM_PCDIR /prefix/${pc_dir} /prefix)
  string(REGEX REPLACE "/$" "" MEMKIT_PC_PREFIX_FROM_PCDIR "${MEMKIT_PC_PREFIX_FROM_PCDIR}")
  set(MEMKIT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
foreach(dir INCLUDEDIR DOCDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(MEMKIT_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(MEMKIT_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()

# The switches as the CMake package exports them (cmake/switches.cmake): only those set.
set(MEMKIT_PC_SWITCHES "")
if(NOT MEMKIT_DEBUG STREQUAL "")
  string(APPEND MEMKIT_PC_SWITCHES " -DMEMKIT_DEBUG=${MEMKIT_DEBUG}")
endif()
foreach(switch MEMKIT_STATISTICS MEMKIT_VALGRIND)
  if(NOT ${switch} STREQUAL "")
    if(${switch})
      string(APPEND MEMKIT_PC_SWITCHES " -D${switch}=1")
    else()
      string(APPEND MEMKIT_PC_SWITCHES " -D${switch}=0")
    endif()
  endif()
endforeach()

foreach(name memkit memkit-new-delete memkit-preload)
  string(REPLACE "-" "_" target ${name})
  if(TARGET ${target})
    configure_file(${CMAKE_CURRENT_LIST_DIR}/${name}.pc.in
      ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${name}.pc.configured @ONLY)
    # Then the library file names, known only at generation time.
    file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${name}.pc
      INPUT ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${name}.pc.configured)
    install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig/${name}.pc DESTINATION ${pc_dir})
  endif()
endforeach()
