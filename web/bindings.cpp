// Embind binding of the engine. JS holds tensors as shared_ptr<Handle>; every entry point runs
// under guard(), which turns a C++ failure into a FucinaError (made by the facade's
// Module.makeError) left in Module.failure for the facade to throw, and returns normally: a JS
// exception must never cross C++ frames, since the threaded build's JS-based exceptions would
// skip their destructors (no-grad scopes, tensors and the stack would leak). For the same reason
// every val read here is checked before it is converted. JS callbacks (checkpoint blocks, custom
// VJPs, gradcheck losses) run on the thread that called in; the facade's wrappers catch a
// callback's own exception and park it for the facade to rethrow as is.
#include <emscripten.h>
#include <emscripten/bind.h>
#include <emscripten/heap.h>
#include <emscripten/val.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <fucina/fucina.h>
#include <fucina/nn/generate.h>
#include <fucina/nn/gpt2.h>
#include <fucina/nn/llama.h>
#include <fucina/nn/lora.h>
#include <fucina/backend/webgpu/gpu.h>

using emscripten::val;
using fucina::ErrorCode;
using fucina::ExecContext;
using fucina::Tensor;
using fucina::internal::RawTensor;

namespace {

// ---------------------------------------------------------------- errors

EM_JS(void, fucina_report, (const char* code, const char* message), {
  Module.failure = Module.makeError(UTF8ToString(code), UTF8ToString(message));
});

// Runs f; on failure reports the error and returns an empty value the facade never looks at.
template <class F>
auto guard(F&& f) -> decltype(f()) {
  using R = decltype(f());
  try {
    return f();
  } catch (const fucina::Error& e) {
    fucina_report(std::string(fucina::name(e.code())).c_str(), e.what());
  } catch (const std::bad_alloc&) {
    fucina_report("OutOfMemory", "OutOfMemory: the WebAssembly heap is exhausted");
  } catch (const std::length_error&) {
    fucina_report("OutOfMemory", "OutOfMemory: a buffer larger than the WebAssembly heap was requested");
  } catch (const std::exception& e) {
    fucina_report("InvalidArgument", (std::string("InvalidArgument: ") + e.what()).c_str());
  } catch (...) {
    fucina_report("Internal", "Internal: an unknown C++ exception");
  }
  if constexpr (std::is_same_v<R, val>) return val::undefined();
  else if constexpr (!std::is_void_v<R>) return R{};
}

[[noreturn]] void invalid(const std::string& message) { fucina::fail(ErrorCode::InvalidArgument, message); }

// ---------------------------------------------------------------- context and handles

std::unique_ptr<ExecContext> g_ctx;  // the cpu's; the webgpu device's context is attached to it
fucina::Device g_default_device = fucina::Device::cpu;

ExecContext& hostCtx() {
  if (!g_ctx) invalid("fucina is not initialized: call init() first");
  return *g_ctx;
}

// The context of the default device (fc.defaultDevice): where creation functions put tensors.
ExecContext& ctx() { return hostCtx().on(g_default_device); }

// The context of a tensor's device: ops compute where their operands live.
ExecContext& ctxOf(const Tensor& t) { return hostCtx().on(t.device()); }
// A model's methods compute where its tensors are (Model::to), whatever the default device.
ExecContext& ctxOf(const fucina::nn::Model& m) { return hostCtx().on(m.device()); }
ExecContext& ctxOf(const std::vector<Tensor>& ts) { return ts.empty() ? ctx() : ctxOf(ts.front()); }

fucina::Device toDevice(const std::string& name) {
  if (name == "cpu") return fucina::Device::cpu;
  if (name == "webgpu") return fucina::Device::webgpu;
  invalid("unknown device '" + name + "' (use cpu or webgpu)");
}

struct Handle {
  Tensor t;
};
using HandlePtr = std::shared_ptr<Handle>;

HandlePtr wrap(Tensor t) { return std::make_shared<Handle>(Handle{std::move(t)}); }

// A new JS handle on t. Built with val's constructor: a class instance passed straight as an
// argument of a JS call is a temporary that embind deletes when the call returns.
val handleOf(const Tensor& t) { return val(wrap(t)); }

// JS arrays -> C++ values, validated with messages a JS user can act on.
fucina::Tags toTags(const val& v, const char* what) {
  if (!v.isArray()) invalid(std::string(what) + " must be an array of axis names");
  fucina::Tags tags;
  const int n = v["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    val s = v[i];
    if (!s.isString()) invalid(std::string(what) + "[" + std::to_string(i) + "] is not a string");
    tags.emplace_back(s.as<std::string>());
  }
  return tags;
}

fucina::Extents toExtents(const val& v) {
  if (!v.isArray()) invalid("shape must be an array of non-negative integers");
  fucina::Extents extents;
  const int n = v["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    val e = v[i];
    if (!e.isNumber()) invalid("shape[" + std::to_string(i) + "] is not a number");
    const double d = e.as<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < 0 || d > 9007199254740991.0)
      invalid("shape[" + std::to_string(i) + "] = " + std::to_string(d) +
              " is not a non-negative integer");
    extents.push_back(static_cast<int64_t>(d));
  }
  return extents;
}

fucina::Reduction toReduction(const std::string& name) {
  if (name == "mean") return fucina::Reduction::mean;
  if (name == "sum") return fucina::Reduction::sum;
  if (name == "none") return fucina::Reduction::none;
  invalid("unknown reduction '" + name + "' (use mean, sum or none)");
}

fucina::DType toDType(const std::string& name) {
  using fucina::DType;
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64, DType::u8, DType::q8_0})
    if (fucina::name(d) == name) return d;
  invalid("unknown dtype '" + name + "' (use f32, f16, bf16, f64, i32, i64, u8 or q8_0)");
}

fucina::CompareOp toCompareOp(const std::string& name) {
  using fucina::CompareOp;
  for (auto [n, op] : {std::pair{"eq", CompareOp::eq}, {"ne", CompareOp::ne}, {"lt", CompareOp::lt},
                       {"le", CompareOp::le}, {"gt", CompareOp::gt}, {"ge", CompareOp::ge}})
    if (name == n) return op;
  invalid("compare: unknown op '" + name + "' (use eq, ne, lt, le, gt or ge)");
}

// An integer argument given as a JS number (the facade checks the type; this checks the value).
int64_t toInt(double d, const std::string& what) {
  if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9007199254740991.0)
    invalid(what + " must be an integer, got " + std::to_string(d));
  return static_cast<int64_t>(d);
}

// A size_t argument: a non-negative integer that fits (size_t is 32 bits on wasm32).
size_t toSize(double d, const std::string& what) {
  const int64_t v = toInt(d, what);
  if (v < 0 || static_cast<uint64_t>(v) > std::numeric_limits<size_t>::max())
    invalid(what + " must be a non-negative integer below 2^32, got " + std::to_string(d));
  return static_cast<size_t>(v);
}

// A seed: a non-negative integer JS number (exact up to 2^53).
uint64_t toSeed(double d, const std::string& what) {
  if (toInt(d, what) < 0) invalid(what + " must be a non-negative integer, got " + std::to_string(d));
  return static_cast<uint64_t>(d);
}

// A live handle of this module. The facade checks first; this keeps embind from throwing here
// when something else slips through (another instance's handle, a deleted one).
Handle& handleAt(const val& v, const std::string& what) {
  if (v.isNull() || v.isUndefined()) invalid(what + " is missing");
  if (!v.instanceof(val::module_property("Handle")))
    invalid(what + " belongs to another fucina instance (or is not a tensor)");
  if (v.call<bool>("isDeleted")) invalid(what + " was disposed");
  return *v.as<Handle*>(emscripten::allow_raw_pointers());
}

const Tensor& tensorOf(const val& v, const char* what) { return handleAt(v, what).t; }

val arrayOf(const fucina::Tags& tags) {
  val a = val::array();
  for (fucina::Tag t : tags) a.call<void>("push", std::string(t.name()));
  return a;
}


// A JS copy of a view on the wasm memory, through the facade's Module.copyOut, which returns
// null rather than throw (a copy can exceed the JS heap).
template <class T>
val copyOut(size_t n, const T* data) {
  val copy = val::module_property("copyOut")(val(emscripten::typed_memory_view(n, data)));
  if (copy.isNull()) fucina::fail(ErrorCode::OutOfMemory, "no room for a copy of " + std::to_string(n) + " values in JS");
  return copy;
}

val optionalHandle(const std::optional<Tensor>& t) { return t ? handleOf(*t) : val::null(); }

// ---------------------------------------------------------------- creation and reading

HandlePtr fromValues(val tags, val shape, val values, std::string dtype, bool variable) {
  return guard([&] {
    fucina::Tags t = toTags(tags, "tags");
    fucina::Extents e = toExtents(shape);
    const fucina::DType d = toDType(dtype);
    if (!variable && (d == fucina::DType::f64 || d == fucina::DType::i64 || d == fucina::DType::i32)) {
      // JS numbers are doubles: these dtypes hold more of them than f32 does
      const std::vector<double> wide = emscripten::convertJSArrayToNumberVector<double>(values);
      return wrap(Tensor::fromRaw(ctx(), RawTensor::fromSlice(ctx(), t, e, std::span<const double>(wide), d)));
    }
    std::vector<float> data = emscripten::convertJSArrayToNumberVector<float>(values);
    if (variable) return wrap(Tensor::variableFromSlice(ctx(), t, e, data, d));
    return wrap(Tensor::fromRaw(ctx(), RawTensor::fromSlice(ctx(), t, e, data, d)));
  });
}

HandlePtr full(val tags, val shape, double value, std::string dtype) {
  return guard([&] { return wrap(Tensor::full(ctx(), toTags(tags, "tags"), toExtents(shape), value, toDType(dtype))); });
}

// toArray and item read on the host, at once: a device tensor's values come back asynchronously.
void requireHostRead(const Tensor& t, const char* what) {
  if (t.device() != fucina::Device::cpu)
    fucina::fail(ErrorCode::DeviceReadIsAsync, std::string(what) + " of a " + std::string(fucina::name(t.device())) +
                                                   " tensor: its values are read asynchronously, with `await t.data()`");
}

val toArray(Handle& h) {
  return guard([&] {
    requireHostRead(h.t, "toArray()");
    const std::span<const float> s = h.t.dataConst();
    return copyOut(s.size(), s.data());
  });
}

// ---------------------------------------------------------------- callbacks into JS

// The facade's callback wrappers return a raw handle, or null after parking the exception.
Tensor takeResult(val r, const char* what) {
  if (r.isNull() || r.isUndefined()) invalid(std::string(what) + " threw or returned no tensor");
  Tensor t = handleAt(r, what).t;
  r.call<void>("delete");  // the JS handle is done with; the C++ handle lives on
  return t;
}

val handlesOf(const std::vector<Tensor>& ts) {
  val a = val::array();
  for (const Tensor& t : ts) a.call<void>("push", handleOf(t));
  return a;
}

std::vector<Tensor> tensorsOf(const val& arr, const char* what) {
  if (!arr.isArray()) invalid(std::string(what) + " must be an array of tensors");
  std::vector<Tensor> ts;
  const int n = arr["length"].as<int>();
  for (int i = 0; i < n; ++i) ts.push_back(handleAt(arr[i], std::string(what) + "[" + std::to_string(i) + "]").t);
  return ts;
}

HandlePtr checkpoint(val block, val inputs) {
  return guard([&] {
    fucina::CheckpointBlock run = [block](ExecContext&, const std::vector<Tensor>& xs) {
      return takeResult(block(handlesOf(xs)), "the checkpoint block");
    };
    const std::vector<Tensor> xs = tensorsOf(inputs, "checkpoint inputs");
    return wrap(fucina::checkpointErased(ctxOf(xs), run, xs));
  });
}

// tail() inside fucina::checkpointTail (Note [Checkpoint tail]).
HandlePtr checkpointTail(val tail) {
  return guard([&] { return wrap(fucina::checkpointTail([&] { return takeResult(tail(), "the checkpoint tail"); })); });
}

HandlePtr customVjp(std::string name, val forward, val backward, val inputs) {
  return guard([&] {
    fucina::CustomVjpFunctions fns;
    fns.name = name;
    auto constants = [](std::span<const RawTensor* const> raws) {
      std::vector<Tensor> ts;
      for (const RawTensor* r : raws) ts.push_back(Tensor::fromRaw(ctx(), *r));
      return ts;
    };
    fns.forward = [forward, constants](ExecContext&, std::span<const RawTensor* const> ins) {
      return takeResult(forward(handlesOf(constants(ins))), "the customVjp forward").value();
    };
    fns.backward = [backward, constants](ExecContext&, std::span<const RawTensor* const> ins,
                                          const RawTensor& output, const RawTensor& gy,
                                          std::span<const bool> needs,
                                          std::span<std::optional<RawTensor>> out) {
      val needs_js = val::array();
      for (bool b : needs) needs_js.call<void>("push", b);
      val grads = backward(handlesOf(constants(ins)), handleOf(Tensor::fromRaw(ctx(), output)),
                           handleOf(Tensor::fromRaw(ctx(), gy)), needs_js);
      if (!grads.isArray()) invalid("the customVjp backward threw or returned nothing");
      // Every handle is taken (and its JS side deleted) before a count mismatch is reported.
      const int n = grads["length"].as<int>();
      for (int i = 0; i < n; ++i) {
        val g = grads[i];
        if (g.isNull() || g.isUndefined()) continue;
        RawTensor raw = takeResult(g, "customVjp backward").value();
        if (i < static_cast<int>(out.size())) out[i] = std::move(raw);
      }
      // Fewer leave the rest empty (MissingBackwardGradient where one is needed); more are refused.
      if (n > static_cast<int>(out.size()))
        invalid("customVjp backward returned " + std::to_string(n) + " gradients for " +
                std::to_string(out.size()) + " inputs");
    };
    const std::vector<Tensor> xs = tensorsOf(inputs, "customVjp inputs");
    return wrap(fucina::customVjpErased(ctxOf(xs), std::move(fns), xs));
  });
}

val gradcheck(val loss, val inputs, double eps, double abs_tol, double rel_tol) {
  return guard([&] {
    std::vector<Tensor> xs = tensorsOf(inputs, "gradcheck inputs");
    std::vector<Tensor*> ptrs;
    for (Tensor& x : xs) ptrs.push_back(&x);
    auto run = [&loss](ExecContext&, const std::vector<Tensor>& ts) {
      return takeResult(loss(handlesOf(ts)), "the gradcheck loss");
    };
    const fucina::GradcheckResult r =
        fucina::gradcheck(ctx(), run, ptrs, {.eps = eps, .abs_tol = abs_tol, .rel_tol = rel_tol, .print_mismatch = false});
    val o = val::object();
    o.set("checked", static_cast<double>(r.checked));
    o.set("maxAbsError", r.max_abs_error);
    o.set("maxRelError", r.max_rel_error);
    return o;
  });
}

// ---------------------------------------------------------------- modes and memory

std::vector<fucina::NoGradScope> g_no_grad;  // JS noGrad(fn) nests push/pop on the JS thread

// backend: "cpu" or "reference" (checked by the facade).
void init(int threads, const std::string& backend) {
  guard([&] {
    const fucina::Backend b = backend == "reference" ? fucina::Backend::reference : fucina::Backend::cpu;
    g_ctx = std::make_unique<ExecContext>(fucina::ExecOptions{.threads = threads, .backend = b});
  });
}

// ---------------------------------------------------------------- the webgpu device

// Called by the facade once web/webgpu.mjs holds a GPUDevice (Module.fucinaGpu).
void attachWebgpu() {
  guard([&] {
    fucina::backend::webgpu::Gpu::install();
    hostCtx().attach(fucina::backend::webgpu::deviceContext());
  });
}

// f on the host's context and on each device's attached to it.
void eachContext(const std::function<void(ExecContext&)>& f) {
  f(hostCtx());
  if (ExecContext* gpu = hostCtx().attached(fucina::Device::webgpu)) f(*gpu);
}

void setDefaultDevice(fucina::Device device) {
  hostCtx().on(device);  // DeviceUnavailable unless attached
  if (device == fucina::Device::webgpu) fucina::backend::webgpu::Gpu::get();  // DeviceLost once lost
  g_default_device = device;
}

// After the device is lost (the shim's device.lost): calls reach the shim no more, device
// tensors fail with DeviceLost, and new tensors are made on the cpu.
void loseWebgpu() {
  guard([&] {
    fucina::backend::webgpu::Gpu::lose();
    g_default_device = fucina::Device::cpu;
  });
}

// What the facade's `await t.data()` reads: the buffer, byte offset and byte length of a
// contiguous copy of t on its device, and the copy's handle to keep it alive until the read's
// commands are submitted.
val deviceRead(Handle& h) {
  return guard([&] {
    const RawTensor& v = h.t.value();
    if (v.device() != fucina::Device::webgpu) invalid("deviceRead: the tensor is on the cpu");
    if (v.dtype() == fucina::DType::q8_0) fucina::fail(ErrorCode::UnsupportedOnDevice, "data() of a q8_0 device tensor");
    ExecContext& c = ctxOf(h.t);
    const RawTensor flat = v.contiguous(c);
    const size_t size = fucina::elementSize(flat.dtype());
    val o = val::object();
    o.set("buffer", fucina::backend::webgpu::bufferOf(flat.storage()->block()));
    o.set("offset", static_cast<double>(flat.offset()) * static_cast<double>(size));
    o.set("bytes", static_cast<double>(flat.numel()) * static_cast<double>(size));
    o.set("dtype", std::string(fucina::name(flat.dtype())));
    o.set("keep", val(wrap(Tensor::fromRaw(c, flat))));
    return o;
  });
}

val memory() {
  return guard([&] {
    const fucina::MemoryStats m = hostCtx().memory();
    val o = val::object();
    o.set("liveTensors", static_cast<double>(m.live_tensors));
    o.set("liveBytes", static_cast<double>(m.live_bytes));
    o.set("peakBytes", static_cast<double>(m.peak_bytes));
    o.set("allocations", static_cast<double>(m.allocations));
    o.set("systemAllocations", static_cast<double>(m.system_allocations));
    o.set("cacheHits", static_cast<double>(m.cache_hits));
    o.set("cachedBytes", static_cast<double>(m.cached_bytes));
    o.set("heapBytes", static_cast<double>(emscripten_get_heap_size()));  // the wasm memory
    val by = val::object();  // live bytes per dtype, summing to liveBytes
    for (size_t d = 0; d < fucina::kDTypeCount; ++d)
      by.set(std::string(fucina::name(static_cast<fucina::DType>(d))), static_cast<double>(m.bytes_by_dtype[d]));
    o.set("bytesByDtype", by);
    val devices = val::object();
    if (ExecContext* gpu = hostCtx().attached(fucina::Device::webgpu)) {
      const fucina::MemoryStats d = gpu->memory();
      const fucina::backend::webgpu::GpuCounters c = fucina::backend::webgpu::Gpu::installed()
                                                         ? fucina::backend::webgpu::Gpu::get().counters()
                                                         : fucina::backend::webgpu::GpuCounters{};
      val w = val::object();
      w.set("liveBytes", static_cast<double>(d.live_bytes));
      w.set("peakBytes", static_cast<double>(d.peak_bytes));
      w.set("liveBuffers", static_cast<double>(d.live_buffers));
      w.set("pooledBytes", static_cast<double>(d.cached_bytes));
      w.set("buffersMade", static_cast<double>(c.buffers_made));
      w.set("pipelinesMade", static_cast<double>(c.pipelines_made));
      w.set("uploadedBytes", static_cast<double>(c.uploaded_bytes));
      w.set("dispatches", static_cast<double>(c.dispatches));
      w.set("windowedDispatches", static_cast<double>(c.windowed_dispatches));
      devices.set("webgpu", w);
    }
    o.set("devices", devices);
    return o;
  });
}

// An optional argument: null or undefined is none.
std::optional<Tensor> optionalTensorOf(const val& v, const char* what) {
  if (v.isNull() || v.isUndefined()) return std::nullopt;
  return tensorOf(v, what);
}

std::optional<double> optionalNumberOf(const val& v, const std::string& what) {
  if (v.isNull() || v.isUndefined()) return std::nullopt;
  if (!v.isNumber()) invalid(what + " must be a number");
  return v.as<double>();
}

// The ops of web/ops.table.mjs: bindTensorOps and bindEngineOps, generated by web/gen-ops.mjs.
#include "ops.bindings.inc"

}  // namespace

EMSCRIPTEN_BINDINGS(fucina) {
  using namespace emscripten;
  const auto handle = class_<Handle>("Handle")
      .smart_ptr<HandlePtr>("HandlePtr")
      .function("tags", +[](Handle& h) { return guard([&] { return arrayOf(h.t.tags()); }); })
      .function("shape", +[](Handle& h) {
        return guard([&] {
          val a = val::array();
          for (int64_t e : h.t.shape()) a.call<void>("push", static_cast<double>(e));
          return a;
        });
      })
      .function("dtype", +[](Handle& h) { return guard([&] { return std::string(fucina::name(h.t.dtype())); }); })
      .function("device", +[](Handle& h) { return guard([&] { return std::string(fucina::name(h.t.device())); }); })
      .function("requiresGrad", +[](Handle& h) { return guard([&] { return h.t.requiresGrad(); }); })
      .function("backward", +[](Handle& h, val g) {
        guard([&] {
          if (g.isUndefined() || g.isNull()) h.t.backward(ctxOf(h.t));
          else h.t.backwardWithGrad(ctxOf(h.t), tensorOf(g, "gradOutput"));
        });
      })
      .function("grad", +[](Handle& h) { return guard([&] { return optionalHandle(h.t.grad(ctxOf(h.t))); }); })
      .function("zeroGrad", +[](Handle& h) { guard([&] { h.t.zeroGrad(); }); })
      .function("detach", +[](Handle& h) { return guard([&] { return wrap(h.t.detach(ctxOf(h.t))); }); })
      .function("item", +[](Handle& h) {
        return guard([&] {
          requireHostRead(h.t, "item()");
          return h.t.item();
        });
      })
      .function("deviceRead", &deviceRead)
      .function("toArray", &toArray)
      // rope: hand-written (web/ops.table.mjs, HAND_WRITTEN); cos and sin both null for on-the-fly angles.
      .function("rope", +[](Handle& a, val cos, val sin, std::string position, std::string dim, double base,
                            double offset, std::string mode) {
        return guard([&] {
          if (mode != "half" && mode != "interleaved") invalid("rope: unknown mode '" + mode + "' (use half or interleaved)");
          const fucina::RopeOptions o{.position = fucina::Tag(position), .dim = fucina::Tag(dim), .base = base,
                                      .offset = toInt(offset, "rope: offset"),
                                      .mode = mode == "half" ? fucina::RopeOptions::Mode::half
                                                             : fucina::RopeOptions::Mode::interleaved};
          if (cos.isNull()) return wrap(a.t.rope(ctxOf(a.t), o));
          return wrap(a.t.rope(ctxOf(a.t), tensorOf(cos, "cos"), tensorOf(sin, "sin"), o));
        });
      });
  bindTensorOps(handle);  // the ops of the table

  function("init", &init);
  function("threads", +[]() { return guard([&] { return hostCtx().threads(); }); });
  function("backend", +[]() { return guard([&] { return std::string(fucina::name(hostCtx().backend())); }); });
  function("fromValues", &fromValues);
  function("full", &full);
  function("random", +[](val tags, val shape, std::string kind, double a, double b, double seed) {
    return guard([&] {
      const auto make = kind == "normal" ? &Tensor::normal : &Tensor::uniform;
      return wrap(make(ctx(), toTags(tags, "tags"), toExtents(shape), a, b, toSeed(seed, kind + ": seed")));
    });
  });
  function("variableOf", +[](Handle& h) { return guard([&] { return wrap(Tensor::variable(ctxOf(h.t), h.t)); }); });
  function("attachWebgpu", &attachWebgpu);
  function("loseWebgpu", &loseWebgpu);
  function("setDefaultDevice", +[](std::string device) { guard([&] { setDefaultDevice(toDevice(device)); }); });
  function("memory", &memory);
  function("resetPeak", +[]() { guard([&] { eachContext([](ExecContext& c) { c.resetPeak(); }); }); });
  function("trimCache", +[]() { guard([&] { eachContext([](ExecContext& c) { c.trimCache(); }); }); });
  function("noGradPush", +[]() { guard([&] { g_no_grad.push_back(fucina::noGrad()); }); });
  function("noGradPop", +[]() { guard([&] { if (!g_no_grad.empty()) g_no_grad.pop_back(); }); });
  function("isGradEnabled", &fucina::isGradEnabled);
  bindEngineOps();  // the ops of the table
  function("checkpoint", &checkpoint);
  function("checkpointTail", &checkpointTail);
  function("customVjp", &customVjp);
  function("gradcheck", &gradcheck);
}

// ================================================================ optim (fc.optim): BEGIN
// Optimizers as JS objects (a shared_ptr the facade wraps and deletes on dispose()); they hold
// their parameters' C++ handles, so a parameter lives as long as its optimizer. clipGradNorm
// rewrites gradients in place of the JS tensors' own. Schedules are plain JS in index.mjs.
namespace {

struct JsOptimizer {
  std::unique_ptr<fucina::optim::Optimizer> opt;
  fucina::Device device = fucina::Device::cpu;  // of its parameters, where its state lives
};

// The one device of an optimizer's parameters (DeviceMismatch for two).
fucina::Device deviceOfParams(const std::vector<Tensor>& ts) {
  const fucina::Device d = ts.empty() ? fucina::Device::cpu : ts.front().device();
  for (const Tensor& t : ts)
    if (t.device() != d)
      fucina::fail(ErrorCode::DeviceMismatch, "optimizer params on two devices (" + std::string(fucina::name(d)) +
                                                  " and " + std::string(fucina::name(t.device())) + ")");
  return d;
}
using JsOptimizerPtr = std::shared_ptr<JsOptimizer>;

JsOptimizerPtr optimSgd(val params, double lr, double momentum, double dampening, bool nesterov,
                        double weight_decay, bool master_weights) {
  return guard([&] {
    auto opt = std::make_unique<fucina::optim::Sgd>(fucina::optim::SgdOptions{
        .lr = lr, .momentum = momentum, .dampening = dampening, .nesterov = nesterov,
        .weight_decay = weight_decay, .master_weights = master_weights});
    const std::vector<Tensor> ts = tensorsOf(params, "optimizer params");
    const fucina::Device device = deviceOfParams(ts);
    opt->add(ts);
    return std::make_shared<JsOptimizer>(JsOptimizer{std::move(opt), device});
  });
}

JsOptimizerPtr optimAdam(val params, double lr, double beta1, double beta2, double eps,
                         double weight_decay, bool decoupled, bool master_weights) {
  return guard([&] {
    const fucina::optim::AdamOptions o{.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps,
                                       .weight_decay = weight_decay, .master_weights = master_weights};
    std::unique_ptr<fucina::optim::Optimizer> opt;
    if (decoupled) opt = std::make_unique<fucina::optim::AdamW>(o);
    else opt = std::make_unique<fucina::optim::Adam>(o);
    const std::vector<Tensor> ts = tensorsOf(params, "optimizer params");
    const fucina::Device device = deviceOfParams(ts);
    opt->add(ts);
    return std::make_shared<JsOptimizer>(JsOptimizer{std::move(opt), device});
  });
}

double optimClipGradNorm(val params, double max_norm) {
  return guard([&] {
    const std::vector<Tensor> ts = tensorsOf(params, "clipGradNorm params");
    return fucina::optim::clipGradNorm(hostCtx().on(deviceOfParams(ts)), ts, max_norm);
  });
}

val optimClipGradNormTensor(val params, double max_norm) {
  return guard([&] {
    const std::vector<Tensor> ts = tensorsOf(params, "clipGradNormTensor params");
    return handleOf(fucina::optim::clipGradNormTensor(hostCtx().on(deviceOfParams(ts)), ts, max_norm));
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fucina_optim) {
  using namespace emscripten;
  class_<JsOptimizer>("Optimizer")
      .smart_ptr<JsOptimizerPtr>("OptimizerPtr")
      .function("step", +[](JsOptimizer& o) { guard([&] { o.opt->step(hostCtx().on(o.device)); }); })
      .function("zeroGrad", +[](JsOptimizer& o) { guard([&] { o.opt->zeroGrad(); }); })
      .function("lr", +[](JsOptimizer& o) { return guard([&] { return o.opt->lr(); }); })
      .function("setLr", +[](JsOptimizer& o, double lr) { guard([&] { o.opt->setLr(lr); }); });
  function("optimSgd", &optimSgd);
  function("optimAdam", &optimAdam);
  function("optimClipGradNorm", &optimClipGradNorm);
  function("optimClipGradNormTensor", &optimClipGradNormTensor);
}
// ================================================================ optim (fc.optim): END

// ---- safetensors (fucina/io/safetensors.h): bytes in and out as Uint8Arrays
namespace {

std::vector<uint8_t> bytesOf(const val& bytes) {
  if (!bytes.instanceof(val::global("Uint8Array"))) invalid("safetensors bytes must be a Uint8Array");
  return emscripten::convertJSArrayToNumberVector<uint8_t>(bytes);
}

val toUint8Array(const std::vector<uint8_t>& bytes) {
  return copyOut(bytes.size(), bytes.data());
}

}  // namespace

EMSCRIPTEN_BINDINGS(fucina_io) {
  function("encodeSafetensors", +[](val names, val tensors, val metadata) {
    return guard([&] {
      const std::vector<Tensor> ts = tensorsOf(tensors, "tensors");
      fucina::io::NamedTensors named;
      if (!names.isArray() || names["length"].as<int>() != static_cast<int>(ts.size())) invalid("encodeSafetensors: malformed names");
      for (size_t i = 0; i < ts.size(); ++i) {
        if (!names[i].isString()) invalid("encodeSafetensors: tensor names must be strings");
        named.emplace_back(names[i].as<std::string>(), ts[i]);
      }
      fucina::io::Metadata meta;
      if (metadata.typeOf().as<std::string>() != "object" || metadata.isNull())
        invalid("safetensors metadata must be an object of strings");
      const val keys = val::global("Object").call<val>("keys", metadata);
      for (int i = 0; i < keys["length"].as<int>(); ++i) {
        const std::string k = keys[i].as<std::string>();
        if (!metadata[k].isString()) invalid("safetensors metadata values must be strings");
        meta[k] = metadata[k].as<std::string>();
      }
      return toUint8Array(fucina::io::encodeSafetensors(ctx(), named, meta));
    });
  });
  function("loadParameters", +[](val params, val bytes) {
    guard([&] {
      const auto loaded = fucina::io::decodeSafetensors(ctx(), bytesOf(bytes));
      fucina::nn::loadParameters(ctx(), loaded, tensorsOf(params, "params"), "the bytes");
    });
  });
  function("decodeSafetensors", +[](val bytes) {
    return guard([&] {
      fucina::io::Metadata meta;
      const auto named = fucina::io::decodeSafetensors(ctx(), bytesOf(bytes), &meta);
      val names = val::array(), tensors = val::array(), metadata = val::object();
      for (const auto& [name, t] : named) {
        names.call<void>("push", name);
        tensors.call<void>("push", val(wrap(t)));
      }
      for (const auto& [k, v] : meta) metadata.set(k, v);
      val out = val::object();
      out.set("names", names);
      out.set("tensors", tensors);
      out.set("metadata", metadata);
      return out;
    });
  });
}

// ================================================================ pretrained models and LoRA (fc.nn.Gpt2, fc.nn.Llama, fc.nn.LoraLinear): BEGIN
// One C++ implementation (nn/model.h, nn/gpt2.h, nn/llama.h, nn/lora.h) bound as classes the
// facade wraps (web/nn.mjs) and deletes on dispose(): Model holds what both models share. Tensors go out as new handles; the facade fills in every option, and
// each is checked again here before it is converted.
namespace {

using fucina::nn::Gpt2;
using fucina::nn::Llama;
using fucina::nn::LoraLinear;
using fucina::nn::Model;
using Gpt2Ptr = std::shared_ptr<Gpt2>;
using LlamaPtr = std::shared_ptr<Llama>;
using ModelPtr = std::shared_ptr<Model>;
using LlamaLoaderPtr = std::shared_ptr<Llama::Loader>;
using LoraLinearPtr = std::shared_ptr<LoraLinear>;

// How a pretrained model stores its base (the model's constructor checks the dtype).
fucina::nn::ModelOptions modelOptions(const std::string& dtype, bool trainable, bool checkpoint_blocks) {
  return {.dtype = toDType(dtype), .trainable = trainable, .checkpoint_blocks = checkpoint_blocks};
}

// A number field of a JS options object, or fallback when it is undefined.
double numberField(const val& o, const char* key, double fallback, const std::string& what) {
  const val v = o[key];
  if (v.isUndefined()) return fallback;
  if (!v.isNumber()) invalid(what + ": " + key + " must be a number");
  return v.as<double>();
}

// LoraOptions from the facade's object (every key filled in there; defaults here all the same).
fucina::nn::LoraOptions loraOptions(const val& o, const std::string& what) {
  if (o.typeOf().as<std::string>() != "object" || o.isNull()) invalid(what + ": options must be an object");
  fucina::nn::LoraOptions out;
  out.rank = toInt(numberField(o, "rank", static_cast<double>(out.rank), what), what + ": rank");
  out.alpha = numberField(o, "alpha", out.alpha, what);
  out.dropout = numberField(o, "dropout", out.dropout, what);
  out.seed = toSeed(numberField(o, "seed", 0, what), what + ": seed");
  const val targets = o["targets"];
  if (!targets.isUndefined()) {
    if (!targets.isArray()) invalid(what + ": targets must be an array of layer names");
    out.targets.clear();
    const int n = targets["length"].as<int>();
    for (int i = 0; i < n; ++i) {
      const val s = targets[i];
      if (!s.isString()) invalid(what + ": targets[" + std::to_string(i) + "] is not a string");
      out.targets.push_back(s.as<std::string>());
    }
  }
  return out;
}

Gpt2Ptr gpt2New(std::string config, double seed, std::string dtype, bool trainable, bool checkpoint_blocks) {
  return guard([&] {
    const fucina::nn::Gpt2Config c = fucina::nn::Gpt2Config::fromJson(config);
    return std::make_shared<Gpt2>(ctx(), c, toSeed(seed, "nn.Gpt2: seed"), modelOptions(dtype, trainable, checkpoint_blocks));
  });
}

LlamaPtr llamaNew(std::string config, double seed, std::string dtype, bool trainable, bool checkpoint_blocks) {
  return guard([&] {
    const fucina::nn::LlamaConfig c = fucina::nn::LlamaConfig::fromJson(config);
    return std::make_shared<Llama>(ctx(), c, toSeed(seed, "nn.Llama: seed"), modelOptions(dtype, trainable, checkpoint_blocks));
  });
}

LlamaLoaderPtr llamaLoader(std::string config, std::string dtype, bool trainable, bool checkpoint_blocks) {
  return guard([&] {
    return std::make_shared<Llama::Loader>(config, modelOptions(dtype, trainable, checkpoint_blocks));
  });
}

Gpt2Ptr gpt2Load(val bytes, std::string config, std::string dtype, bool trainable, bool checkpoint_blocks) {
  return guard([&] {
    const std::vector<uint8_t> b = bytesOf(bytes);
    return std::make_shared<Gpt2>(Gpt2::load(ctx(), b, config, modelOptions(dtype, trainable, checkpoint_blocks)));
  });
}

// generate's onToken: the facade's wrapper returns true (go on), false (stop), or null after
// parking what the user's function threw; then a C++ error unwinds generate and the facade
// rethrows the parked value.
template <class M>
val generateOf(M& m, val prompt, double max_tokens, double temperature, double top_k, double seed, val on_token) {
  return guard([&] {
    const std::string what = "nn." + m.kind() + ".generate";
    if (!prompt.instanceof(val::global("Int32Array"))) invalid(what + ": prompt must be an Int32Array");
    const std::vector<int32_t> p = emscripten::convertJSArrayToNumberVector<int32_t>(prompt);
    const fucina::nn::GenerateOptions o{.max_tokens = toInt(max_tokens, what + ": maxTokens"),
                                        .temperature = temperature,
                                        .top_k = toInt(top_k, what + ": topK"),
                                        .seed = toSeed(seed, what + ": seed")};
    std::function<bool(int32_t)> callback;
    if (!on_token.isNull() && !on_token.isUndefined()) {
      if (on_token.typeOf().as<std::string>() != "function") invalid(what + ": onToken must be a function");
      callback = [&on_token, &what](int32_t id) {
        const val r = on_token(id);
        if (!r.isTrue() && !r.isFalse()) invalid(what + ": the onToken callback threw");
        return r.isTrue();
      };
    }
    const std::vector<int32_t> out = m.generate(ctxOf(m), p, o, callback);
    return copyOut(out.size(), out.data());
  });
}

// One file tensor into a Llama::Loader: its bytes (a Uint8Array the facade cut from the file it
// keeps outside the wasm heap) are copied straight into a new tensor's buffer.
void llamaLoaderAdd(Llama::Loader& loader, std::string name, std::string dtype, val shape, val bytes) {
  guard([&] {
    const std::string what = "nn.Llama.load: '" + name + "'";
    if (!bytes.instanceof(val::global("Uint8Array"))) invalid(what + ": bytes must be a Uint8Array");
    const fucina::DType d = toDType(dtype);
    if (d == fucina::DType::q8_0) invalid(what + ": is q8_0; F32, F16 or BF16 expected");
    const fucina::Extents extents = toExtents(shape);
    fucina::Tags tags;
    for (size_t i = 0; i < extents.size(); ++i) tags.emplace_back("d" + std::to_string(i));
    fucina::internal::RawTensor v = fucina::internal::RawTensor::empty(ctx(), tags, extents, d);
    const size_t n = bytes["length"].as<size_t>();
    if (n != static_cast<size_t>(v.numel()) * fucina::elementSize(d))
      invalid(what + " holds " + std::to_string(n) + " bytes, its shape needs " +
              std::to_string(static_cast<size_t>(v.numel()) * fucina::elementSize(d)));
    if (n) val(emscripten::typed_memory_view(n, reinterpret_cast<uint8_t*>(v.storage()->data()))).call<void>("set", bytes);
    loader.add(ctx(), name, Tensor::fromRaw(ctx(), std::move(v)));
  });
}

// The sampler of C++'s generate, for fc.nn.Gpt.generate's loop in JS (one sampler for both
// models): the token drawn from logits{vocab} at step `step` (nn::sampleToken).
int32_t sampleToken(val logits, double temperature, double top_k, double seed, double step) {
  return guard([&] {
    const fucina::nn::GenerateOptions o{.temperature = temperature,
                                        .top_k = toInt(top_k, "nn.Gpt.generate: topK"),
                                        .seed = toSeed(seed, "nn.Gpt.generate: seed")};
    const Tensor t = tensorOf(logits, "nn.Gpt.generate: logits");
    return fucina::nn::sampleToken(ctxOf(t), t, o, toSeed(step, "nn.Gpt.generate: step"));
  });
}

LoraLinearPtr loraLinearNew(val weight, val bias, std::string in, std::string out) {
  return guard([&] {
    Tensor w = tensorOf(weight, "nn.LoraLinear: weight");
    if (w.requiresGrad()) w = w.detach(ctx());  // the base is frozen
    Tensor b;
    if (!bias.isNull() && !bias.isUndefined()) {
      b = tensorOf(bias, "nn.LoraLinear: bias");
      if (b.requiresGrad()) b = b.detach(ctx());
    }
    return std::make_shared<LoraLinear>(std::move(w), std::move(b), fucina::Tag(in), fucina::Tag(out));
  });
}

val definedHandle(const Tensor& t) { return t.defined() ? handleOf(t) : val::null(); }

// The methods of a model kind M: its forward and sizes.
template <class M>
void bindModel(emscripten::class_<M, emscripten::base<Model>>& c) {
  c.function("logits", +[](M& m, val tokens) {
     return guard([&] { return wrap(m.logits(ctxOf(m), tensorOf(tokens, ("nn." + m.kind() + ".logits: tokens").c_str()))); });
   })
      .function("loss", +[](M& m, val tokens) {
        return guard([&] { return wrap(m.loss(ctxOf(m), tensorOf(tokens, ("nn." + m.kind() + ".loss: tokens").c_str()))); });
      })
      .function("generate", &generateOf<M>)
      // One step of generateAsync: the logits of tokens that continue cache (Note [KV cache]).
      .function("logitsCached", +[](M& m, val tokens, fucina::nn::KvCache& cache) {
        return guard([&] {
          const fucina::NoGradScope no_grad = fucina::noGrad();
          return wrap(m.logits(ctxOf(m), tensorOf(tokens, ("nn." + m.kind() + ".generateAsync: tokens").c_str()), cache));
        });
      })
      .function("config", +[](M& m) { return guard([&] { return m.config().toJson(); }); });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fucina_models) {
  using namespace emscripten;
  class_<Model>("Model")
      .smart_ptr<ModelPtr>("ModelPtr")
      .function("parameters", +[](Model& m) { return guard([&] { return handlesOf(m.parameters()); }); })
      .function("namedTensors", +[](Model& m) {
        return guard([&] {
          val names = val::array(), tensors = val::array();
          for (const auto& [name, t] : m.namedTensors()) {
            names.call<void>("push", name);
            tensors.call<void>("push", handleOf(t));
          }
          val out = val::object();
          out.set("names", names);
          out.set("tensors", tensors);
          return out;
        });
      })
      .function("layers", +[](Model& m) {
        return guard([&] {
          val names = val::array();
          for (const auto& [name, layer] : m.layers()) names.call<void>("push", name);
          return names;
        });
      })
      .function("save", +[](Model& m) { return guard([&] { return toUint8Array(m.save(ctxOf(m))); }); })
      .function("addLora", +[](Model& m, val options) {
        return guard([&] { return handlesOf(m.addLora(ctxOf(m), loraOptions(options, "nn.lora"))); });
      })
      .function("saveAdapters", +[](Model& m) { return guard([&] { return toUint8Array(m.saveAdapters(ctxOf(m))); }); })
      .function("loadAdapters", +[](Model& m, val bytes, val options) {
        guard([&] {
          const std::vector<uint8_t> b = bytesOf(bytes);
          std::optional<fucina::nn::LoraOptions> o;
          if (!options.isNull() && !options.isUndefined()) o = loraOptions(options, "nn." + m.kind() + ".loadAdapters");
          m.loadAdapters(ctxOf(m), b, o);
        });
      })
      .function("adapters", +[](Model& m) { return guard([&] { return handlesOf(m.adapters()); }); })
      // values: null, or the adapters read back to the host (exportPeftAsync of a device model).
      .function("exportPeft", +[](Model& m, val values) {
        return guard([&] {
          std::vector<Tensor> host;
          if (!values.isNull() && !values.isUndefined())
            for (unsigned i = 0; i < values["length"].as<unsigned>(); ++i)
              host.push_back(tensorOf(values[i], "nn.exportPeftAsync: values"));
          const fucina::nn::PeftAdapter p = fucina::nn::exportPeft(ctxOf(m), m, host);
          val out = val::object();
          out.set("safetensors", toUint8Array(p.safetensors));
          out.set("config", p.config_json);
          return out;
        });
      })
      .function("loadPeft", +[](Model& m, val bytes, std::string config) {
        guard([&] { fucina::nn::loadPeft(ctxOf(m), m, bytesOf(bytes), config); });
      })
      .function("mergeAdapters", +[](Model& m) { guard([&] { m.mergeAdapters(ctxOf(m)); }); })
      .function("dtype", +[](Model& m) { return guard([&] { return std::string(fucina::name(m.dtype())); }); })
      .function("to", +[](Model& m, std::string device) { guard([&] { m.to(hostCtx(), toDevice(device)); }); })
      .function("device", +[](Model& m) { return guard([&] { return std::string(fucina::name(m.device())); }); })
      .function("checkpointBlocks", +[](Model& m) { return guard([&] { return m.checkpointBlocks(); }); })
      .function("setCheckpointBlocks", +[](Model& m, bool on) { guard([&] { m.setCheckpointBlocks(on); }); });
  // generateAsync's KV cache: its tensors live in C++ between the steps' reads.
  class_<fucina::nn::KvCache>("KvCache")
      .constructor<>()
      .function("length", +[](const fucina::nn::KvCache& c) { return static_cast<double>(c.length()); });
  class_<Gpt2, base<Model>> gpt2("Gpt2");
  gpt2.smart_ptr<Gpt2Ptr>("Gpt2Ptr");
  bindModel(gpt2);
  class_<Llama, base<Model>> llama("Llama");
  llama.smart_ptr<LlamaPtr>("LlamaPtr");
  bindModel(llama);
  class_<Llama::Loader>("LlamaLoader")
      .smart_ptr<LlamaLoaderPtr>("LlamaLoaderPtr")
      .function("add", &llamaLoaderAdd)
      .function("finish", +[](Llama::Loader& l) { return guard([&] { return std::make_shared<Llama>(l.finish()); }); });
  function("gpt2New", &gpt2New);
  function("gpt2Load", &gpt2Load);
  function("llamaNew", &llamaNew);
  function("llamaLoader", &llamaLoader);
  function("sampleToken", &sampleToken);

  class_<LoraLinear>("LoraLinear")
      .smart_ptr<LoraLinearPtr>("LoraLinearPtr")
      .function("adapt", +[](LoraLinear& l, double rank, double alpha, double dropout, double seed) {
        guard([&] {
          l.adapt(ctx(), toInt(rank, "nn.LoraLinear.adapt: rank"), alpha, dropout, toSeed(seed, "nn.LoraLinear.adapt: seed"));
        });
      })
      // seed: null to read x as it is (evaluation), a number for dropout with that seed's mask.
      .function("forward", +[](LoraLinear& l, val x, val seed) {
        return guard([&] {
          std::optional<uint64_t> s;
          if (!seed.isNull() && !seed.isUndefined()) {
            if (!seed.isNumber()) invalid("nn.LoraLinear.forward: dropoutSeed must be a number");
            s = toSeed(seed.as<double>(), "nn.LoraLinear.forward: dropoutSeed");
          }
          return wrap(l(ctx(), tensorOf(x, "nn.LoraLinear.forward: x"), s));
        });
      })
      .function("merge", +[](LoraLinear& l) { return guard([&] { return wrap(l.merge(ctx())); }); })
      .function("weight", +[](LoraLinear& l) { return guard([&] { return definedHandle(l.weight); }); })
      .function("bias", +[](LoraLinear& l) { return guard([&] { return definedHandle(l.bias); }); })
      .function("a", +[](LoraLinear& l) { return guard([&] { return definedHandle(l.a); }); })
      .function("b", +[](LoraLinear& l) { return guard([&] { return definedHandle(l.b); }); })
      .function("scale", +[](LoraLinear& l) { return guard([&] { return l.scale; }); });
  function("loraLinearNew", &loraLinearNew);
}
// ================================================================ pretrained models and LoRA: END

// ================================================================ prepared convolution: BEGIN
// prepareConv2dWeights's handle (hand-written: web/ops.table.mjs, HAND_WRITTEN), a shared_ptr the
// facade wraps and deletes on dispose(). Its arguments are conv2d's, flattened in the op table's
// order (the facade checks them with the table's conv2d options).
namespace {

struct JsPreparedConv2d {
  fucina::PreparedConv2d prepared;
};
using JsPreparedConv2dPtr = std::shared_ptr<JsPreparedConv2d>;

JsPreparedConv2dPtr prepareConv2dWeights(val weight_, val bias_, double stride_0, double stride_1, double padding_0,
                                         double padding_1, double dilation_0, double dilation_1, double groups,
                                         double max_pool, std::string channels, std::string height, std::string width,
                                         std::string out_channels, std::string kernel_h, std::string kernel_w) {
  return guard([&] {
    constexpr const char* op = "prepareConv2dWeights: ";
    const Tensor weight = tensorOf(weight_, "prepareConv2dWeights: weight");
    const std::optional<Tensor> bias = optionalTensorOf(bias_, "prepareConv2dWeights: bias");
    const fucina::Conv2dOptions o{
        .channels = fucina::Tag(channels), .height = fucina::Tag(height), .width = fucina::Tag(width),
        .out_channels = fucina::Tag(out_channels), .kernel_h = fucina::Tag(kernel_h), .kernel_w = fucina::Tag(kernel_w),
        .stride_h = toInt(stride_0, std::string(op) + "stride[0]"), .stride_w = toInt(stride_1, std::string(op) + "stride[1]"),
        .pad_h = toInt(padding_0, std::string(op) + "padding[0]"), .pad_w = toInt(padding_1, std::string(op) + "padding[1]"),
        .dilation_h = toInt(dilation_0, std::string(op) + "dilation[0]"),
        .dilation_w = toInt(dilation_1, std::string(op) + "dilation[1]"), .groups = toInt(groups, std::string(op) + "groups"),
        .max_pool = toInt(max_pool, std::string(op) + "maxPool")};
    return std::make_shared<JsPreparedConv2d>(JsPreparedConv2d{
        bias ? fucina::prepareConv2dWeights(ctx(), weight, *bias, o) : fucina::prepareConv2dWeights(ctx(), weight, o)});
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fucina_prepared) {
  using namespace emscripten;
  class_<JsPreparedConv2d>("PreparedConv2d")
      .smart_ptr<JsPreparedConv2dPtr>("PreparedConv2dPtr")
      .function("winograd", +[](JsPreparedConv2d& p) { return guard([&] { return p.prepared.winograd(); }); });
  function("prepareConv2dWeights", &prepareConv2dWeights);
  function("conv2dPrepared", +[](Handle& x, JsPreparedConv2d& p, bool relu) {
    return guard([&] {
      return wrap(relu ? x.t.conv2dPreparedRelu(ctx(), p.prepared) : x.t.conv2dPrepared(ctx(), p.prepared));
    });
  });
}
// ================================================================ prepared convolution: END

// ================================================================ packed products (ag/packed.h)
// fc.packRhs makes a PackedRhs the facade owns (it deletes it in dispose()); the products are
// free functions taking the tensor's handle, so the Handle class above stays generated.
namespace {

using PackedRhsPtr = std::shared_ptr<fucina::PackedRhs>;

const fucina::PackedRhs& packedAt(const val& v, const char* what) {
  if (v.isNull() || v.isUndefined() || !v.instanceof(val::module_property("PackedRhs")))
    invalid(std::string(what) + ": packed must be a PackedRhs of this engine (from fc.packRhs)");
  if (v.call<bool>("isDeleted")) invalid(std::string(what) + ": the packed weight was disposed");
  return *v.as<fucina::PackedRhs*>(emscripten::allow_raw_pointers());
}

}  // namespace

EMSCRIPTEN_BINDINGS(fucina_packed) {
  using namespace emscripten;
  using fucina::PackedRhs;
  class_<PackedRhs>("PackedRhs")
      .smart_ptr<PackedRhsPtr>("PackedRhsPtr")
      .function("axis", +[](PackedRhs& p) { return std::string(p.axis().name()); })
      .function("depth", +[](PackedRhs& p) { return static_cast<double>(p.depth()); })
      .function("tags", +[](PackedRhs& p) { return arrayOf(p.tags()); })
      .function("shape", +[](PackedRhs& p) {
        val a = val::array();
        for (int64_t e : p.shape()) a.call<void>("push", static_cast<double>(e));
        return a;
      })
      .function("dtype", +[](PackedRhs& p) { return std::string(fucina::name(p.dtype())); })
      .function("sourceDtype", +[](PackedRhs& p) { return std::string(fucina::name(p.sourceDtype())); })
      .function("bytes", +[](PackedRhs& p) { return static_cast<double>(p.bytes()); })
      .function("describe", +[](PackedRhs& p) { return p.describe(); });
  function("packRhs", +[](val w, std::string axis) {
    return guard([&] { return std::make_shared<PackedRhs>(fucina::packRhs(ctx(), tensorOf(w, "packRhs: w"), fucina::Tag(axis))); });
  });
  function("dotPacked", +[](val x, val packed, val bias) {
    return guard([&] {
      const Tensor& t = tensorOf(x, "dotPacked: x");
      const PackedRhs& p = packedAt(packed, "dotPacked");
      if (bias.isNull() || bias.isUndefined()) return wrap(t.dotPacked(ctx(), p));
      return wrap(t.dotPacked(ctx(), p, tensorOf(bias, "dotPacked: bias")));
    });
  });
  function("rmsNormMulDotPacked", +[](val x, val weight, val packed, double eps) {
    return guard([&] {
      return wrap(tensorOf(x, "rmsNormMulDotPacked: x")
                      .rmsNormMulDotPacked(ctx(), tensorOf(weight, "rmsNormMulDotPacked: weight"),
                                           packedAt(packed, "rmsNormMulDotPacked"), eps));
    });
  });
  function("splitSwiGluDotPacked", +[](val x, val packed) {
    return guard([&] {
      return wrap(tensorOf(x, "splitSwiGluDotPacked: x").splitSwiGluDotPacked(ctx(), packedAt(packed, "splitSwiGluDotPacked")));
    });
  });
  function("gegluQuantDotPacked", +[](val x, val packed) {
    return guard([&] {
      return wrap(tensorOf(x, "gegluQuantDotPacked: x").gegluQuantDotPacked(ctx(), packedAt(packed, "gegluQuantDotPacked")));
    });
  });
}
// ================================================================ packed products: END
