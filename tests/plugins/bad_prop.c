/*
 * bad_prop.c - a test plugin that is refused: class "leaky" declares a prop
 * "far" whose field lies outside its state (offset 16 of an 8-byte state),
 * which would let the host write past the instance.
 */
#include "tickd/plugin.h"

typedef struct leaky {
    double near;           /* the only field */
} leaky;

static const tkp_prop leaky_props[] = {
    {"near", TKP_PROP_NUMBER, 0, 0, -1, 1, false},
    {"far", TKP_PROP_NUMBER, 16, 0, -1, 1, false},
};

static void leaky_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class leaky_class = {.abi = TICKD_PLUGIN_ABI,
                                      .name = "leaky",
                                      .state_size = sizeof(leaky),
                                      .props = leaky_props,
                                      .n_props = 2,
                                      .position = -1,
                                      .tick = leaky_tick};

static const tkp_class *const classes[] = {&leaky_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
