#include "core/fault.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "core/error.hpp"
#include "core/transport.hpp"
#include "core/watchdog.hpp"

namespace tdist {

namespace {

// Guards the binding, the record's writes and g_note (programs of a launch, the watchdog thread
// and the thread reporting the fault may all get here at once).
std::mutex g_mu;
tdist_device_state_t *g_state = nullptr;
HeapTransport *g_transport = nullptr;
// What the recorded fault was about, in words, when the numeric record cannot say it (a bad call's
// reason, a block event's wait). Cleared with the fault.
std::string g_note;

void write(tdist_device_state_t &s, const Fault &f) {
  s.fault_pe = f.pe;
  s.fault_offset = f.offset;
  s.fault_expected = f.expected;
  s.fault_seen = f.seen;
  s.fault_cmp = f.cmp;
  // Published last: a wait that sees the code sees the record.
  std::atomic_ref<int32_t>(s.fault_code).store(f.code, std::memory_order_release);
}

// The transport makes the record visible where device code looks (g_mu held).
void publish(const tdist_device_state_t &s) {
  if (!g_transport) return;
  try {
    g_transport->publish_fault(s);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tdist[pe %d]: could not publish the fault to the device: %s\n", s.my_pe, e.what());
  }
}

}  // namespace

void bind_fault_record(tdist_device_state_t *state, HeapTransport *transport) {
  std::lock_guard<std::mutex> g(g_mu);
  g_state = state;
  g_transport = transport;
  g_note.clear();
}

void unbind_fault_record() { bind_fault_record(nullptr, nullptr); }

void record_fault(const Fault &f, const std::string &note) {
  std::lock_guard<std::mutex> g(g_mu);
  tdist_device_state_t *s = g_state;
  if (!s) return;
  if (fault_code(*s) == 0) {
    g_note = note;
    write(*s, f);
    publish(*s);
  }
  if (s->debug) {
    std::fprintf(stderr,
                 "tdist[pe %d]: device fault %s: PE %d heap offset %llu expected %llu (cmp %d) "
                 "seen %llu%s%s\n",
                 s->my_pe, tdist_status_name(f.code), f.pe, (unsigned long long)f.offset,
                 (unsigned long long)f.expected, f.cmp, (unsigned long long)f.seen, note.empty() ? "" : ": ",
                 note.c_str());
    std::abort();
  }
}

void record_peer_lost(int lost_pe) {
  std::lock_guard<std::mutex> g(g_mu);
  tdist_device_state_t *s = g_state;
  if (!s) return;
  Fault f;
  f.code = TDIST_ERR_BOOTSTRAP;
  f.pe = lost_pe;
  g_note.clear();
  write(*s, f);
  publish(*s);
}

int take_fault(std::string *what) {
  std::lock_guard<std::mutex> g(g_mu);
  tdist_device_state_t *s = g_state;
  if (!s) return 0;
  int code = fault_code(*s);
  if (code == 0) return 0;
  if (code == TDIST_ERR_BOOTSTRAP) {  // a lost peer: sticky for good
    std::string m = peer_lost_message();
    *what = strfmt("PE %d: peer PE %d was lost: %s", s->my_pe, s->fault_pe,
                   m.empty() ? "(no message)" : m.c_str());
    return code;
  }
  if (code == TDIST_ERR_TIMEOUT && !g_note.empty())  // a process-local wait: no heap slot
    *what = strfmt("PE %d: %s", s->my_pe, g_note.c_str());
  else if (code == TDIST_ERR_TIMEOUT)
    *what = strfmt(
        "PE %d: wait timed out on PE %d's heap offset %llu: expected %llu (cmp %d), "
        "saw %llu",
        s->my_pe, s->fault_pe, (unsigned long long)s->fault_offset, (unsigned long long)s->fault_expected,
        s->fault_cmp, (unsigned long long)s->fault_seen);
  else
    *what = strfmt("PE %d: invalid device call (PE %d, heap offset %llu, address 0x%llx)%s%s", s->my_pe,
                   s->fault_pe, (unsigned long long)s->fault_offset, (unsigned long long)s->fault_seen,
                   g_note.empty() ? "" : ": ", g_note.c_str());
  g_note.clear();
  std::atomic_ref<int32_t>(s->fault_code).store(0, std::memory_order_relaxed);
  publish(*s);  // the heap flag goes down with the record
  return code;
}

}  // namespace tdist
