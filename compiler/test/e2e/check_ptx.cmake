# The lowered GPU ring kernel as PTX: one sm_90 entry, the device state globals the runtime patches,
# every device-ABI call resolved by the linked bitcode, and the synchronisation the lowering promises.
file(READ ${PTX} ptx)
foreach(want ".target sm_90" ".visible .entry ring_exchange_gpu(" ".visible .const .align 8 .u64 tdisti_device_state"
        "tdisti_fast" "st.release.sys" "ld.acquire.sys" "trap;")
  string(FIND "${ptx}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${PTX}: '${want}' missing")
  endif()
endforeach()
string(REGEX MATCH "\\.extern \\.func[^\n]*tdist" unresolved "${ptx}")
if(unresolved)
  message(FATAL_ERROR "${PTX}: unresolved device-ABI call: ${unresolved}")
endif()
message(STATUS "${PTX}: ok")
