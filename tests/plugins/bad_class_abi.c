/*
 * bad_class_abi.c - a test plugin that is refused: the file declares the
 * right ABI but its class descriptor "stale" leaves `abi` at 0 (a descriptor
 * not filled in for this version).  Both versions are named.
 */
#include "tickd/plugin.h"

static void stale_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_class stale_class = {.name = "stale", .position = -1, .tick = stale_tick};

static const tkp_class *const classes[] = {&stale_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = 1;
    return classes;
}
