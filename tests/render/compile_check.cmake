# Compiles one snippet (syntax only) with the include path a target outside
# render/ gets, and checks the outcome:
#   cmake -DCOMPILER=... -DSOURCE=... -DINCLUDES="a;b" -DEXPECT=compiles|fails [-DMATCH=regex] -P compile_check.cmake
# For EXPECT=fails, the compiler's diagnostics must match MATCH, so that the
# snippet fails for the reason under test and not for a typo.
set(args -std=c++20 -fsyntax-only)
foreach(dir IN LISTS INCLUDES)
  if(dir)
    list(APPEND args "-I${dir}")
  endif()
endforeach()
execute_process(COMMAND ${COMPILER} ${args} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "compiles")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected ${SOURCE} to compile, but it did not:\n${err}")
  endif()
elseif(EXPECT STREQUAL "fails")
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected ${SOURCE} not to compile, but it compiled")
  endif()
  if(NOT err MATCHES "${MATCH}")
    message(FATAL_ERROR "${SOURCE} failed to compile, but not for the reason under test (no match for '${MATCH}'):\n${err}")
  endif()
  message(STATUS "does not compile, as required")
else()
  message(FATAL_ERROR "EXPECT must be compiles or fails")
endif()
