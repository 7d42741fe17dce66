#include "fucina/exec/context.h"

#include <algorithm>
#include <thread>

#include "fucina/core/error.h"
#include "fucina/exec/scope.h"
#include "fucina/exec/trace.h"

namespace fucina {

ExecContext::ExecContext(ExecOptions options)
    : backend_(options.backend),
      account_(std::make_shared<MemoryAccount>(deviceOf(options.backend), options.device_blocks)) {
  if (backend_ != Backend::cpu && backend_ != Backend::reference && backend_ != Backend::webgpu)
    fail(ErrorCode::InvalidArgument, "ExecOptions.backend must be Backend::cpu, reference or webgpu, got " +
                                         std::to_string(static_cast<int>(backend_)));
  if ((backend_ == Backend::webgpu) != (options.device_blocks != nullptr))
    fail(ErrorCode::InvalidArgument, "ExecOptions.device_blocks are given with Backend::webgpu and only then");
  if (options.threads < 0)
    fail(ErrorCode::InvalidArgument,
         "ExecOptions.threads must be >= 0 (0 = hardware concurrency), got " +
             std::to_string(options.threads));
  int threads = options.threads;
  if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // The reference backend computes on the calling thread only (Note [Backends]).
  if (threads > 1 && backend_ == Backend::cpu) pool_ = std::make_unique<WorkPool>(threads);
  account_->setCacheLimit(options.cache_limit);
  account_->setCacheToHighWater(options.cache_to_high_water);
}

ExecContext::~ExecContext() {
  // Scopes still open (a context destroyed inside one) release their tensors now, on any thread.
  while (true) {
    ExecScope* scope;
    {
      std::lock_guard lock(scopes_mutex_);
      if (scopes_.empty()) break;
      scope = scopes_.begin()->second.front();  // closing the outermost closes the rest
    }
    scope->close();
  }
  // Buffers that outlive the context (tensors the caller still holds) are freed, not cached.
  account_->detach();
}

ExecContext& ExecContext::on(Device device) {
  if (device == this->device()) return *this;
  if (device == Device::cpu && host_context_) return *host_context_;
  if (device_context_ && device_context_->device() == device) return *device_context_;
  fail(ErrorCode::DeviceUnavailable, "no " + std::string(name(device)) +
                                         " device is attached to this context (JS: init({ device: '" +
                                         std::string(name(device)) + "' }))");
}

void ExecContext::attach(std::unique_ptr<ExecContext> device_context) {
  if (!device_context || device_context->device() == Device::cpu || device() != Device::cpu)
    fail(ErrorCode::InvalidArgument, "attach: a device context is attached to a cpu context");
  device_context->host_context_ = this;
  device_context_ = std::move(device_context);
}

ExecContext* ExecContext::attached(Device device) const {
  return device_context_ && device_context_->device() == device ? device_context_.get() : nullptr;
}

void ExecContext::parallelFor(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) const {
  if (n <= 0) return;
  FUCINA_TRACE_EVENT(trace::Kind::kRegion, n, grain, fn.target_type().name());
  FUCINA_TRACE_END_OF_SCOPE(trace::Kind::kRegionEnd);
  if (pool_ && n >= 2 * grain) {
    pool_->parallelFor(n, grain, fn);
  } else {
    fn(0, n);
  }
}

void ExecContext::adopt(const std::shared_ptr<Releasable>& tensor) {
  std::lock_guard lock(scopes_mutex_);
  auto it = scopes_.find(std::this_thread::get_id());
  if (it != scopes_.end()) it->second.back()->owned_.push_back(tensor);
}

}  // namespace fucina
