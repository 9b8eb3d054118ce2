// Everything in one include.
#pragma once

#include "weightloader/checkpoint_names.hpp"
#include "weightloader/context.hpp"
#include "weightloader/dtype_convert.hpp"
#include "weightloader/dtype.hpp"
#include "weightloader/error.hpp"
#include "weightloader/loader.hpp"
#include "weightloader/model.hpp"
#include "weightloader/name_mapping.hpp"
#include "weightloader/registry.hpp"
#include "weightloader/report.hpp"
#include "weightloader/source.hpp"
#include "weightloader/tensor.hpp"
