# cmake -DBC=.. [-DENGINE=1] -DLLC=.. -DNM=.. -DPTXAS=.. -DWORK=.. -P check_bitcode.cmake
# Fails unless the bitcode defines every expected symbol and compiles to sm_90 code. Its external
# (undefined) functions: none but vprintf in libtdist_device.bc; with ENGINE (libtdist_device_nvshmem.bc)
# the NVSHMEM device functions the engine calls, and nothing else.
execute_process(COMMAND ${NM} --defined-only ${BC} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "llvm-nm failed on ${BC}")
endif()
set(expected tdisti_device_state tdist_my_pe tdist_n_pes tdist_ptr tdist_ptr_i64
  tdist_putmem tdist_getmem tdist_putmem_nbi tdist_getmem_nbi tdist_putmem_signal tdist_putmem_signal_nbi
  tdist_putmem_i64 tdist_getmem_i64 tdist_putmem_nbi_i64 tdist_getmem_nbi_i64 tdist_putmem_signal_i64
  tdist_putmem_signal_nbi_i64 tdist_signal_op tdist_signal_op_i64 tdist_signal_fetch tdist_signal_fetch_i64
  tdist_signal_wait_until tdist_signal_wait_until_i64 tdistx_consume_token_ptr tdistx_consume_token_int64
  tdistx_consume_token_ptr_i64 tdist_fence tdist_quiet tdist_barrier_all tdistx_program_id tdistx_num_programs
  tdistx_putmem_block tdistx_putmem_warp tdistx_getmem_block tdistx_getmem_warp tdistx_putmem_signal_block
  tdistx_clock_i64 tdistx_wait_check_i64 tdistx_event_set_i64 tdistx_event_wait_i64 tdistx_event_all_i64)
foreach(t float double char schar short int long longlong int8 int16 int32 int64 uint8 uint16 uint32 uint64 size ptrdiff)
  list(APPEND expected tdist_${t}_p tdist_${t}_g tdist_${t}_p_i64 tdist_${t}_g_i64 tdistx_shmem_${t}_p_i64
    tdistx_shmem_${t}_g_i64)
endforeach()
foreach(t int32 int64 uint64)
  list(APPEND expected tdist_${t}_wait_until tdist_${t}_wait_until_i64 tdistx_wait_${t} tdistx_wait_${t}_i64
    tdistx_notify_${t} tdistx_notify_${t}_i64 tdistx_wait_${t}_block tdistx_wait_${t}_strided_i64)
endforeach()
# libshmem_device's forms with NVSHMEM's thread / warp / block scopes
list(APPEND expected tdistx_shmem_signal_op_i64)
foreach(s thread warp block)
  list(APPEND expected tdistx_shmem_barrier_${s}_i64 tdistx_shmem_putmem_${s}_i64 tdistx_shmem_putmem_${s}_nbi_i64
    tdistx_shmem_getmem_${s}_i64 tdistx_shmem_putmem_signal_${s}_i64 tdistx_shmem_putmem_signal_${s}_nbi_i64)
endforeach()
set(missing "")
foreach(s IN LISTS expected)
  if(NOT syms MATCHES "[ \t][TtDdBb] ${s}\n")
    list(APPEND missing ${s})
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "libtdist_device.bc lacks: ${missing}")
endif()
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${NM} --undefined-only ${BC} OUTPUT_VARIABLE undef RESULT_VARIABLE rc)
string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*\n" undef "${undef}")
set(allowed vprintf)
if(ENGINE)
  foreach(f putmem getmem putmem_signal)
    list(APPEND allowed nvshmem_${f} nvshmemx_${f}_warp nvshmemx_${f}_block)
  endforeach()
  list(APPEND allowed nvshmemx_signal_op nvshmem_uint32_atomic_set nvshmem_uint32_atomic_add nvshmem_fence nvshmem_quiet)
  foreach(w 8 16 32 64)
    list(APPEND allowed nvshmem_uint${w}_p nvshmem_uint${w}_g)
  endforeach()
endif()
set(stray "")
set(engine_calls 0)
foreach(u IN LISTS undef)
  string(STRIP "${u}" u)
  list(FIND allowed "${u}" at)
  if(at LESS 0)
    list(APPEND stray ${u})
  elseif(u MATCHES "^nvshmem")
    math(EXPR engine_calls "${engine_calls} + 1")
  endif()
endforeach()
if(stray)
  message(FATAL_ERROR "${BC} calls functions nothing provides: ${stray}")
endif()
if(ENGINE AND engine_calls LESS 20)
  message(FATAL_ERROR "${BC} calls only ${engine_calls} NVSHMEM functions: not the engine's build?")
endif()
execute_process(COMMAND ${LLC} -march=nvptx64 -mcpu=sm_90 -mattr=+ptx80 ${BC} -o ${WORK}/libtdist_device.ptx
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "llc-19 cannot lower the bitcode: ${err}")
endif()
if(PTXAS)
  execute_process(COMMAND ${PTXAS} -arch=sm_90 -c ${WORK}/libtdist_device.ptx -o ${WORK}/libtdist_device.o
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ptxas rejects the lowered bitcode: ${err}")
  endif()
endif()
list(LENGTH expected n)
message(STATUS "libtdist_device.bc: ${n} symbols present, PTX assembles for sm_90")
