/* Reading /proc/self/io and /proc/self/statm through kept-open descriptors.
 * Placeholder: filled in by the sampler work. */
#ifndef LP_PROCIO_H
#define LP_PROCIO_H
#endif /* LP_PROCIO_H */
