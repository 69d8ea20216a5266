/* Side-wager lookup tables of the round simulator (see fl_side_table in feltlab_core.h). */
#ifndef FELTLAB_SIDE_TABLES_H
#define FELTLAB_SIDE_TABLES_H

#include "feltlab_core.h"

/* FL_OK when every reachable index of the n tables lies within them (pre scanned). */
fl_status fl_side_check_tables(const fl_side_table *t, size_t n);

/* The record inputs the n tables read (each FL_IN_N_HANDS..FL_SIM_INPUTS - 1 once) into
 * used[]; returns how many (0: no table reads the round record). */
unsigned fl_side_record_inputs_used(const fl_side_table *t, size_t n, uint8_t used[FL_SIM_INPUTS]);

/* The n_used record inputs used[] of the round record rec into in[]. */
void fl_side_record_inputs(const fl_round_record *rec, const uint8_t *used, unsigned n_used,
                           uint8_t in[FL_SIM_INPUTS]);

/* Count one round in each of n checked tables: init is the round's five initial cards
 * (FL_NO_CARD for none), rec its record and used[n_used] the record inputs the tables read
 * (n_used 0: rec unused).  (Measured: a branch-free form over FL_SIDE_MAX_INPUTS inputs
 * with zero strides was 15% slower than these short loops.) */
static inline void fl_side_lookup_round(const fl_side_table *tables, size_t n_tables,
                                        const uint8_t init[5], const fl_round_record *rec,
                                        const uint8_t *used, unsigned n_used) {
    uint8_t in[FL_SIM_INPUTS];
    for (int k = 0; k < 5; k++) in[k] = init[k] == FL_NO_CARD ? 52 : init[k];
    if (n_used) fl_side_record_inputs(rec, used, n_used, in);
    for (size_t k = 0; k < n_tables; k++) {
        const fl_side_table *t = &tables[k];
        uint32_t idx = 0, j = 0;
        if (t->n_pre) {
            for (; j < t->n_pre; j++) idx += in[t->input[j]] * t->stride[j];
            idx = t->pre[idx] * t->class_stride;
        }
        for (; j < t->n_inputs; j++) idx += in[t->input[j]] * t->stride[j];
        t->counts[t->table[idx]]++;
    }
}

#endif
