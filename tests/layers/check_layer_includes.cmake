# cmake -DCXX=<compiler> -DTREE=<layer include tree> -DLAYER=<name>
#       -DWORK=<scratch dir> -DALLOWED=<headers> -DFORBIDDEN=<headers> -P this
# Each of ALLOWED must compile against TREE alone; each of FORBIDDEN must
# fail, and fail because the header is not found.
file(MAKE_DIRECTORY "${WORK}")
set(failures "")

function(compile_include header out_rc out_log)
  string(MAKE_C_IDENTIFIER "${header}" stem)
  set(file "${WORK}/${stem}.cpp")
  file(WRITE "${file}" "#include \"${header}\"\n")
  execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -I "${TREE}" "${file}"
    RESULT_VARIABLE rc ERROR_VARIABLE log OUTPUT_VARIABLE log)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_log} "${log}" PARENT_SCOPE)
endfunction()

foreach(header IN LISTS ALLOWED)
  compile_include("${header}" rc log)
  if(NOT rc EQUAL 0)
    string(APPEND failures "layer ${LAYER} cannot include its own or an allowed layer's "
                           "'${header}':\n${log}\n")
  endif()
endforeach()

foreach(header IN LISTS FORBIDDEN)
  compile_include("${header}" rc log)
  # GCC: "x.h: No such file or directory"; Clang: "'x.h' file not found".
  string(FIND "${log}" "${header}: No such file" gcc_missing)
  string(FIND "${log}" "'${header}' file not found" clang_missing)
  if(rc EQUAL 0)
    string(APPEND failures "layer ${LAYER} includes '${header}', of a layer it may not use\n")
  elseif(gcc_missing EQUAL -1 AND clang_missing EQUAL -1)
    string(APPEND failures "layer ${LAYER}: '${header}' failed for another reason than "
                           "not being found:\n${log}\n")
  endif()
endforeach()

list(LENGTH ALLOWED num_allowed)
list(LENGTH FORBIDDEN num_forbidden)
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
message(STATUS "layer ${LAYER}: ${num_allowed} allowed headers compile, "
               "${num_forbidden} headers of other layers are not found")
