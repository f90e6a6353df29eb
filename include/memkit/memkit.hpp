// memkit/memkit.hpp: every public memkit header.
#pragma once

#include "aligned.hpp"
#include "arena.hpp"
#include "array_pool.hpp"
#include "config.hpp"
#include "error.hpp"
#include "fallback.hpp"
#include "fixed_pool.hpp"
#include "huge_page.hpp"
#include "multipool.hpp"
#include "pool.hpp"
#include "resource.hpp"
#include "stack.hpp"
#include "upstream.hpp"
