// Open MPI baseline of the MoE benchmark: the path a torch user writes with all_to_all_single and
// split sizes, on the routing of moe_routing.hpp, measured like tdist-moe-bench-cpu (slowest rank's
// mean). Dispatch: permute the (token, expert) pairs by expert, exchange the per-expert counts
// (MPI_Alltoall; torch: an all_to_all_single of the counts and the host sync of .tolist()),
// MPI_Alltoallv of the expanded rows (one row per pair: a token going to two experts of one rank
// crosses twice), permute by local expert (the layout of MoeBuffer's output). Combine: permute back,
// MPI_Alltoallv, the weighted sum per token in fp32 at the home rank.
//
//   mpirun --allow-run-as-root --oversubscribe -n 4 tdist-moe-mpi-baseline --tokens 128,512
//          --hidden 7168 --topk 8 --experts 256 [--routing random|skewed] [--iters N]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "moe_routing.hpp"

namespace tk = tdist::kernels;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me = 0, W = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &W);
  tdist_bench::MoeArgs args;
  if (std::string why = tdist_bench::parse_moe_args(argc, argv, false, &args); !why.empty()) {
    if (me == 0)
      std::fprintf(
          stderr,
          "tdist-moe-mpi-baseline: %s\nusage: tdist-moe-mpi-baseline [--tokens N,..] [--hidden H] "
          "[--topk K] [--experts E] [--routing random|skewed] [--dtype bf16] [--iters N] [--warmup N]\n",
          why.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const std::vector<int64_t> &tokens = args.tokens;
  const int64_t H = args.hidden, K = args.topk, E = args.experts;
  const std::string &routing = args.routing;
  const tk::DType dt = args.dtype;
  const int iters = args.iters, warmup = args.warmup;
  if (E % W) {
    if (me == 0)
      std::fprintf(stderr, "tdist-moe-mpi-baseline: --experts %lld is not a multiple of the %d ranks\n",
                   (long long)E, W);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int64_t L = E / W;
  const size_t es = tk::dtype_size(dt), row = size_t(H) * es;
  MPI_Datatype row_t;
  MPI_Type_contiguous(int(row), MPI_BYTE, &row_t);
  MPI_Type_commit(&row_t);
  uint64_t seed = 0;
  if (me == 0) seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int failures = 0;
  for (int64_t T : tokens) {
    const tdist_bench::Routing r = tdist_bench::make_routing(routing, seed, me, T, K, E);
    std::vector<unsigned char> x(size_t(T) * row), out(size_t(T) * row);
    tk::fill_random(dt, x.data(), size_t(T * H), seed, me);
    // state of one dispatch, kept for its combine
    std::vector<int64_t> order;  // pairs (t * K + k) sorted by expert
    std::vector<unsigned char> sendbuf, recvbuf, grouped, back;
    std::vector<int> scount(static_cast<size_t>(W)), sdisp(static_cast<size_t>(W)),
        rcount(static_cast<size_t>(W)), rdisp(static_cast<size_t>(W));
    std::vector<int> ecount(static_cast<size_t>(E)), recv_ecount(size_t(W * L));
    std::vector<int64_t> grouped_from;  // grouped row -> received row
    auto dispatch = [&] {
      order.clear();
      for (int64_t i = 0; i < T * K; ++i)
        if (r.idx[size_t(i)] >= 0) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return r.idx[size_t(a)] < r.idx[size_t(b)]; });
      std::fill(ecount.begin(), ecount.end(), 0);
      for (int64_t i : order) ++ecount[size_t(r.idx[size_t(i)])];
      sendbuf.resize(order.size() * row);
      for (size_t j = 0; j < order.size(); ++j)
        std::memcpy(&sendbuf[j * row], &x[size_t(order[j] / K) * row], row);
      MPI_Alltoall(ecount.data(), int(L), MPI_INT, recv_ecount.data(), int(L), MPI_INT, MPI_COMM_WORLD);
      int s = 0, q = 0;
      for (int p = 0; p < W; ++p) {
        scount[size_t(p)] = 0;
        rcount[size_t(p)] = 0;
        for (int64_t j = 0; j < L; ++j) {
          scount[size_t(p)] += ecount[size_t(p * L + j)];
          rcount[size_t(p)] += recv_ecount[size_t(p * L + j)];
        }
        sdisp[size_t(p)] = s;
        rdisp[size_t(p)] = q;
        s += scount[size_t(p)];
        q += rcount[size_t(p)];
      }
      recvbuf.resize(size_t(q) * row);
      MPI_Alltoallv(sendbuf.data(), scount.data(), sdisp.data(), row_t, recvbuf.data(), rcount.data(),
                    rdisp.data(), row_t, MPI_COMM_WORLD);
      // received: by source, within a source by expert; regroup by local expert, sources in order
      grouped.resize(recvbuf.size());
      grouped_from.clear();
      for (int64_t j = 0; j < L; ++j)
        for (int p = 0; p < W; ++p) {
          int64_t start = rdisp[size_t(p)];
          for (int64_t jj = 0; jj < j; ++jj) start += recv_ecount[size_t(p * L + jj)];
          for (int64_t i = 0; i < recv_ecount[size_t(p * L + j)]; ++i) grouped_from.push_back(start + i);
        }
      for (size_t g = 0; g < grouped_from.size(); ++g)
        std::memcpy(&grouped[g * row], &recvbuf[size_t(grouped_from[g]) * row], row);
    };
    auto combine = [&](const std::vector<unsigned char> &y) {
      for (size_t g = 0; g < grouped_from.size(); ++g)
        std::memcpy(&recvbuf[size_t(grouped_from[g]) * row], &y[g * row], row);
      back.resize(sendbuf.size());
      MPI_Alltoallv(recvbuf.data(), rcount.data(), rdisp.data(), row_t, back.data(), scount.data(),
                    sdisp.data(), row_t, MPI_COMM_WORLD);
      std::vector<float> acc(size_t(T * H), 0.0f);
      for (size_t j = 0; j < order.size(); ++j) {
        const int64_t t = order[j] / K;
        const float w = r.w[size_t(order[j])];
        tk::dispatch_dtype(dt, [&](auto e) {  // typed, as MoeBuffer's combine does it
          using E = decltype(e);
          const auto *src = reinterpret_cast<const typename E::storage *>(&back[j * row]);
          for (int64_t c = 0; c < H; ++c) acc[size_t(t * H + c)] += w * float(E::load(src, size_t(c)));
        });
      }
      tk::dispatch_dtype(dt, [&](auto e) {
        using E = decltype(e);
        auto *dst = reinterpret_cast<typename E::storage *>(out.data());
        for (int64_t i = 0; i < T * H; ++i) dst[i] = E::from(typename E::acc(acc[size_t(i)]));
      });
    };
    tk::poison(out.data(), out.size());
    dispatch();
    combine(grouped);  // identity experts
    int bad = 0;
    for (int64_t t = 0; t < T && !bad; ++t) {
      double ws = 0;
      for (int64_t k = 0; k < K; ++k) ws += r.idx[size_t(t * K + k)] >= 0 ? r.w[size_t(t * K + k)] : 0.0;
      for (int64_t c = 0; c < H && !bad; ++c) {
        const double xv = tk::load_as_double(dt, x.data(), size_t(t * H + c));
        const double got = tk::load_as_double(dt, out.data(), size_t(t * H + c));
        if (!(std::fabs(got - ws * xv) <=
              (2 * tk::dtype_unit_roundoff(dt) + double(K) * 0x1p-22) * std::fabs(ws * xv) + 1e-30))
          bad = 1;
      }
    }
    const int n =
        iters > 0 ? iters : int(std::max<double>(5, std::min<double>(200, 4e8 / double(T * H * es * K + 1))));
    for (int i = 0; i < warmup; ++i) dispatch(), combine(grouped);
    double td = 0, tc = 0;
    for (int i = 0; i < n; ++i) {
      double t0 = now_s();
      dispatch();
      double t1 = now_s();
      std::vector<unsigned char> y = grouped;  // (the copy is not timed)
      double t2 = now_s();
      combine(y);
      tc += now_s() - t2;
      td += t1 - t0;
    }
    td /= n;
    tc /= n;
    double td_max = 0, tc_max = 0, bytes = double(sendbuf.size()), bytes_max = 0;
    int bad_sum = 0;
    MPI_Reduce(&td, &td_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tc, &tc_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bytes, &bytes_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bad, &bad_sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    failures += bad;
    if (me == 0)
      std::printf(
          "{\"impl\": \"mpi\", \"kernel\": \"moe_alltoallv\", \"dtype\": \"%s\", \"ranks\": %d, \"tokens\": "
          "%lld, "
          "\"hidden\": %lld, \"topk\": %lld, \"experts\": %lld, \"routing\": \"%s\", \"iters\": %d, "
          "\"dispatch_us\": %.2f, \"combine_us\": %.2f, \"expanded_bytes_per_rank\": %.0f, \"check\": "
          "\"%s\"}\n",
          tk::dtype_name(dt), W, (long long)T, (long long)H, (long long)K, (long long)E, routing.c_str(), n,
          td_max * 1e6, tc_max * 1e6, bytes_max, bad_sum ? "FAIL" : "ok");
    std::fflush(stdout);
  }
  MPI_Type_free(&row_t);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total ? 1 : 0;
}
