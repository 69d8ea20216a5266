/* The C tests' one check macro: report a failed condition with its place and count it; the
 * test's main returns failures != 0. */
#ifndef FELTLAB_TEST_CHECK_H
#define FELTLAB_TEST_CHECK_H

#include <stdio.h>

static int failures = 0;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif
