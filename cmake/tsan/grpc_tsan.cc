// Makes ThreadSanitizer see the happens-before edges of gRPC's completion queues. Debian's
// libgrpc is not built with TSan, so the atomics and lock-free queues that carry a batch
// from the thread that starts it to the thread that sees it complete are invisible, and
// everything written before grpc_call_start_batch and read after the completion (the
// CallOpSet and CallbackWithSuccessTag of grpcpp, inline code compiled into our binaries;
// the messages; our reactors) would be reported as racing. Linked into the test binaries
// that use gRPC in a BOOSTER_TSAN build only (operator/feedback/CMakeLists.txt).
//
// The edge modelled is the core API's contract (grpc/grpc.h): a tag handed to
// grpc_call_start_batch or grpc_server_request_*call is returned by
// grpc_completion_queue_next/pluck once that operation has completed. So each of these
// entry points is defined here, calls the real one in libgrpc (dlsym RTLD_NEXT), and
// releases on the tag before the operation starts / acquires on the tag once the queue
// returns it. Every path from a batch to its callback goes through one of them:
// libgrpc++ calls all five through the PLT, so the executable's definitions interpose
// them; grpcpp's callback API (ServerBidiReactor and friends, gRPC 1.51 with the epoll
// poller) runs its reactions on libgrpc++'s "callback alternative" threads, which take
// each tag from grpc_completion_queue_next before calling its functor. Nothing is
// annotated that gRPC does not promise: a tag is acquired only after it was returned.
#include <dlfcn.h>
#include <grpc/grpc.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

namespace {

template <typename Fn>
Fn Real(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    std::fprintf(stderr, "grpc_tsan: %s not found in the next object\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

void Release(void* tag) {
  if (tag != nullptr) __tsan_release(tag);
}

grpc_event Acquired(grpc_event ev) {
  if (ev.type == GRPC_OP_COMPLETE && ev.tag != nullptr) __tsan_acquire(ev.tag);
  return ev;
}

}  // namespace

extern "C" {

grpc_call_error grpc_call_start_batch(grpc_call* call, const grpc_op* ops, size_t nops, void* tag,
                                      void* reserved) {
  using Fn = grpc_call_error (*)(grpc_call*, const grpc_op*, size_t, void*, void*);
  static const Fn real = Real<Fn>("grpc_call_start_batch");
  Release(tag);
  return real(call, ops, nops, tag, reserved);
}

grpc_call_error grpc_server_request_call(grpc_server* server, grpc_call** call,
                                         grpc_call_details* details,
                                         grpc_metadata_array* request_metadata,
                                         grpc_completion_queue* cq_bound_to_call,
                                         grpc_completion_queue* cq_for_notification,
                                         void* tag_new) {
  using Fn =
      grpc_call_error (*)(grpc_server*, grpc_call**, grpc_call_details*, grpc_metadata_array*,
                          grpc_completion_queue*, grpc_completion_queue*, void*);
  static const Fn real = Real<Fn>("grpc_server_request_call");
  Release(tag_new);
  return real(server, call, details, request_metadata, cq_bound_to_call, cq_for_notification,
              tag_new);
}

grpc_call_error grpc_server_request_registered_call(grpc_server* server, void* registered_method,
                                                    grpc_call** call, gpr_timespec* deadline,
                                                    grpc_metadata_array* request_metadata,
                                                    grpc_byte_buffer** optional_payload,
                                                    grpc_completion_queue* cq_bound_to_call,
                                                    grpc_completion_queue* cq_for_notification,
                                                    void* tag_new) {
  using Fn = grpc_call_error (*)(grpc_server*, void*, grpc_call**, gpr_timespec*,
                                 grpc_metadata_array*, grpc_byte_buffer**, grpc_completion_queue*,
                                 grpc_completion_queue*, void*);
  static const Fn real = Real<Fn>("grpc_server_request_registered_call");
  Release(tag_new);
  return real(server, registered_method, call, deadline, request_metadata, optional_payload,
              cq_bound_to_call, cq_for_notification, tag_new);
}

grpc_event grpc_completion_queue_next(grpc_completion_queue* cq, gpr_timespec deadline,
                                      void* reserved) {
  using Fn = grpc_event (*)(grpc_completion_queue*, gpr_timespec, void*);
  static const Fn real = Real<Fn>("grpc_completion_queue_next");
  return Acquired(real(cq, deadline, reserved));
}

grpc_event grpc_completion_queue_pluck(grpc_completion_queue* cq, void* tag, gpr_timespec deadline,
                                       void* reserved) {
  using Fn = grpc_event (*)(grpc_completion_queue*, void*, gpr_timespec, void*);
  static const Fn real = Real<Fn>("grpc_completion_queue_pluck");
  return Acquired(real(cq, tag, deadline, reserved));
}

}  // extern "C"
