/* Small macros shared by the C modules of lineprofiler. */
#ifndef LP_COMMON_H
#define LP_COMMON_H

#if defined(__GNUC__) || defined(__clang__)
#define LP_LIKELY(x)   __builtin_expect(!!(x), 1)
#define LP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LP_INLINE      static inline __attribute__((always_inline))
#else
#define LP_LIKELY(x)   (x)
#define LP_UNLIKELY(x) (x)
#define LP_INLINE      static inline
#endif

#define LP_UNUSED(x) ((void)(x))

#endif /* LP_COMMON_H */
