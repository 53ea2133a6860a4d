/*
 * sim_int.h - the entity layer's private structures, shared by sim.c and the
 * built-in classes (classes.c).
 */
#ifndef TICKD_SIM_INT_H
#define TICKD_SIM_INT_H

#include <stdalign.h>

#include "sim.h"

/* What a tick function of the sim points at: an actor, a component or a
 * tickable.  The class's state follows the enclosing struct. */
typedef struct tks_obj {
    const tks_class *cls;
    tks_entity *owner;        /* the entity (itself for an actor); NULL: tickable */
    tk_tick_id tick;          /* TK_TICK_NONE if not registered                   */
    int16_t comp;             /* -1 actor, >= 0 component index, -2 tickable       */
    uint16_t flags;           /* TKS_OBJ_*                                         */
} tks_obj;

#define TKS_OBJ_NOTICK 1u     /* on_dedicated_server false: spec kept aside */

typedef struct tks_comp {
    tks_obj obj;
    tk_tick_spec spec_kept;   /* only meaningful with TKS_OBJ_NOTICK */
    alignas(8) unsigned char state[];
} tks_comp;

struct tks_entity {
    tks_obj obj;
    tks_id id;
    tks_comp **comps;         /* n_comps components, NULL if none */
    tk_timer_handle life;     /* life span timer, 0 if none       */
    tk_level_id level;
    float dilation;
    uint16_t n_comps;
    alignas(8) unsigned char state[];
};

typedef struct tks_tickable {
    tks_obj obj;
    tk_tickable_id id;
    alignas(8) unsigned char state[];
} tks_tickable;

struct tks_class {
    char name[64];
    size_t state_size;
    const tks_prop_desc *props;
    size_t n_props;
    tk_tick_fn tick;
    tk_tick_batch_fn tick_batch;
    /* After props are set at creation (may add prerequisites). */
    int (*init)(tks_sim *s, tks_obj *o, char err[TKS_ERR_MAX]);
    /* After props were changed by entity.set_props; `old` is the previous state. */
    void (*props_changed)(tks_sim *s, tks_obj *o, const void *old);
    /* Before the object is freed. */
    void (*fini)(tks_sim *s, tks_obj *o);
    ptrdiff_t pos_offset;     /* x, y, z doubles in the state; -1 = none */
    tk_class_id tick_cls;     /* core class, set at registration          */
};

/* The state of an object. */
static inline void *tks_obj_state(tks_obj *o)
{
    if (o->comp == -1)
        return ((tks_entity *)o)->state;
    if (o->comp == -2)
        return ((tks_tickable *)o)->state;
    return ((tks_comp *)o)->state;
}

/* The sim of a world (kept as the world's user pointer). */
static inline tks_sim *tks_of_world(tk_world_t *w) { return tk_world_user(w); }

/* Built-in classes (classes.c). */
extern const tks_class tks_builtin_classes[];
extern const size_t tks_n_builtin_classes;

/* Entity by id, mutable (NULL if not alive). */
tks_entity *tks__entity(tks_sim *s, tks_id id);

/* Spawn a copy of the object's entity class/props/tick spec/level ("self"). */
int tks__spawn_self(tks_sim *s, tks_obj *o, char err[TKS_ERR_MAX]);

/* Position (x, y, z) of an entity whose class has one; false otherwise. */
bool tks__entity_pos(tks_sim *s, tks_id id, double out[3]);

/* Count a spawn a spawner could not make (for stats and a rate-limited log). */
void tks__spawn_failed(tks_sim *s, const char *why);

#endif
