/*
 * sim_int.h - the entity layer's private structures (sim.c, plugin.c).
 */
#ifndef TICKD_SIM_INT_H
#define TICKD_SIM_INT_H

#include <stdalign.h>

#include "sim.h"

/* An instance of a class: an actor, a component or a tickable.  It is the
 * target of its tick function; the class state follows the enclosing struct. */
struct tkp_obj {
    const tks_class *cls;
    tks_entity *owner;        /* the entity (itself for an actor); NULL: tickable */
    tk_tick_id tick;          /* TK_TICK_NONE if not registered                   */
    int16_t comp;             /* -1 actor, >= 0 component index, -2 tickable       */
    uint16_t flags;           /* TKS_OBJ_*                                         */
};
typedef struct tkp_obj tks_obj;

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
    size_t ord;               /* position in the sim's id-ordered list */
    tk_level_id level;
    float dilation;
    uint16_t n_comps;
    uint32_t nospec;          /* index in the sim's nospec list (TKS_OBJ_NOTICK) */
    alignas(8) unsigned char state[];
};

typedef struct tks_tickable {
    tks_obj obj;
    tk_tickable_id id;
    tks_sim *sim;             /* for the class hooks at removal */
    alignas(8) unsigned char state[];
} tks_tickable;

static inline tks_tickable *tickable_of(tks_obj *o) { return (tks_tickable *)o; }
static inline uint64_t tickable_owner(tk_tickable_id id) { return TKS_OWNER_TICKABLE | id; }

/* A registered class: the ABI descriptor plus the host's bookkeeping. */
struct tks_class {
    char name[64];            /* copy of p->name                  */
    const tkp_class *p;       /* the descriptor (built-in/plugin) */
    tk_class_id tick_cls;     /* core class of its tick functions */
    char origin[256];         /* "built-in" or the plugin path    */
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

/* Built-in classes (classes.c), registered by tks_new through the same path
 * as plugins'. */
extern const tkp_class *const tks_builtin_classes[];
extern const size_t tks_n_builtin_classes;

/* Keep a plugin library open until the sim is freed (plugin.c). */
void tks__keep_handle(tks_sim *s, void *handle);

#endif
