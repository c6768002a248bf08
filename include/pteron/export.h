// SPDX-License-Identifier: BSD-3-Clause
/* pteron/export.h - symbol visibility for every pteron component.
 *
 * Each component compiles with PTERON_BUILDING_<COMPONENT> defined (set by the
 * build's component helper). Only declarations marked with the component's
 * macro leave its DLL / shared object; everything else is hidden
 * (-fvisibility=hidden on ELF, no dllexport on PE). */
#ifndef PTERON_EXPORT_H
#define PTERON_EXPORT_H

#if defined(_WIN32) || defined(__CYGWIN__)
#define PTERON_DLL_EXPORT __declspec(dllexport)
#define PTERON_DLL_IMPORT __declspec(dllimport)
#else
#define PTERON_DLL_EXPORT __attribute__((visibility("default")))
#define PTERON_DLL_IMPORT __attribute__((visibility("default")))
#endif

/* The runtime's API (pteron.dll / libpteron.so). */
#if defined(PTERON_BUILDING_RUNTIME)
#define PTERON_API PTERON_DLL_EXPORT
#else
#define PTERON_API PTERON_DLL_IMPORT
#endif

/* What a component library (kernels, thread pool, delegate) exports itself:
 * only its anchor symbol and its own small C API. */
#define PTERON_COMPONENT_EXPORT PTERON_DLL_EXPORT

#ifdef __cplusplus
#define PTERON_EXTERN_C extern "C"
#else
#define PTERON_EXTERN_C
#endif

#endif /* PTERON_EXPORT_H */
