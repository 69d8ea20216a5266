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

/* The tables as the tally loop reads them (built once per run from fl_side_table): each
 * table's index is pre[dot a] * class_stride + dot b, where a dot is a sum of inputs times
 * strides; tables whose dots are the same (Perfect Pairs, Super Sevens, 21+3 and Lucky
 * Ladies all start from P1 * 53 + P2) share it, computed once for a batch of rounds
 * (fl_side_lookup_batch).  A table without a first level reads dot 0 (always 0). */
typedef struct {
    uint8_t n;
    uint8_t input[FL_SIDE_MAX_INPUTS];
    uint32_t stride[FL_SIDE_MAX_INPUTS];
} fl_side_dot;

typedef struct {
    const uint8_t *table;
    uint64_t *counts;
    const uint16_t *pre;
    uint32_t class_stride;
    uint8_t top; /* the largest outcome in the table other than FL_SIDE_NOT_OFFERED */
    uint8_t a, b;
    uint8_t n_pre, n_rest; /* the table's own inputs, when the batch keeps no dots */
    uint8_t input[FL_SIDE_MAX_INPUTS];
    uint32_t stride[FL_SIDE_MAX_INPUTS];
} fl_side_lookup;

typedef struct {
    fl_side_dot dot[2 * FL_SIDE_MAX_TABLES + 1];
    unsigned n_dots;
    fl_side_lookup lk[FL_SIDE_MAX_TABLES];
    size_t n;
} fl_side_lookups;

/* The rounds of a tally whose tables are counted a batch at a time: each round's inputs go
 * to the next row, and every FL_SIDE_BATCH rounds the batch is counted (fl_side_lookup_batch) in loops
 * over its rows whose iterations are independent, kept apart from play: in the round each
 * table was a chain of dependent loads (inputs, dot, table, count) the processor waited on,
 * through a loop over the tables and their inputs.  A row holds every input a table reads,
 * rewritten by its round. */
#define FL_SIDE_BATCH 128
/* dots kept for the batch's rows at once (shared by tables, computed once a batch); a
 * lookup set with more (over eleven tables) computes them table by table */
#define FL_SIDE_BATCH_DOTS 24
typedef struct {
    uint8_t in[FL_SIDE_BATCH][FL_SIM_INPUTS];
    size_t off[FL_SIDE_BATCH]; /* a counted run: the row's bucket's offset in the counts */
    unsigned n;
} fl_side_batch;

/* The lookup set of the n checked tables (their dots, shared where equal, and each table's
 * largest outcome), built once per run. */
void fl_side_make_lookups(const fl_side_table *t, size_t n, fl_side_lookups *L);

/* Count the batch's rows in every table of L and empty the batch (counted: each row in its
 * bucket, at offset b->off[row] of the counts). */
void fl_side_lookup_batch(const fl_side_lookups *L, fl_side_batch *b, int counted);

#endif
