# rawtool_warnings(<target>): the project's warning set; fatal when RAWTOOL_WERROR is on.
function(rawtool_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
    -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual -Wformat=2
    -Wimplicit-fallthrough -Wnull-dereference)
  if(RAWTOOL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
