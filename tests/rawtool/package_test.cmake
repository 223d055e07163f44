# Installs the development component into a fresh prefix, then builds and
# runs the consumers against it the way MODE says: with find_package(rawtool)
# (MODE cmake) or with pkg-config's rawtool.pc (MODE pkg-config). Two ctest
# entries, one per MODE, each with a WORK_DIR of its own, so that they run
# side by side. Arguments: -DMODE= -DBINARY_DIR= -DSOURCE_DIR= -DWORK_DIR=
#   -DCXX= -DGENERATOR= [-DSANITIZE=address,undefined]
# A sanitized build installs sanitized static libraries, and a program linking
# them needs the same sanitizers: SANITIZE passes them to the consumer.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(sanitize_flags "")
if(SANITIZE)
  set(sanitize_flags "-fsanitize=${SANITIZE}")
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

run_step("install" ${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${prefix}" --component rawtool_development)
foreach(expected include/rawtool/tool.hpp include/rawtool/config.hpp include/rawtool/catalog.hpp include/rawtool/mcp.hpp
                 include/rawtool/driver.hpp include/rawtool/render/surface.hpp include/rawtool/untrusted.hpp)
  if(NOT EXISTS "${prefix}/${expected}")
    message(FATAL_ERROR "the installed tree lacks ${expected}")
  endif()
endforeach()
if(EXISTS "${prefix}/include/rawtool/detail" OR EXISTS "${prefix}/include/detail")
  message(FATAL_ERROR "a private detail header was installed")
endif()

if(MODE STREQUAL "cmake")
  # find_package(rawtool), as a CMake gateway would.
  run_step("configure the consumer" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/rawtool/consumer" -B "${WORK_DIR}/cmake-build"
           -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix}
           "-DCMAKE_CXX_FLAGS=${sanitize_flags}" "-DCMAKE_EXE_LINKER_FLAGS=${sanitize_flags}")
  run_step("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/cmake-build")
  run_step("run the consumer" "${WORK_DIR}/cmake-build/rawtool_consumer")
  if(NOT step_output MATCHES "row 1: ")
    message(FATAL_ERROR "the consumer's reply has no row line:\n${step_output}")
  endif()
  run_step("run the MCP consumer" "${WORK_DIR}/cmake-build/rawtool_mcp_consumer")

elseif(MODE STREQUAL "pkg-config")
  # pkg-config, as a gateway with its own build system would.
  file(GLOB_RECURSE pc_files "${prefix}/*/rawtool.pc")
  list(LENGTH pc_files pc_count)
  if(NOT pc_count EQUAL 1)
    message(FATAL_ERROR "expected one installed rawtool.pc, found: ${pc_files}")
  endif()
  get_filename_component(pc_dir "${pc_files}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  find_program(PKG_CONFIG pkg-config REQUIRED)
  run_step("pkg-config" ${PKG_CONFIG} --cflags --libs rawtool)
  string(STRIP "${step_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run_step("compile with pkg-config" ${CXX} -std=c++20 "${SOURCE_DIR}/tests/rawtool/consumer/main.cpp"
           -o "${WORK_DIR}/pkg-config-consumer" ${flags} ${sanitize_flags})
  run_step("run the pkg-config consumer" "${WORK_DIR}/pkg-config-consumer")
  run_step("compile the MCP consumer with pkg-config" ${CXX} -std=c++20 "${SOURCE_DIR}/tests/rawtool/consumer/mcp_main.cpp"
           -o "${WORK_DIR}/pkg-config-mcp-consumer" ${flags} ${sanitize_flags})
  run_step("run the pkg-config MCP consumer" "${WORK_DIR}/pkg-config-mcp-consumer")

else()
  message(FATAL_ERROR "MODE must be cmake or pkg-config, not '${MODE}'")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
