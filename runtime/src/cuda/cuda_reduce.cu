// Sum, max, min and argmax over the dimensions where `out` has size 1, with
// the cpu's rules (ops/scalar_reduce.h): threads fold strided elements into
// partials that combine in a fixed order, so results do not depend on timing.
#include "cuda/cuda_common.cuh"
#include "ops/scalar_reduce.h"

namespace gdrt::cuda {
namespace {

// Kept and reduced dimensions, each coalesced (at most kMaxRank).
struct ReduceShape {
  int kept_rank = 0, red_rank = 0;
  std::int64_t outer = 1, red_n = 1;
  std::int64_t kept_sizes[kMaxRank], kept_in[kMaxRank], kept_out[kMaxRank];
  std::int64_t red_sizes[kMaxRank], red_strides[kMaxRank];
};

ReduceShape reduce_shape(const TensorView& out, const TensorView& in) {
  std::vector<std::int64_t> ks, ki, ko, rs, rt;
  for (std::size_t d = 0; d < in.sizes.size(); ++d) {
    if (in.sizes[d] == 1) continue;
    if (out.sizes[d] == in.sizes[d]) {
      // Kept dims that both views walk with one stride merge (outputs are
      // independent, so the order they are visited in does not matter).
      if (!ks.empty() && ki.back() == in.strides[d] * in.sizes[d] && ko.back() == out.strides[d] * in.sizes[d]) {
        ks.back() *= in.sizes[d];
        ki.back() = in.strides[d];
        ko.back() = out.strides[d];
      } else {
        ks.push_back(in.sizes[d]);
        ki.push_back(in.strides[d]);
        ko.push_back(out.strides[d]);
      }
    } else {
      rs.push_back(in.sizes[d]);
      rt.push_back(in.strides[d]);
    }
  }
  // Adjacent reduced dims one stride apart become one; the flattened
  // row-major index (argmax's answer) is unchanged by the merge.
  for (std::size_t d = rs.size(); d-- > 1;) {
    if (rt[d - 1] != rt[d] * rs[d]) continue;
    rs[d - 1] *= rs[d];
    rt[d - 1] = rt[d];
    rs.erase(rs.begin() + static_cast<std::ptrdiff_t>(d));
    rt.erase(rt.begin() + static_cast<std::ptrdiff_t>(d));
  }
  if (ks.size() > static_cast<std::size_t>(kMaxRank) || rs.size() > static_cast<std::size_t>(kMaxRank))
    throw Error("cuda reduce: more than " + std::to_string(kMaxRank) + " kept or reduced dimensions after merging");
  ReduceShape s;
  s.kept_rank = static_cast<int>(ks.size());
  s.red_rank = static_cast<int>(rs.size());
  for (std::size_t d = 0; d < ks.size(); ++d) {
    s.kept_sizes[d] = ks[d];
    s.kept_in[d] = ki[d];
    s.kept_out[d] = ko[d];
    s.outer *= ks[d];
  }
  for (std::size_t d = 0; d < rs.size(); ++d) {
    s.red_sizes[d] = rs[d];
    s.red_strides[d] = rt[d];
    s.red_n *= rs[d];
  }
  return s;
}

template <class T>
using Acc = scalar::ReduceAcc<T>;
template <class A>
using Partial = scalar::ReducePartial<A>;

__device__ __forceinline__ std::int64_t red_offset(const ReduceShape& s, std::int64_t r) {
  std::int64_t off = 0;
  for (int d = s.red_rank - 1; d >= 0; --d) {
    off += (r % s.red_sizes[d]) * s.red_strides[d];
    r /= s.red_sizes[d];
  }
  return off;
}

__device__ __forceinline__ void kept_offsets(const ReduceShape& s, std::int64_t o, std::int64_t& in_off,
                                             std::int64_t& out_off) {
  in_off = out_off = 0;
  for (int d = s.kept_rank - 1; d >= 0; --d) {
    const std::int64_t idx = o % s.kept_sizes[d];
    o /= s.kept_sizes[d];
    in_off += idx * s.kept_in[d];
    out_off += idx * s.kept_out[d];
  }
}

// Short reductions: one thread per output, in the cpu's order.
template <class T>
__global__ void reduce_thread_kernel(ReduceOp op, ReduceShape s, const T* x, void* out) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < s.outer; o += step) {
    std::int64_t in_off, out_off;
    kept_offsets(s, o, in_off, out_off);
    Partial<Acc<T>> p = scalar::reduce_start<Acc<T>>(op);
    for (std::int64_t r = 0; r < s.red_n; ++r)
      scalar::reduce_fold(op, p, static_cast<Acc<T>>(x[in_off + red_offset(s, r)]), r);
    scalar::reduce_store<T>(op, out, out_off, p);
  }
}

constexpr int kReduceBlock = 512;

// Combines every thread's partial; thread 0 gets the block's.
template <class A>
__device__ Partial<A> block_combine(ReduceOp op, Partial<A> p) {
  __shared__ A values[kReduceBlock];
  __shared__ std::int64_t indices[kReduceBlock];
  values[threadIdx.x] = p.value;
  indices[threadIdx.x] = p.index;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const Partial<A> c = scalar::reduce_combine(op, Partial<A>{values[threadIdx.x], indices[threadIdx.x]},
                                                  Partial<A>{values[threadIdx.x + half], indices[threadIdx.x + half]});
      values[threadIdx.x] = c.value;
      indices[threadIdx.x] = c.index;
    }
    __syncthreads();
  }
  const Partial<A> out{values[0], indices[0]};
  __syncthreads();  // the shared arrays are reused by the caller's next round
  return out;
}

// Long reductions: one block per output, or per (output, slice) when a few
// outputs would leave most of the GPU idle; slices write partials that
// reduce_slices_kernel combines in slice order, so results do not depend on
// timing.
template <class T>
__global__ void __launch_bounds__(kReduceBlock) reduce_block_kernel(ReduceOp op, ReduceShape s, const T* x, void* out,
                                                                    std::int64_t slices, Acc<T>* part_values,
                                                                    std::int64_t* part_indices) {
  using A = Acc<T>;
  for (std::int64_t b = blockIdx.x; b < s.outer * slices; b += gridDim.x) {
    const std::int64_t o = b / slices, j = b % slices;
    const std::int64_t begin = s.red_n * j / slices, end = s.red_n * (j + 1) / slices;
    std::int64_t in_off, out_off;
    kept_offsets(s, o, in_off, out_off);
    Partial<A> p = scalar::reduce_start<A>(op);
    for (std::int64_t r = begin + threadIdx.x; r < end; r += blockDim.x)
      scalar::reduce_fold(op, p, static_cast<A>(x[in_off + red_offset(s, r)]), r);
    p = block_combine(op, p);
    if (threadIdx.x != 0) continue;
    if (slices == 1) {
      scalar::reduce_store<T>(op, out, out_off, p);
    } else {
      part_values[b] = p.value;
      part_indices[b] = p.index;
    }
  }
}

template <class T>
__global__ void reduce_slices_kernel(ReduceOp op, ReduceShape s, std::int64_t slices, const Acc<T>* part_values,
                                     const std::int64_t* part_indices, void* out) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t o = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < s.outer; o += step) {
    std::int64_t in_off, out_off;
    kept_offsets(s, o, in_off, out_off);
    Partial<Acc<T>> p{part_values[o * slices], part_indices[o * slices]};
    for (std::int64_t j = 1; j < slices; ++j)
      p = scalar::reduce_combine(op, p,
                                 Partial<Acc<T>>{part_values[o * slices + j], part_indices[o * slices + j]});
    scalar::reduce_store<T>(op, out, out_off, p);
  }
}

template <class T>
void reduce_typed(const LaunchContext& ctx, ReduceOp op, const TensorView& out, const TensorView& in) {
  const ReduceShape s = reduce_shape(out, in);
  if (s.outer == 0) return;
  const T* x = static_cast<const T*>(in.data);
  if (s.red_n <= 128) {
    reduce_thread_kernel<T><<<grid_for(ctx, s.outer), kBlock, 0, ctx.stream>>>(op, s, x, out.data);
    check_launch("gdrt::reduce");
    return;
  }
  const std::int64_t sms = std::max(ctx.sm_count, 1);
  // Slices of at least 32K elements, enough of them to give every SM a few blocks.
  std::int64_t slices = 1;
  if (s.outer < 2 * sms && ctx.scratch)
    slices = std::max<std::int64_t>(1, std::min(s.red_n / 32768, (4 * sms + s.outer - 1) / s.outer));
  const auto blocks = static_cast<unsigned>(std::min(s.outer * slices, sms * 8));
  if (slices == 1) {
    reduce_block_kernel<T><<<blocks, kReduceBlock, 0, ctx.stream>>>(op, s, x, out.data, 1, nullptr, nullptr);
    check_launch("gdrt::reduce");
    return;
  }
  const auto parts = static_cast<std::size_t>(s.outer * slices);
  auto* values = static_cast<Acc<T>*>(ctx.scratch->get(parts * sizeof(Acc<T>)));
  auto* indices = static_cast<std::int64_t*>(ctx.scratch->get(parts * sizeof(std::int64_t)));
  reduce_block_kernel<T><<<blocks, kReduceBlock, 0, ctx.stream>>>(op, s, x, out.data, slices, values, indices);
  check_launch("gdrt::reduce");
  reduce_slices_kernel<T><<<grid_for(ctx, s.outer), kBlock, 0, ctx.stream>>>(op, s, slices, values, indices,
                                                                               out.data);
  check_launch("gdrt::reduce");
}

}  // namespace

void reduce(const LaunchContext& ctx, ReduceOp op, const TensorView& out, const TensorView& in) {
  GDRT_DTYPE_DISPATCH("cuda", in.dtype, T, reduce_typed<T>(ctx, op, out, in));
}

}  // namespace gdrt::cuda
