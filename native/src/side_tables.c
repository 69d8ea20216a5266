/*
 * Side-wager lookup tables of the round simulator (fl_simulate_tally, sim.c): checking a
 * caller's tables once before a run (the lookup itself is inline in side_tables.h).
 */
#include <string.h>

#include "feltlab_core.h"
#include "side_tables.h"

/* values each per-round input takes (the five cards: codes 0..51 and 52 for none); inputs
 * from the round record go after them */
static const uint32_t input_values[FL_SIM_INPUTS] = {
    FL_SIDE_CARD_VALUES, FL_SIDE_CARD_VALUES, FL_SIDE_CARD_VALUES, FL_SIDE_CARD_VALUES,
    FL_SIDE_CARD_VALUES};

fl_status fl_side_check_tables(const fl_side_table *t, size_t n) {
    if (n && !t) return FL_ERR_NULL;
    if (n > FL_SIDE_MAX_TABLES) return FL_ERR_RANGE;
    for (size_t k = 0; k < n; k++) {
        if (!t[k].table || !t[k].counts) return FL_ERR_NULL;
        if (t[k].n_inputs < 1 || t[k].n_inputs > FL_SIDE_MAX_INPUTS) return FL_ERR_RANGE;
        if (t[k].n_pre >= t[k].n_inputs) return FL_ERR_RANGE;
        uint64_t top_pre = 0, top = 0; /* the largest reachable indexes */
        for (uint32_t j = 0; j < t[k].n_inputs; j++) {
            if (t[k].input[j] >= FL_SIM_INPUTS || t[k].stride[j] > ((uint32_t)1 << 26))
                return FL_ERR_RANGE;
            uint64_t step = (uint64_t)t[k].stride[j] * (input_values[t[k].input[j]] - 1);
            if (j < t[k].n_pre)
                top_pre += step;
            else
                top += step;
        }
        if (t[k].n_pre) {
            if (!t[k].pre) return FL_ERR_NULL;
            if (top_pre >= t[k].pre_size || t[k].n_classes < 1 ||
                t[k].class_stride > ((uint32_t)1 << 26))
                return FL_ERR_RANGE;
            for (size_t i = 0; i < t[k].pre_size; i++)
                if (t[k].pre[i] >= t[k].n_classes) return FL_ERR_RANGE;
            top += (uint64_t)(t[k].n_classes - 1) * t[k].class_stride;
        }
        if (top >= t[k].size) return FL_ERR_RANGE;
    }
    return FL_OK;
}
