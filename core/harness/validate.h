/* An untimed run of a kernel that checks what it moved (validate.c). */
#ifndef CS_VALIDATE_H
#define CS_VALIDATE_H

#include "sampler.h"

int cs_validation_run(const cs_bench *b, cs_ctx *c, long sample, sampler *sm, long *checked);

#endif
