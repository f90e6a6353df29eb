// memkit/memkit.hpp: every public memkit header.
#pragma once

#include "config.hpp"
#include "error.hpp"
#include "resource.hpp"
#include "upstream.hpp"
