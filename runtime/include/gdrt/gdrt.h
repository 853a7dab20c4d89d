// Everything of libgdrt in one include.
#pragma once

#include "gdrt/autograd.h"
#include "gdrt/backend.h"
#include "gdrt/checkpoint.h"
#include "gdrt/data.h"
#include "gdrt/device.h"
#include "gdrt/dtype.h"
#include "gdrt/error.h"
#include "gdrt/nn.h"
#include "gdrt/ops.h"
#include "gdrt/optim.h"
#include "gdrt/step.h"
#include "gdrt/stream.h"
#include "gdrt/tensor.h"
