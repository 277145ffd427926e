# The lowered GPU ring kernel as PTX: one sm_90 entry, the device state globals the runtime patches,
# every device-ABI call resolved by the linked bitcode, and the waits and notifies those of the
# device ABI (include/tdist/NVIDIA/device.cuh), not code of the lowering's own.
file(READ ${PTX} ptx)
foreach(want ".target sm_90" ".visible .entry ring_exchange_gpu(" ".visible .const .align 8 .u64 tdisti_device_state"
        "tdisti_fast"
        # the ABI's notify: the CTA joins, then one release store (set) and one release add (add)
        "bar.sync 0;" "st.release.sys.global.u32" "red.release.sys.global.add.u32"
        # the ABI's wait: acquire polls, the relaxed sweep's acquire fence (two slots), the timer
        # that bounds it, and the trap of a wait that gave up
        "ld.acquire.sys.global.u32" "fence.acq_rel.sys;" "%globaltimer" "trap;")
  string(FIND "${ptx}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${PTX}: '${want}' missing")
  endif()
endforeach()
string(REGEX MATCH "\\.extern \\.func[^\n]*tdist" unresolved "${ptx}")
if(unresolved)
  message(FATAL_ERROR "${PTX}: unresolved device-ABI call: ${unresolved}")
endif()
# The lowering no longer spins or signals by itself: no inline-PTX poll (ld.acquire without the
# .global state space), no fetch-and-add notify, no expiry message of its own.
foreach(unwanted "atom.add.release" "atom.release.sys" "__tdist_wait_expired")
  string(FIND "${ptx}" "${unwanted}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${PTX}: '${unwanted}' present: the lowering emitted its own wait or notify")
  endif()
endforeach()
string(REGEX MATCH "ld\\.acquire\\.(sys|gpu|cta)\\.b(32|64)" ownpoll "${ptx}")
if(ownpoll)
  message(FATAL_ERROR "${PTX}: '${ownpoll}': the lowering emitted its own poll")
endif()
message(STATUS "${PTX}: ok")
