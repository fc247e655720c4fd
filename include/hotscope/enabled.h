/* Whether hotscope is compiled in: HOTSCOPE_ENABLED is 1 when the hotscope::hotscope CMake
 * target defines it (the HOTSCOPE_ENABLE option ON), else 0 and every macro and call of
 * hotscope's headers compiles to nothing. */
#ifndef HOTSCOPE_ENABLED_H
#define HOTSCOPE_ENABLED_H

#ifndef HOTSCOPE_ENABLED
#define HOTSCOPE_ENABLED 0
#endif

#endif /* HOTSCOPE_ENABLED_H */
