// tdist._C: nanobind bindings over the C API (include/tdist/tdist.h).
//
// Addresses cross the boundary as Python ints. Every failing call raises the tdist.TdistError
// subclass of its status (docs/CONTRACT.md section 2): the Python package registers a factory
// (code, message) -> exception at import, so the hierarchy is defined once, in Python.
// The NVIDIA host API (include/tdist/NVIDIA/host.h) is looked up with dlsym at run time, so this
// module builds and loads whether or not libtdist was built with the NVIDIA backend.
#include <dlfcn.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tdist/abi.h"
#include "tdist/tdist.h"

namespace nb = nanobind;

namespace {

// The factory (code, message) -> exception that tdist/errors.py registers. A strong reference,
// dropped by an atexit hook (clear_error_factory) while the interpreter still runs: an nb::object
// with static storage would be released by the C++ static destructors after Py_Finalize, and
// freeing a Python object then aborts the process ("PyThreadState_Get ... GIL is released").
// Both functions run with the GIL held; after the hook, errors raise as RuntimeError.
nb::handle g_error_factory;

void set_error_factory(nb::handle f) {
  nb::handle old = g_error_factory;
  g_error_factory = f.inc_ref();
  old.dec_ref();
}

void clear_error_factory() {
  nb::handle old = g_error_factory;
  g_error_factory = nb::handle();
  old.dec_ref();
}

[[noreturn]] void raise_status(int status, const std::string &what) {
  std::string msg = tdist_last_error_message();
  if (msg.empty()) msg = what + ": " + tdist_status_name(status);
  if (!g_error_factory.is_valid()) throw std::runtime_error(msg);
  nb::object exc = nb::borrow(g_error_factory)(status, msg);
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exc.ptr())), exc.ptr());
  throw nb::python_error();
}

void check(int status, const char *what) {
  if (status < 0) raise_status(status, what);
}

uintptr_t check_ptr(void *p, const char *what) {
  if (p == nullptr) {
    int st = tdist_last_error();
    raise_status(st < 0 ? st : TDIST_ERR_INNER, what);
  }
  return reinterpret_cast<uintptr_t>(p);
}

// libtdist is a dependency of this RTLD_LOCAL-loaded module, so its symbols are not global:
// look them up through a handle on libtdist itself, found from the address of tdist_init.
void *libtdist_handle() {
  static void *handle = [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&tdist_init), &info) == 0 || info.dli_fname == nullptr)
      return (void *)nullptr;
    return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }();
  return handle;
}

template <class Fn>
Fn cuda_sym(const char *name) {
  void *h = libtdist_handle();
  return h ? reinterpret_cast<Fn>(dlsym(h, name)) : nullptr;
}

template <class Fn>
Fn require_cuda_sym(const char *name) {
  Fn f = cuda_sym<Fn>(name);
  if (f == nullptr) {
    tdist_clear_error();
    raise_status(TDIST_ERR_NOT_SUPPORTED,
                 std::string(name) + ": this libtdist was built without the NVIDIA backend");
  }
  return f;
}

// One kernel launch with its parameters kept packed: the eager fast path of
// tdist_kernels._launch.Launch. `cells` holds every kernel parameter in an 8-byte cell (an
// integer of 1, 2, 4 or 8 bytes is its little-endian low bytes), `params` points at them;
// `slots[i]` is the parameter that call argument i fills, or -1 for an argument the kernel
// does not take (Triton specialised it into a constant). A call stores the arguments (Python
// ints only: a tensor or None is refused, never converted) and calls tdist_cuda_launch.
class CudaLaunch {
 public:
  CudaLaunch(uintptr_t function, std::tuple<uint32_t, uint32_t, uint32_t> grid, uint32_t block_threads,
             uint32_t smem_bytes, size_t n_params, std::vector<int> slots)
      : function_(reinterpret_cast<void *>(function)),
        grid_(grid),
        block_(block_threads),
        smem_(smem_bytes),
        cells_(n_params, 0),
        params_(n_params),
        slots_(std::move(slots)),
        launch_(require_cuda_sym<LaunchFn>("tdist_cuda_launch")) {
    if (function_ == nullptr) throw nb::value_error("CudaLaunch: function is 0");
    for (size_t i = 0; i < n_params; ++i) params_[i] = &cells_[i];
    for (int s : slots_)
      if (s >= static_cast<int>(n_params) || s < -1)
        throw nb::value_error(("CudaLaunch: argument slot " + std::to_string(s) + " is not one of the " +
                               std::to_string(n_params) + " parameters")
                                  .c_str());
  }

  void operator()(uintptr_t stream, nb::args args) {
    if (args.size() != slots_.size())
      throw nb::type_error(("CudaLaunch: " + std::to_string(slots_.size()) + " arguments expected, got " +
                            std::to_string(args.size()))
                               .c_str());
    for (size_t i = 0; i < slots_.size(); ++i) {
      PyObject *a = PyTuple_GET_ITEM(args.ptr(), static_cast<Py_ssize_t>(i));
      nb::object addr;  // a tensor's data_ptr(), as Triton's launcher takes it
      if (!PyLong_Check(a)) {
        nb::handle h(a);
        if (a != Py_None && nb::hasattr(h, "data_ptr")) addr = h.attr("data_ptr")();
        if (!addr.is_valid() || !PyLong_Check(addr.ptr()))
          throw nb::type_error(("CudaLaunch: argument " + std::to_string(i) +
                                " must be an int (a device address or an integer) or a tensor, got " +
                                std::string(Py_TYPE(a)->tp_name))
                                   .c_str());
        a = addr.ptr();
      }
      if (slots_[i] < 0) continue;
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
      uint64_t u = static_cast<uint64_t>(v);
      if (overflow > 0) u = PyLong_AsUnsignedLongLong(a);
      if (overflow < 0 || (overflow > 0 && PyErr_Occurred())) {
        PyErr_Clear();
        throw nb::value_error(
            ("CudaLaunch: argument " + std::to_string(i) + " does not fit 64 bits").c_str());
      }
      cells_[slots_[i]] = u;
    }
    const auto [gx, gy, gz] = grid_;
    check(launch_(function_, gx, gy, gz, block_, smem_, reinterpret_cast<void *>(stream), params_.data()),
          "tdist_cuda_launch");
  }

  const std::vector<int> &slots() const { return slots_; }
  size_t n_params() const { return cells_.size(); }

 private:
  using LaunchFn = int (*)(void *, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, void *, void **);
  void *function_;
  std::tuple<uint32_t, uint32_t, uint32_t> grid_;
  uint32_t block_, smem_;
  std::vector<uint64_t> cells_;
  std::vector<void *> params_;
  std::vector<int> slots_;
  LaunchFn launch_;
};

tdist_init_attr_t make_attr(int rank, int n_ranks, uint64_t local_mem_size, const std::string &ip_port,
                            uint32_t engine, int backend, int device_id, uint32_t shm_init_timeout_s,
                            uint32_t control_timeout_s, uint64_t wait_timeout_ms) {
  tdist_init_attr_t a;
  check(tdist_init_attr_default(&a), "tdist_init_attr_default");
  a.my_rank = rank;
  a.n_ranks = n_ranks;
  a.local_mem_size = local_mem_size;
  if (ip_port.size() >= TDIST_IP_PORT_MAX) {
    tdist_clear_error();
    raise_status(TDIST_ERR_INVALID_PARAM, "ip_port '" + ip_port + "' is longer than " +
                                              std::to_string(TDIST_IP_PORT_MAX - 1) + " characters");
  }
  std::memset(a.ip_port, 0, sizeof(a.ip_port));
  std::memcpy(a.ip_port, ip_port.data(), ip_port.size());
  a.option_attr.data_op_engine_type = engine;
  a.option_attr.backend = backend;
  a.option_attr.device_id = device_id;
  a.option_attr.shm_init_timeout_s = shm_init_timeout_s;
  a.option_attr.control_timeout_s = control_timeout_s;
  a.option_attr.wait_timeout_ms = wait_timeout_ms;
  return a;
}

// Arguments of a collective call. A value that cannot be converted (not an int, negative, too
// large) must not raise here: the other PEs are already in, or about to enter, the collective and
// would wait for this PE until their timeout. The runtime is told instead
// (tdist_collective_reject) and a placeholder goes in, so the call fails on every PE with
// InvalidParam naming this PE and the argument; the status is raised from that call.
struct CollectiveArgs {
  explicit CollectiveArgs(const char *name) : api(name) {}
  const char *api;
  std::string why;  // first rejected argument, "" if all converted

  std::string repr(nb::handle h) {
    nb::str r = nb::repr(h);
    std::string out = r.c_str();
    return out.size() > 64 ? out.substr(0, 61) + "..." : out;
  }
  void reject(const std::string &w) {
    if (why.empty()) why = std::string(api) + ": " + w;
  }
  // An integer in [lo, hi] (Python ints of any size; bool counts as an int, as in Python).
  long long integer(nb::handle h, const char *name, long long lo, unsigned long long hi,
                    long long placeholder) {
    PyObject *idx = PyNumber_Index(h.ptr());
    if (!idx) {
      PyErr_Clear();
      reject(std::string(name) + " must be an int, not " + Py_TYPE(h.ptr())->tp_name + " (" + repr(h) + ")");
      return placeholder;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(idx, &overflow);
    unsigned long long u = 0;
    bool ok = overflow == 0 && v >= lo && (v < 0 || (unsigned long long)v <= hi);
    if (overflow > 0 && hi > (unsigned long long)LLONG_MAX) {  // past int64 but maybe within uint64
      u = PyLong_AsUnsignedLongLong(idx);
      if (PyErr_Occurred())
        PyErr_Clear();
      else
        ok = u <= hi;
      if (ok) v = (long long)u;
    }
    Py_DECREF(idx);
    if (!ok) {
      reject(strfmt_range(name, h, lo, hi));
      return placeholder;
    }
    return v;
  }
  std::string strfmt_range(const char *name, nb::handle h, long long lo, unsigned long long hi) {
    return std::string(name) + " " + repr(h) + " is out of range [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "]";
  }
  size_t size(nb::handle h, const char *name) { return size_t(integer(h, name, 0, SIZE_MAX, 1)); }
  int i32(nb::handle h, const char *name, int placeholder) {
    return int(integer(h, name, INT32_MIN, INT32_MAX, placeholder));
  }
  uintptr_t addr(nb::handle h, const char *name) { return uintptr_t(integer(h, name, 0, UINTPTR_MAX, 0)); }
  std::string bytes(nb::handle h, const char *name) {
    if (PyBytes_Check(h.ptr()))
      return std::string(PyBytes_AS_STRING(h.ptr()), size_t(PyBytes_GET_SIZE(h.ptr())));
    reject(std::string(name) + " must be bytes, not " + Py_TYPE(h.ptr())->tp_name);
    return {};
  }
  // Before the C call: hands a rejection to the runtime.
  void commit() {
    if (!why.empty() && tdist_collective_reject(why.c_str()) != TDIST_SUCCESS)
      raise_status(tdist_last_error(), api);
  }
};

const tdist_device_state_t &state() {
  const tdist_device_state_t *s = tdist_host_device_state();
  if (s == nullptr) {
    int st = tdist_last_error();
    raise_status(st < 0 ? st : TDIST_ERR_NOT_INITED, "tdist_host_device_state");
  }
  return *s;
}

#define TDIST_ATTR_ARGS                                                                                      \
  nb::arg("rank"), nb::arg("n_ranks"), nb::arg("local_mem_size"), nb::arg("ip_port"), nb::arg("engine"),     \
      nb::arg("backend"), nb::arg("device_id"), nb::arg("shm_init_timeout_s"), nb::arg("control_timeout_s"), \
      nb::arg("wait_timeout_ms")

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "tdist C API bindings (see include/tdist/tdist.h)";

  m.def("_set_error_factory", [](nb::object f) { set_error_factory(f); });
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&clear_error_factory));
  m.def("status_name", [](int s) { return std::string(tdist_status_name(s)); });
  m.def("last_error", &tdist_last_error);
  m.def("last_error_message", [] { return std::string(tdist_last_error_message()); });

  m.def("init_attr_default", [] {
    tdist_init_attr_t a;
    check(tdist_init_attr_default(&a), "tdist_init_attr_default");
    nb::dict d;
    d["rank"] = a.my_rank;
    d["n_ranks"] = a.n_ranks;
    d["local_mem_size"] = a.local_mem_size;
    d["ip_port"] = std::string(a.ip_port);
    d["engine"] = a.option_attr.data_op_engine_type;
    d["backend"] = a.option_attr.backend;
    d["device_id"] = a.option_attr.device_id;
    d["shm_init_timeout_s"] = a.option_attr.shm_init_timeout_s;
    d["control_timeout_s"] = a.option_attr.control_timeout_s;
    d["wait_timeout_ms"] = a.option_attr.wait_timeout_ms;
    return d;
  });
  m.def(
      "init",
      [](int rank, int n, uint64_t size, const std::string &ip, uint32_t engine, int backend, int dev,
         uint32_t t0, uint32_t t1, uint64_t t2) {
        tdist_init_attr_t a = make_attr(rank, n, size, ip, engine, backend, dev, t0, t1, t2);
        int st;
        {
          nb::gil_scoped_release nogil;  // rendezvous blocks; let other Python threads run
          st = tdist_init(&a);
        }
        check(st, "tdist_init");
      },
      TDIST_ATTR_ARGS);
  m.def(
      "init_from_env",
      [](int rank, int n, uint64_t size, const std::string &ip, uint32_t engine, int backend, int dev,
         uint32_t t0, uint32_t t1, uint64_t t2) {
        tdist_init_attr_t a = make_attr(rank, n, size, ip, engine, backend, dev, t0, t1, t2);
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_init_from_env(&a);
        }
        check(st, "tdist_init_from_env");
      },
      TDIST_ATTR_ARGS);
  m.def("get_uniqueid", [] {
    tdist_uniqueid_t uid;
    check(tdist_get_uniqueid(&uid), "tdist_get_uniqueid");
    return nb::bytes(uid.bytes, sizeof(uid.bytes));
  });
  m.def(
      "init_with_uniqueid",
      [](nb::bytes uid_bytes, int rank, int n, uint64_t size, uint32_t engine, int backend, int dev,
         uint32_t t0, uint32_t t1, uint64_t t2) {
        tdist_uniqueid_t uid;
        if (uid_bytes.size() != sizeof(uid.bytes)) {
          tdist_clear_error();
          raise_status(TDIST_ERR_INVALID_PARAM, "unique id must be " + std::to_string(sizeof(uid.bytes)) +
                                                    " bytes, got " + std::to_string(uid_bytes.size()));
        }
        std::memcpy(uid.bytes, uid_bytes.c_str(), sizeof(uid.bytes));
        tdist_init_attr_t a = make_attr(rank, n, size, "", engine, backend, dev, t0, t1, t2);
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_init_with_uniqueid(&uid, rank, n, &a);
        }
        check(st, "tdist_init_with_uniqueid");
      },
      nb::arg("uid"), nb::arg("rank"), nb::arg("n_ranks"), nb::arg("local_mem_size"), nb::arg("engine"),
      nb::arg("backend"), nb::arg("device_id"), nb::arg("shm_init_timeout_s"), nb::arg("control_timeout_s"),
      nb::arg("wait_timeout_ms"));
  m.def("finalize", [] {
    int st;
    {
      nb::gil_scoped_release nogil;
      st = tdist_finalize();
    }
    check(st, "tdist_finalize");
  });
  m.def("initialized", [] { return tdist_initialized() != 0; });
  m.def(
      "set_conf_store_tls",
      [](bool enable, const std::string &tls_info) {
        check(tdist_set_conf_store_tls(enable ? 1 : 0, tls_info.c_str()), "tdist_set_conf_store_tls");
      },
      nb::arg("enable"), nb::arg("tls_info") = "");

  // ---- heap (collective) ----
  m.def(
      "malloc",
      [](nb::handle size) {
        CollectiveArgs a("tdist.malloc");
        size_t n = a.size(size, "size");
        a.commit();
        void *p;
        {
          nb::gil_scoped_release nogil;
          p = tdist_malloc(n);
        }
        return check_ptr(p, "tdist_malloc");
      },
      nb::arg("size").none());
  m.def(
      "calloc",
      [](nb::handle count, nb::handle size) {
        CollectiveArgs a("tdist.calloc");
        size_t c = a.size(count, "count"), n = a.size(size, "size");
        a.commit();
        void *p;
        {
          nb::gil_scoped_release nogil;
          p = tdist_calloc(c, n);
        }
        return check_ptr(p, "tdist_calloc");
      },
      nb::arg("count").none(), nb::arg("size").none());
  m.def(
      "align",
      [](nb::handle alignment, nb::handle size) {
        CollectiveArgs a("tdist.align");
        size_t al = a.size(alignment, "alignment"), n = a.size(size, "size");
        a.commit();
        void *p;
        {
          nb::gil_scoped_release nogil;
          p = tdist_align(al, n);
        }
        return check_ptr(p, "tdist_align");
      },
      nb::arg("alignment").none(), nb::arg("size").none());
  m.def(
      "free",
      [](nb::handle ptr) {
        CollectiveArgs a("tdist.free");
        uintptr_t p = a.addr(ptr, "ptr");
        a.commit();
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_free(reinterpret_cast<void *>(p));
        }
        check(st, "tdist_free");
      },
      nb::arg("ptr").none());
  // Tells the runtime that this PE's next collective call is to fail on every PE (Python layers
  // above, e.g. shmem, reject their own arguments this way instead of raising alone).
  m.def("collective_reject", [](const std::string &why) {
    check(tdist_collective_reject(why.c_str()), "tdist_collective_reject");
  });
  m.def("heap_offset", [](uintptr_t p) {
    int64_t off = tdist_heap_offset(reinterpret_cast<void *>(p));
    if (off < 0)
      raise_status(tdist_last_error() < 0 ? tdist_last_error() : TDIST_ERR_INVALID_PARAM,
                   "tdist_heap_offset");
    return off;
  });
  m.def("heap_free_bytes", [] { return tdist_heap_free_bytes(); });

  // ---- device state (host copy) ----
  m.def("my_pe", [] { return state().my_pe; });
  m.def("n_pes", [] { return state().n_pes; });
  m.def("heap_base", [] { return reinterpret_cast<uintptr_t>(state().heap_base); });
  m.def("heap_size", [] { return state().heap_size; });
  m.def("engine_mask", [] { return state().engine_mask; });
  m.def("p2p_heap_bases", [] {
    const tdist_device_state_t &s = state();
    std::vector<uintptr_t> out;
    for (int i = 0; i < s.n_pes; ++i)
      out.push_back(s.p2p_heap_base ? reinterpret_cast<uintptr_t>(s.p2p_heap_base[i]) : 0);
    return out;
  });

  // ---- address translation: the runtime's own (tdist_ptr; runtime/core/translate.hpp) ----
  m.def("ptr", [](uintptr_t addr, int pe) {
    tdist_clear_error();
    void *p = tdist_ptr(reinterpret_cast<void *>(addr), pe);
    if (p == nullptr && tdist_last_error() < 0) raise_status(tdist_last_error(), "tdist_ptr");
    return reinterpret_cast<uintptr_t>(p);  // 0: pe's heap is not mapped into this process
  });

  // ---- host synchronisation, control plane ----
  m.def("host_barrier_all", [] {
    int st;
    {
      nb::gil_scoped_release nogil;
      st = tdist_host_barrier_all();
    }
    check(st, "tdist_host_barrier_all");
  });
  m.def("ctrl_barrier", [] {
    int st;
    {
      nb::gil_scoped_release nogil;
      st = tdist_ctrl_barrier();
    }
    check(st, "tdist_ctrl_barrier");
  });
  m.def(
      "ctrl_allgather",
      [](nb::handle in) {
        CollectiveArgs a("tdist.ctrl_allgather");
        std::string src = a.bytes(in, "in");
        a.commit();
        int n = state().n_pes;
        std::string out(static_cast<size_t>(n) * src.size(), '\0');
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_ctrl_allgather(src.data(), out.data(), src.size());
        }
        check(st, "tdist_ctrl_allgather");
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("data").none());
  m.def(
      "ctrl_broadcast",
      [](nb::handle buf, nb::handle root) {
        CollectiveArgs a("tdist.ctrl_broadcast");
        std::string b = a.bytes(buf, "buf");
        int r = a.i32(root, "root", 0);
        a.commit();
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_ctrl_broadcast(b.data(), b.size(), r);
        }
        check(st, "tdist_ctrl_broadcast");
        return nb::bytes(b.data(), b.size());
      },
      nb::arg("buf").none(), nb::arg("root").none());

  // ---- teams ----
  m.attr("TEAM_WORLD") = TDIST_TEAM_WORLD;
  m.attr("TEAM_INVALID") = TDIST_TEAM_INVALID;
  m.def("team_my_pe", [](int t) { return tdist_team_my_pe(t); });
  m.def("team_n_pes", [](int t) { return tdist_team_n_pes(t); });
  m.def("team_translate_pe", [](int src, int pe, int dst) { return tdist_team_translate_pe(src, pe, dst); });
  m.def(
      "team_split_strided",
      [](nb::handle parent_, nb::handle start_, nb::handle stride_, nb::handle size_, nb::handle heap_) {
        CollectiveArgs a("tdist.team_split_strided");
        int parent = a.i32(parent_, "parent", 0), start = a.i32(start_, "start", 0);
        int stride = a.i32(stride_, "stride", 1), size = a.i32(size_, "size", 1);
        tdist_team_config_t cfg{uint64_t(a.integer(heap_, "heap_bytes", 0, UINT64_MAX, 0))};
        a.commit();
        tdist_team_t t = TDIST_TEAM_INVALID;
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_team_split_strided_ex(parent, start, stride, size, &cfg, &t);
        }
        check(st, "tdist_team_split_strided_ex");
        return t;
      },
      nb::arg("parent").none(), nb::arg("start").none(), nb::arg("stride").none(), nb::arg("size").none(),
      nb::arg("heap_bytes").none() = 0);
  m.def(
      "team_split_2d",
      [](nb::handle parent_, nb::handle xrange_, nb::handle xheap_, nb::handle yheap_) {
        CollectiveArgs a("tdist.team_split_2d");
        int parent = a.i32(parent_, "parent", 0), xrange = a.i32(xrange_, "xrange", 1);
        tdist_team_config_t xc{uint64_t(a.integer(xheap_, "x_heap_bytes", 0, UINT64_MAX, 0))};
        tdist_team_config_t yc{uint64_t(a.integer(yheap_, "y_heap_bytes", 0, UINT64_MAX, 0))};
        a.commit();
        tdist_team_t x = TDIST_TEAM_INVALID, y = TDIST_TEAM_INVALID;
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_team_split_2d(parent, xrange, &xc, &x, &yc, &y);
        }
        check(st, "tdist_team_split_2d");
        return nb::make_tuple(x, y);
      },
      nb::arg("parent").none(), nb::arg("xrange").none(), nb::arg("x_heap_bytes").none() = 0,
      nb::arg("y_heap_bytes").none() = 0);
  m.def("team_destroy", [](int t) { check(tdist_team_destroy(t), "tdist_team_destroy"); });
  m.def("team_world_pes", [](int t) {
    int start = 0, stride = 0, size = 0;
    check(tdist_team_world_pes(t, &start, &stride, &size), "tdist_team_world_pes");
    return nb::make_tuple(start, stride, size);
  });

  // ---- team collectives (the team's members only) ----
  // The team handle is converted like every argument; one that is not an int reaches the runtime as
  // TDIST_TEAM_INVALID, which refuses the call on this PE alone and names the rejection (a PE that
  // cannot say which team it means cannot take part in that team's collective).
  m.def(
      "team_malloc",
      [](nb::handle team_, nb::handle size) {
        CollectiveArgs a("tdist.team_malloc");
        int team = a.i32(team_, "team", TDIST_TEAM_INVALID);
        size_t n = a.size(size, "size");
        a.commit();
        void *p;
        {
          nb::gil_scoped_release nogil;
          p = tdist_team_malloc(team, n);
        }
        return check_ptr(p, "tdist_team_malloc");
      },
      nb::arg("team").none(), nb::arg("size").none());
  m.def(
      "team_align",
      [](nb::handle team_, nb::handle alignment, nb::handle size) {
        CollectiveArgs a("tdist.team_align");
        int team = a.i32(team_, "team", TDIST_TEAM_INVALID);
        size_t al = a.size(alignment, "alignment"), n = a.size(size, "size");
        a.commit();
        void *p;
        {
          nb::gil_scoped_release nogil;
          p = tdist_team_align(team, al, n);
        }
        return check_ptr(p, "tdist_team_align");
      },
      nb::arg("team").none(), nb::arg("alignment").none(), nb::arg("size").none());
  m.def(
      "team_free",
      [](nb::handle team_, nb::handle ptr) {
        CollectiveArgs a("tdist.team_free");
        int team = a.i32(team_, "team", TDIST_TEAM_INVALID);
        uintptr_t p = a.addr(ptr, "ptr");
        a.commit();
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_team_free(team, reinterpret_cast<void *>(p));
        }
        check(st, "tdist_team_free");
      },
      nb::arg("team").none(), nb::arg("ptr").none());
  m.def("team_heap_free_bytes", [](int t) {
    tdist_clear_error();
    size_t n = tdist_team_heap_free_bytes(t);
    if (n == 0 && tdist_last_error() < 0) raise_status(tdist_last_error(), "tdist_team_heap_free_bytes");
    return n;
  });
  m.def("team_barrier", [](int t) {
    int st;
    {
      nb::gil_scoped_release nogil;
      st = tdist_team_barrier(t);
    }
    check(st, "tdist_team_barrier");
  });
  m.def(
      "team_ctrl_allgather",
      [](nb::handle team_, nb::handle in) {
        CollectiveArgs a("tdist.team_ctrl_allgather");
        int team = a.i32(team_, "team", TDIST_TEAM_INVALID);
        std::string src = a.bytes(in, "data");
        a.commit();
        tdist_clear_error();
        const int n = tdist_team_n_pes(team);  // a bad team: the call below refuses it
        if (n < 0) tdist_clear_error();
        std::string out(static_cast<size_t>(std::max(n, 0)) * src.size(), '\0');
        int st;
        {
          nb::gil_scoped_release nogil;
          st = tdist_team_ctrl_allgather(team, src.data(), n > 0 ? out.data() : nullptr, src.size());
        }
        check(st, "tdist_team_ctrl_allgather");
        return nb::bytes(out.data(), out.size());
      },
      nb::arg("team").none(), nb::arg("data").none());

  // ---- NVIDIA host API, resolved at run time ----
  m.def("cuda_available", [] { return cuda_sym<void *>("tdist_cuda_register_module") != nullptr; });
  m.def("cuda_device", [] {
    auto f = cuda_sym<int (*)()>("tdist_cuda_device");
    return f ? f() : -1;
  });
  m.def("cuda_device_state", [] {
    auto f = cuda_sym<void *(*)()>("tdist_cuda_device_state");
    return f ? reinterpret_cast<uintptr_t>(f()) : uintptr_t(0);
  });
  m.def("cuda_engine_bitcode", []() -> std::optional<std::string> {
    auto f = cuda_sym<const char *(*)()>("tdist_cuda_engine_bitcode");
    const char *p = f ? f() : nullptr;
    if (!p) return std::nullopt;
    return std::string(p);
  });
  m.def("cuda_register_module", [](uintptr_t mod) {
    auto f = require_cuda_sym<int (*)(void *)>("tdist_cuda_register_module");
    check(f(reinterpret_cast<void *>(mod)), "tdist_cuda_register_module");
  });
  m.def("cuda_unregister_module", [](uintptr_t mod) {
    auto f = require_cuda_sym<int (*)(void *)>("tdist_cuda_unregister_module");
    check(f(reinterpret_cast<void *>(mod)), "tdist_cuda_unregister_module");
  });
  m.def("cuda_check_fault", [](uintptr_t stream) {
    auto f = require_cuda_sym<int (*)(void *)>("tdist_cuda_check_fault");
    int st;
    {
      nb::gil_scoped_release nogil;
      st = f(reinterpret_cast<void *>(stream));
    }
    check(st, "tdist_cuda_check_fault");
  });
  m.def("cuda_launch_available", [] { return cuda_sym<void *>("tdist_cuda_launch") != nullptr; });
  nb::class_<CudaLaunch>(m, "CudaLaunch")
      .def(nb::init<uintptr_t, std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t, uint32_t, size_t,
                    std::vector<int>>(),
           nb::arg("function"), nb::arg("grid"), nb::arg("block_threads"), nb::arg("smem_bytes"),
           nb::arg("n_params"), nb::arg("slots"))
      .def("__call__", &CudaLaunch::operator(), nb::arg("stream"), nb::arg("args"))
      .def_prop_ro("slots", &CudaLaunch::slots)
      .def_prop_ro("n_params", &CudaLaunch::n_params);
  m.def("cuda_barrier_all_on_stream", [](uintptr_t stream) {
    auto f = require_cuda_sym<int (*)(void *)>("tdist_cuda_barrier_all_on_stream");
    check(f(reinterpret_cast<void *>(stream)), "tdist_cuda_barrier_all_on_stream");
  });
  m.def("cuda_team_barrier_on_stream", [](int team, uintptr_t stream) {
    auto f = require_cuda_sym<int (*)(int32_t, void *)>("tdist_cuda_team_barrier_on_stream");
    check(f(team, reinterpret_cast<void *>(stream)), "tdist_cuda_team_barrier_on_stream");
  });
  m.def("cuda_putmem_on_stream", [](uintptr_t dst, uintptr_t src, size_t n, int pe, uintptr_t stream) {
    auto f =
        require_cuda_sym<int (*)(void *, const void *, size_t, int, void *)>("tdist_cuda_putmem_on_stream");
    check(f(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), n, pe,
            reinterpret_cast<void *>(stream)),
          "tdist_cuda_putmem_on_stream");
  });
  m.def("cuda_getmem_on_stream", [](uintptr_t dst, uintptr_t src, size_t n, int pe, uintptr_t stream) {
    auto f =
        require_cuda_sym<int (*)(void *, const void *, size_t, int, void *)>("tdist_cuda_getmem_on_stream");
    check(f(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), n, pe,
            reinterpret_cast<void *>(stream)),
          "tdist_cuda_getmem_on_stream");
  });
  m.def("cuda_signal_on_stream", [](uintptr_t sig, uint64_t value, int op, int pe, uintptr_t stream) {
    auto f = require_cuda_sym<int (*)(void *, uint64_t, int, int, void *)>("tdist_cuda_signal_on_stream");
    check(f(reinterpret_cast<void *>(sig), value, op, pe, reinterpret_cast<void *>(stream)),
          "tdist_cuda_signal_on_stream");
  });
  m.def("cuda_signal_wait_until_on_stream", [](uintptr_t sig, int cmp, uint64_t value, uintptr_t stream) {
    auto f =
        require_cuda_sym<int (*)(void *, int, uint64_t, void *)>("tdist_cuda_signal_wait_until_on_stream");
    check(f(reinterpret_cast<void *>(sig), cmp, value, reinterpret_cast<void *>(stream)),
          "tdist_cuda_signal_wait_until_on_stream");
  });
}
