// Open MPI baseline for the CPU kernels: MPI_Alltoall and MPI_Allreduce on the same bytes per
// rank as tdist-bench-cpu, measured the same way (warm-up, timed loop between barriers, slowest
// rank's mean), results checked against a reference (fresh random inputs, poisoned outputs).
//
//   mpirun --allow-run-as-root --oversubscribe -n 4 tdist-mpi-baseline --op alltoall
//          --dtype f32 --bytes 65536,1048576 [--iters N] [--warmup N]
// Prints one JSON object per size on rank 0's stdout (same schema as tdist-bench-cpu).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tdist/kernels/dtype.hpp"

using tdist::kernels::DType;
namespace tk = tdist::kernels;

namespace {

struct Options {
  std::string op = "alltoall";
  DType dtype = DType::f32;
  std::vector<size_t> bytes = {1 << 20};
  int iters = 0;  // 0: chosen from the size, or from min_time
  int warmup = 2;
  double min_time = 0;  // > 0 (and no iters): iterations so that the timed loop runs about this long
};

std::vector<size_t> parse_sizes(const char *s) {
  std::vector<size_t> out;
  std::string str(s);
  size_t pos = 0;
  while (pos < str.size()) {
    size_t comma = str.find(',', pos);
    std::string tok = str.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char *end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    std::string suf(end);
    if (suf == "K" || suf == "k" || suf == "KiB")
      v *= 1024;
    else if (suf == "M" || suf == "MiB")
      v *= 1024 * 1024;
    else if (suf == "G" || suf == "GiB")
      v *= 1024.0 * 1024 * 1024;
    out.push_back(size_t(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f64: return MPI_DOUBLE;
    case DType::f16:
    case DType::bf16: return MPI_UINT16_T;
    default: return MPI_FLOAT;
  }
}

DType g_half_dtype = DType::f16;
// Sum of fp16/bf16 (uint16 storage) through float, one rounding per step, like the tdist kernels.
void half_sum(void *in, void *inout, int *len, MPI_Datatype *) {
  auto *a = static_cast<uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i) {
    if (g_half_dtype == DType::f16)
      b[i] = tk::f32_to_f16(tk::f16_to_f32(a[i]) + tk::f16_to_f32(b[i]));
    else
      b[i] = tk::f32_to_bf16(tk::bf16_to_f32(a[i]) + tk::bf16_to_f32(b[i]));
  }
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mpi_baseline: %s needs a value\n", a.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      return argv[++i];
    };
    if (a == "--op")
      o.op = next();
    else if (a == "--dtype") {
      if (!tk::parse_dtype(next(), &o.dtype)) {
        std::fprintf(stderr, "mpi_baseline: unknown dtype %s (f32, f64, f16, bf16)\n", argv[i]);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    } else if (a == "--bytes")
      o.bytes = parse_sizes(next());
    else if (a == "--iters")
      o.iters = std::atoi(next());
    else if (a == "--warmup")
      o.warmup = std::atoi(next());
    else if (a == "--min-time")
      o.min_time = std::atof(next());
    else {
      std::fprintf(stderr,
                   "usage: mpi_baseline --op alltoall|allreduce --dtype f32|f64|f16|bf16 "
                   "--bytes N[,N...] [--iters N] [--warmup N] [--min-time S]\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (o.op != "alltoall" && o.op != "allreduce") {
    if (rank == 0) std::fprintf(stderr, "mpi_baseline: --op must be alltoall or allreduce\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  g_half_dtype = o.dtype;
  MPI_Op half_op;
  MPI_Op_create(&half_sum, 1, &half_op);
  const bool half = o.dtype == DType::f16 || o.dtype == DType::bf16;
  const size_t es = tk::dtype_size(o.dtype);
  int failures = 0;
  uint64_t seed_base = 0;
  if (rank == 0) seed_base = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  MPI_Bcast(&seed_base, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);

  for (size_t nbytes : o.bytes) {
    // Elements per rank: alltoall sends count elements to each peer.
    size_t count =
        o.op == "alltoall" ? std::max<size_t>(1, nbytes / es / world) : std::max<size_t>(1, nbytes / es);
    size_t n = o.op == "alltoall" ? count * world : count;
    std::vector<unsigned char> in(n * es), out(n * es);
    uint64_t seed = tk::splitmix64(seed_base + nbytes);
    tk::fill_random(o.dtype, in.data(), n, seed, rank);
    auto run_once = [&]() {
      if (o.op == "alltoall")
        MPI_Alltoall(in.data(), int(count), mpi_type(o.dtype), out.data(), int(count), mpi_type(o.dtype),
                     MPI_COMM_WORLD);
      else
        MPI_Allreduce(in.data(), out.data(), int(n), mpi_type(o.dtype), half ? half_op : MPI_SUM,
                      MPI_COMM_WORLD);
    };
    auto check = [&]() -> int {
      int bad = 0;
      std::vector<unsigned char> ex(es);
      for (size_t i = 0; i < n && bad < 1; ++i) {
        if (o.op == "alltoall") {
          // out[src][j] = in_src[rank][j]
          size_t src = i / count, j = i % count;
          tk::gen_element(o.dtype, ex.data(), seed, int(src), rank * count + j);
          if (std::memcmp(ex.data(), &out[i * es], es) != 0) ++bad;
        } else {
          double ref = 0, mag = 0;
          for (int r = 0; r < world; ++r) {
            unsigned char e[8];
            tk::gen_element(o.dtype, e, seed, r, i);
            double v = tk::load_as_double(o.dtype, e, 0);
            ref += v;
            mag += std::fabs(v);
          }
          double got = tk::load_as_double(o.dtype, out.data(), i);
          double tol = 2.0 * world * tk::dtype_unit_roundoff(o.dtype) * (mag + 1e-30);
          if (!(std::fabs(got - ref) <= tol)) ++bad;
        }
        if (bad)
          std::fprintf(stderr, "mpi_baseline[%d]: %s mismatch at element %zu\n", rank, o.op.c_str(), i);
      }
      return bad;
    };
    tk::poison(out.data(), out.size());
    run_once();
    int bad = check();
    int iters = o.iters > 0 ? o.iters : int(std::clamp<double>(2e8 / double(n * es * world + 1), 5, 2000));
    for (int i = 0; i < o.warmup; ++i) run_once();
    if (o.iters <= 0 && o.min_time > 0) {
      // as tdist-bench-cpu's --min-time: a short probe sets the count, the same on every rank
      MPI_Barrier(MPI_COMM_WORLD);
      const double p0 = now_s();
      for (int i = 0; i < 5; ++i) run_once();
      const double per = std::max((now_s() - p0) / 5, 1e-9);
      int want = int(std::clamp(o.min_time / per, 5.0, 1e6));
      MPI_Allreduce(&want, &iters, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    tk::poison(out.data(), out.size());
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    for (int i = 0; i < iters; ++i) run_once();
    double dt = (now_s() - t0) / iters;
    bad += check();
    double dt_max = 0;
    int bad_sum = 0;
    MPI_Reduce(&dt, &dt_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &bad_sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    failures += bad;
    if (rank == 0) {
      size_t bytes = n * es;
      std::printf(
          "{\"impl\": \"mpi\", \"kernel\": \"mpi_%s\", \"dtype\": \"%s\", \"ranks\": %d, "
          "\"bytes\": %zu, \"iters\": %d, \"time_us\": %.3f, \"algbw_GBps\": %.4f, "
          "\"check\": \"%s\"}\n",
          o.op.c_str(), tk::dtype_name(o.dtype), world, bytes, iters, dt_max * 1e6,
          double(bytes) / dt_max / 1e9, bad_sum ? "FAIL" : "ok");
      std::fflush(stdout);
    }
  }
  MPI_Op_free(&half_op);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total ? 1 : 0;
}
