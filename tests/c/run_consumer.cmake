# Builds the C consumer with the C compiler alone, against the exported
# headers and libraries in DIR (no tilejit include path, no libtilejit), and
# runs it.
execute_process(
  COMMAND ${CC} -std=c11 -Wall -Wextra -Werror -pthread -I${DIR} ${SOURCE} -L${DIR}
          -lsplitk_gemm -lsplitk_gemm_counted -Wl,-rpath,${DIR} -o ${DIR}/consumer_splitk
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the C consumer failed (${rc})")
endif()
# The headers after dlpack.h's declarations: no redefinitions.
execute_process(
  COMMAND ${CC} -std=c11 -Wall -Wextra -Werror -fsyntax-only -I${DIR} ${DLPACK_FIRST}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the headers do not compile after dlpack.h's declarations (${rc})")
endif()
execute_process(COMMAND ${DIR}/consumer_splitk RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the C consumer failed (${rc})")
endif()
