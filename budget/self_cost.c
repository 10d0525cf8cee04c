/* self_cost.c: the accounting's running sum of seconds (self_cost.h). */
#include "self_cost.h"

#include "clock.h"

static double qp_self_cost_sum = 0.0;

double qp_self_cost_begin(void) { return qp_clock_seconds(); }

void qp_self_cost_end(double start) { qp_self_cost_sum += qp_clock_seconds() - start; }

double qp_self_cost_seconds(void) { return qp_self_cost_sum; }

void qp_self_cost_reset(void) { qp_self_cost_sum = 0.0; }
