/// @file
/// Optimizers (src/fucina/optim): the base class every optimizer derives from, and OptimizerSet.
/// Semantics follow torch.optim. An update writes each parameter's storage in place, outside the
/// autograd graph (no VJP record is ever made): graphs built afterwards read the new values and
/// the user's handles stay valid. See docs/design-notes.md, "Optimizers".
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fucina/ag/tensor.h"
#include "fucina/core/raw_tensor.h"
#include "fucina/exec/context.h"

namespace fucina::optim {

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Registers a parameter: a contiguous f32, f16 or bf16 leaf variable (InvalidArgument
  /// otherwise, and when it is already registered here). Note [16-bit parameters]: a 16-bit
  /// parameter's state and update math are f32, and the updated value is written back rounded to
  /// nearest (even); with master weights an f32 copy of it is kept and updated instead, and the
  /// parameter receives that copy rounded, so updates smaller than a 16-bit step still add up
  /// (bf16 keeps 8 bits of mantissa). The copy is made on the first update; values written into
  /// the parameter by other means afterwards are not seen by it.
  void add(const Tensor& param);
  void add(std::span<const Tensor> params);
  /// One update of every registered parameter that has a gradient (others are skipped, as in
  /// torch). State buffers are made on a parameter's first update, through ctx's allocator.
  void step(ExecContext& ctx);
  void zeroGrad();  ///< drops every registered parameter's gradient

  double lr() const { return lr_; }
  bool masterWeights() const { return master_weights_; }
  void setLr(double lr);  ///< InvalidArgument when negative or not finite
  const std::vector<Tensor>& params() const { return params_; }
  /// Updates applied to params()[i] so far (torch's state["step"]).
  int64_t stepsOf(size_t i) const { return states_.at(i).steps; }

 protected:
  explicit Optimizer(double lr, bool master_weights = false);
  /// Applies one update, in place, to the values p given the gradient g: both contiguous f32 of
  /// the parameter's shape, computed through ctx's backend (its update primitives,
  /// backend/kernels.h). `index` names the parameter; `t` is its update count including this one
  /// (1 on the first).
  virtual void update(ExecContext& ctx, size_t index, int64_t t, const internal::RawTensor& p,
                      const internal::RawTensor& g) = 0;
  /// The slot-th state buffer of parameter index: zeros shaped like the parameter, made on first
  /// use through ctx (so ctx.memory() accounts it). A handle on it, not a reference: making
  /// another slot may move the handles it holds.
  internal::RawTensor stateBuffer(ExecContext& ctx, size_t index, size_t slot);

 private:
  struct ParamState {
    int64_t steps = 0;
    std::vector<internal::RawTensor> buffers;
    internal::RawTensor master;  // the f32 copy of a 16-bit parameter, with master weights
  };
  double lr_;
  bool master_weights_;
  std::vector<Tensor> params_;
  std::vector<ParamState> states_;
};

/// Several optimizers (e.g.\ one per parameter group) driven as one: step() and zeroGrad() fan out
/// in the order the optimizers were added. A parameter may belong to only one of them.
class OptimizerSet {
 public:
  /// Takes ownership; returns the optimizer for further configuration.
  Optimizer& add(std::unique_ptr<Optimizer> optimizer);
  /// Borrows: the optimizer must outlive the set.
  Optimizer& add(Optimizer& optimizer);
  /// Registers params into `optimizer` (which must already be in the set).
  void addParams(Optimizer& optimizer, std::span<const Tensor> params);
  template <class O, class... Args>
  O& emplace(Args&&... args) {
    auto owned = std::make_unique<O>(std::forward<Args>(args)...);
    O& ref = *owned;
    add(std::move(owned));
    return ref;
  }

  void step(ExecContext& ctx);
  void zeroGrad();
  void setLr(double lr);  ///< sets every optimizer's learning rate
  size_t size() const { return optimizers_.size(); }
  Optimizer& operator[](size_t i) const { return *optimizers_.at(i); }
  std::vector<Tensor> params() const;  ///< every optimizer's parameters, in order

 private:
  void checkDisjoint(const Optimizer& incoming) const;
  std::vector<std::unique_ptr<Optimizer>> owned_;
  std::vector<Optimizer*> optimizers_;
};

}  // namespace fucina::optim
