/// @file
/// fucina: tensors with named axes and eager, backward-only reverse-mode autograd.
/// The public root header (§1): include this and nothing else.
#pragma once

#include "fucina/ag/checkpoint.h"
#include "fucina/ag/control.h"
#include "fucina/ag/custom.h"
#include "fucina/ag/gradcheck.h"
#include "fucina/ag/grad_state.h"
#include "fucina/ag/tensor.h"
#include "fucina/core/dtype.h"
#include "fucina/core/error.h"
#include "fucina/core/raw_tensor.h"
#include "fucina/core/shape.h"
#include "fucina/core/tag.h"
#include "fucina/data/idx.h"
#include "fucina/exec/context.h"
#include "fucina/exec/scope.h"
#include "fucina/io/safetensors.h"
#include "fucina/nn/layers.h"
#include "fucina/nn/models.h"
#include "fucina/nn/serialize.h"
#include "fucina/ops/raw.h"
#include "fucina/optim/adam.h"
#include "fucina/optim/clip.h"
#include "fucina/optim/optimizer.h"
#include "fucina/optim/schedule.h"
#include "fucina/optim/sgd.h"
