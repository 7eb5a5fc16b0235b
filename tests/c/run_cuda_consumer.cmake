# Builds the CUDA C consumer with the C compiler alone, against the exported
# headers and libraries in DIR (no CUDA header, no libcuda at link time:
# the program and the libraries open libcuda.so.1 themselves), and runs it,
# over the null driver when NULL_DRIVER names its directory, with ARGS.
execute_process(
  COMMAND ${CC} -std=c11 -Wall -Wextra -Werror -pthread -I${DIR} ${SOURCE} -L${DIR}
          -lsplitk_gemm -lsplitk_gemm_counted -ldl -Wl,-rpath,${DIR} -o ${DIR}/consumer_cuda_splitk
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the CUDA C consumer failed (${rc})")
endif()
if(NULL_DRIVER)
  set(ENV{LD_LIBRARY_PATH} "${NULL_DRIVER}:$ENV{LD_LIBRARY_PATH}")
endif()
execute_process(COMMAND ${DIR}/consumer_cuda_splitk ${ARGS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the CUDA C consumer failed (${rc})")
endif()
