#include "event_calls.h"  // cupti.h brings the parameter structs (generated_cuda*_meta.h)

namespace gpudiag::cupti {
namespace {

template <class P>
EventUse recorded(const void* params, bool per_thread) {
  const auto& p = *static_cast<const P*>(params);
  if constexpr (requires { p.hEvent; })
    return {EventUse::Op::Record, p.hEvent, p.hStream, per_thread};
  else
    return {EventUse::Op::Record, p.event, p.stream, per_thread};
}

}  // namespace

EventUse event_use(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return {};
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020: return recorded<cudaEventRecord_v3020_params>(params, false);
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000:
        return recorded<cudaEventRecord_ptsz_v7000_params>(params, true);
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
        return recorded<cudaEventRecordWithFlags_v11010_params>(params, false);
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010:
        return recorded<cudaEventRecordWithFlags_ptsz_v11010_params>(params, true);
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020:
        return {EventUse::Op::Query, static_cast<const cudaEventQuery_v3020_params*>(params)->event};
      default: return {};
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuEventRecord: return recorded<cuEventRecord_params>(params, false);
      case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: return recorded<cuEventRecord_ptsz_params>(params, true);
      case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags: return recorded<cuEventRecordWithFlags_params>(params, false);
      case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz:
        return recorded<cuEventRecordWithFlags_ptsz_params>(params, true);
      case CUPTI_DRIVER_TRACE_CBID_cuEventQuery:
        return {EventUse::Op::Query, static_cast<const cuEventQuery_params*>(params)->hEvent};
      default: return {};
    }
  }
  return {};
}

QueriedStream queried_stream(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return {};
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020 ||
                                                cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000)) {
    static_assert(sizeof(cudaStreamQuery_v3020_params) == sizeof(cudaStreamQuery_ptsz_v7000_params));
    return {true, static_cast<const cudaStreamQuery_v3020_params*>(params)->stream,
            cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000};
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API &&
      (cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery || cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz)) {
    static_assert(sizeof(cuStreamQuery_params) == sizeof(cuStreamQuery_ptsz_params));
    return {true, static_cast<const cuStreamQuery_params*>(params)->hStream,
            cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz};
  }
  return {};
}

bool is_query(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API)
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000;
  return domain == CUPTI_CB_DOMAIN_DRIVER_API &&
         (cbid == CUPTI_DRIVER_TRACE_CBID_cuEventQuery || cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery ||
          cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz);
}

}  // namespace gpudiag::cupti
