// SPDX-License-Identifier: BSL-1.0
// memkit/version.hpp: the release this copy of memkit is (CHANGELOG.md). The numbers equal
// project(VERSION) in CMakeLists.txt, which the test memkit.version checks, and the installed
// CMake package's version file: before 1.0, find_package(memkit 0.2) accepts 0.2.x only, since a
// minor release may change the API (README.md, "Compatibility").
#pragma once

#define MEMKIT_VERSION_MAJOR 0
#define MEMKIT_VERSION_MINOR 2
#define MEMKIT_VERSION_PATCH 0
/// "MAJOR.MINOR.PATCH", for messages and reports.
#define MEMKIT_VERSION_STRING "0.2.0"
/// One number that orders releases, for `#if MEMKIT_VERSION >= 200` (0.2.0).
#define MEMKIT_VERSION                                                                             \
  (MEMKIT_VERSION_MAJOR * 10000 + MEMKIT_VERSION_MINOR * 100 + MEMKIT_VERSION_PATCH)
